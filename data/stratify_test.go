package data

import (
	"encoding/json"
	"strings"
	"testing"
)

// stratFixture is documents of four sources: three English ones of 60, 30 and 10 documents and a Chinese one
// of 100, with validation keys in reverse document order inside each source, the English documents with the
// smallest tenth of the keys already held out (as ValFraction holds out the smallest keys), and one duplicate
// per source.
func stratFixture() ([]archDoc, []archGroup) {
	groups := []archGroup{{"a", "en"}, {"b", "en"}, {"c", "en"}, {"d", "zh"}}
	var docs []archDoc
	for g, n := range []int{60, 30, 10, 100} {
		for i := range n {
			docs = append(docs, archDoc{group: g, vkey: uint64(1000 - i), val: groups[g].lang == "en" && i >= n-n/10})
		}
		docs = append(docs, archDoc{group: g, vkey: 0, state: docDuplicate})
	}
	return docs, groups
}

func TestStratifyValidation(t *testing.T) {
	tests := []struct {
		name    string
		want    map[string]int
		perSrc  map[string]int // validation documents each source must end with
		wantErr string
	}{
		{"none asked: unchanged", nil, map[string]int{"a": 6, "b": 3, "c": 1, "d": 0}, ""},
		{"en=20 by document share", map[string]int{"en": 20}, map[string]int{"a": 12, "b": 6, "c": 2, "d": 0}, ""},
		{"en=1 keeps the fraction's", map[string]int{"en": 1}, map[string]int{"a": 6, "b": 3, "c": 1, "d": 0}, ""},
		{"en=25 rounds each share up", map[string]int{"en": 25}, map[string]int{"a": 15, "b": 8, "c": 3, "d": 0}, ""},
		{"both languages", map[string]int{"en": 20, "zh": 5}, map[string]int{"a": 12, "b": 6, "c": 2, "d": 5}, ""},
		{"an unknown language", map[string]int{"fr": 3}, nil, `no document is in language "fr" (the languages: en, zh)`},
		{"more than half", map[string]int{"en": 51}, nil, "more than half of the language's 100 documents"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, groups := stratFixture()
			err := stratifyValidation(docs, groups, tt.want)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, d := range docs {
				if d.val && d.state == docKept {
					got[groups[d.group].source]++
				}
				if d.state == docDuplicate && d.val {
					t.Errorf("a duplicate of source %s was held out", groups[d.group].source)
				}
			}
			for src, n := range tt.perSrc {
				if got[src] < n || (tt.want == nil && got[src] != n) {
					t.Errorf("source %s: %d validation documents, want at least %d", src, got[src], n)
				}
			}
			// Each source's n smallest keys (in this fixture its last n documents) are held out.
			for g := range groups {
				if tt.want[groups[g].lang] == 0 {
					continue
				}
				var keyed []archDoc
				for _, d := range docs {
					if d.group == g && d.state == docKept {
						keyed = append(keyed, d)
					}
				}
				for _, d := range keyed[len(keyed)-tt.perSrc[groups[g].source]:] {
					if !d.val {
						t.Errorf("source %s: key %d is among its %d smallest but not held out", groups[g].source, d.vkey, tt.perSrc[groups[g].source])
					}
				}
			}
		})
	}
}

func TestCheckValidationDocs(t *testing.T) {
	docs, groups := stratFixture()
	if err := stratifyValidation(docs, groups, map[string]int{"en": 20}); err != nil {
		t.Fatal(err)
	}
	if err := checkValidationDocs(docs, groups, map[string]int{"en": 20}); err != nil {
		t.Fatalf("after stratifying: %v", err)
	}
	for i := range docs {
		if docs[i].val && groups[docs[i].group].source == "a" {
			docs[i].state = docCapped // a cap dropped source a's validation documents
		}
	}
	err := checkValidationDocs(docs, groups, map[string]int{"en": 20})
	if err == nil || !strings.Contains(err.Error(), "the mix leaves 8") {
		t.Fatalf("err = %v, want the mix named with the 8 left", err)
	}
}

// TestPrepareArchivesValDocs builds the fixture corpus with a stratified English split: stats.json records it
// and holds at least the documents asked for; without it stats.json has no val_docs key (a build without the
// option is byte for byte the build before it).
func TestPrepareArchivesValDocs(t *testing.T) {
	_, plain := prepareFixtures(t, ArchiveOptions{}, knownFixtures...)
	b, err := json.Marshal(plain)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "val_docs") {
		t.Errorf("stats.json of a build without ValDocs names val_docs: %s", b)
	}
	_, st := prepareFixtures(t, ArchiveOptions{ValDocs: map[string]int{"en": 1}}, knownFixtures...)
	if got, before := st.ValByLang["en"].Documents, plain.ValByLang["en"].Documents; got < 1 || got < before {
		t.Errorf("en validation documents %d (before: %d), want at least 1 and no fewer", got, before)
	}
	if st.Archives.ValDocs["en"] != 1 {
		t.Errorf("stats.json archives.val_docs = %v, want en=1", st.Archives.ValDocs)
	}
	if _, err := PrepareArchives(t.TempDir(), ArchiveOptions{Inputs: fixtures(knownFixtures...), ValDocs: map[string]int{"xx": 2}}); err == nil || !strings.Contains(err.Error(), `language "xx"`) {
		t.Errorf("unknown language: err = %v", err)
	}
}
