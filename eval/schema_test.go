package eval

import (
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestForeignSchemaNamesTheLayouts: a record of a layout the kind does not read is reported with the layout
// the kind expects and the nearest known one (a Hugging Face release, or another kind's), not as bare
// "invalid JSON".
func TestForeignSchemaNamesTheLayouts(t *testing.T) {
	for _, c := range []struct {
		name, task string
		kind       Kind
		record     string
		want       []string
	}{
		{"ARC in the Hugging Face schema given as hellaswag", "hellaswag", KindHellaSwag,
			`{"id": "Mercury_7175875", "question": "Which?", "choices": {"text": ["a", "b"], "label": ["A", "B"]}, "answerKey": "B"}`,
			[]string{"kind hellaswag reads", "the layout of Hugging Face allenai/ai2_arc (is the task's name right?)"}},
		{"ARC in the Hugging Face schema with an answer key of no label", "arc_easy", KindMultipleChoice,
			`{"id": "Mercury_7175875", "question": "Which?", "choices": {"text": ["a", "b"], "label": ["A", "B"]}, "answerKey": "C"}`,
			[]string{`"answerKey" "C" is none of the labels ["A" "B"]`}},
		{"PIQA in the Hugging Face schema", "piqa", KindMultipleChoice, `{"goal": "g", "sol1": "a", "sol2": "b", "label": 0}`,
			[]string{"Hugging Face piqa", "[sol1, sol2]"}},
		{"a GSM8K file given as hellaswag", "hellaswag", KindHellaSwag, `{"question": "q", "answer": "a #### 1"}`,
			[]string{"kind hellaswag reads", "the layout of kind gsm8k (is the task's name right?)"}},
		{"WinoGrande in the Hugging Face schema", "winogrande", KindWinoGrande,
			`{"sentence": "A _ b", "option1": "x", "option2": "y", "answer": "1"}`,
			[]string{"kind winogrande reads {context_options, continuation, gold}", "Hugging Face winogrande"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := writeFile(t, "f.jsonl", c.record+"\n")
			_, err := RunTask(context.Background(), TaskSpec{Name: c.task, Kind: c.kind, File: file}, &fakeBackend{}, Options{})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append(c.want, file+":1:") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
	// A record with the kind's keys, or of another layout the kind reads, gets its own problem only.
	for k, rec := range map[Kind]string{
		KindMultipleChoice: `{"id": "x", "question": "q", "choices": {"text": ["a"], "label": ["A"]}, "answerKey": "A"}`,
		KindLambada:        `{"text": "oneword"}`,
	} {
		if h := schemaHint(k, []byte(rec)); h != "" {
			t.Errorf("hint for a layout kind %s reads: %q", k, h)
		}
	}
	if h := schemaHint(KindMultipleChoice, []byte(`{"query": "q", "choices": ["a"], "gold": 0}`)); h != "" {
		t.Errorf("hint for the kind's own layout: %q", h)
	}
}

// TestCompressedFileGetsAHint: a gzip or bzip2 record file (or a directory of compressed CSVs) is refused with
// the format and the command that decompresses it, instead of one long malformed record.
func TestCompressedFileGetsAHint(t *testing.T) {
	dir := t.TempDir()
	gz := filepath.Join(dir, "hellaswag.jsonl.gz")
	f, err := os.Create(gz)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	zw.Write([]byte(`{"ctx": "c", "activity_label": "a", "endings": ["x", "y"], "label": 0}` + "\n"))
	zw.Close()
	f.Close()
	bz := filepath.Join(dir, "hellaswag.jsonl.bz2")
	os.WriteFile(bz, []byte("BZh91AY&SY\x00\x01"), 0o644)
	csvs := filepath.Join(dir, "test")
	os.Mkdir(csvs, 0o755)
	os.WriteFile(filepath.Join(csvs, "agronomy.csv.bz2"), []byte("BZh91AY&SY"), 0o644)
	for _, c := range []struct {
		kind Kind
		file string
		want string
	}{
		{KindHellaSwag, gz, "is gzip-compressed: decompress it first (gunzip -k " + gz},
		{KindHellaSwag, bz, "is bzip2-compressed: decompress it first (bunzip2 -k " + bz},
		{KindCMMLU, csvs, "has no .csv files (it has agronomy.csv.bz2, bzip2-compressed"},
	} {
		_, err := RunTask(context.Background(), TaskSpec{Name: string(c.kind), Kind: c.kind, File: c.file}, &fakeBackend{}, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.file, err, c.want)
		}
	}
}

// TestCMMLUSubjectsReportedByName: a subject file the kind does not know is scored and named as unknown; the
// kind's subjects with no records in a directory are named as missing; a few-shot directory without the
// record's subject names the file it looked for.
func TestCMMLUSubjectsReportedByName(t *testing.T) {
	dir := t.TempDir()
	row := ",Question,A,B,C,D,Answer\n0,问题,甲,乙,丙,丁,A\n"
	for _, s := range []string{"agronomy", "astrology"} {
		if err := os.WriteFile(filepath.Join(dir, s+".csv"), []byte(row), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := RunTask(context.Background(), TaskSpec{Name: "cmmlu", Kind: KindCMMLU, File: dir}, &fakeBackend{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Subjects
	if c == nil || c.Scored != 2 || c.Known != 67 || strings.Join(c.Unknown, ",") != "astrology" || len(c.Missing) != 66 ||
		c.Missing[0] != "anatomy" {
		t.Fatalf("subjects %+v", c)
	}
	var b strings.Builder
	res.WriteText(&b)
	for _, w := range []string{"2 records from 2 of the 67 subjects", "no records of 66 subjects: anatomy, ancient_chinese",
		"subjects cmmlu does not know (scored, described by their file names): astrology"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("text lacks %q:\n%s", w, b.String())
		}
	}
	// Few-shot examples from testdata/cmmlu/dev, which has agronomy and world_history but no astrology.
	spec := TaskSpec{Name: "cmmlu", Kind: KindCMMLU, File: dir, Fewshot: filepath.Join("testdata", "cmmlu", "dev")}
	_, err = RunTask(context.Background(), spec, &fakeBackend{}, Options{Shots: 2})
	want := "no few-shot file " + filepath.Join("testdata", "cmmlu", "dev", "astrology.csv") + ` for subject "astrology"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("few-shot error %v, want %q", err, want)
	}
}
