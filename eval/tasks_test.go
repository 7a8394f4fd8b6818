package eval

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sampleFiles maps every benchmark sample in testdata (a file, or a directory of per-subject CSV files) to its
// task name and record count.
var sampleFiles = []struct {
	file, task string
	records    int
}{
	{"arc_challenge_test_first20.jsonl", "arc_challenge", 20},
	{"arc_easy_test_first20.jsonl", "arc_easy", 20},
	{"cmath_dev_first20.jsonl", "cmath", 20},
	{"gsm8k_train_sample20.jsonl", "gsm8k", 20},
	{"hellaswag_val_first20.jsonl", "hellaswag", 20},
	{"lambada_openai_test_first20.jsonl", "lambada_openai", 20},
	{"lambada_openai_test_first20_text.jsonl", "lambada_openai", 20},
	{"arc_challenge_test_first20_hf.jsonl", "arc_challenge", 20},
	{"math_test_not500_sample20.jsonl", "math", 20},
	{"mgsm_en_first5.tsv", "mgsm_en", 5},
	{"mgsm_zh_first5.tsv", "mgsm_zh", 5},
	{"piqa_val_first20.jsonl", "piqa", 20},
	{"winogrande_dev_first20.jsonl", "winogrande", 20},
	{"cmmlu/test", "cmmlu", 6},
	{"cmmlu/dev", "cmmlu", 6},
	{"ceval/val", "ceval", 3},
	{"ceval/dev", "ceval", 3},
}

// sampleDocs reads every record of testdata's file as task (of kind), strictly: a malformed record fails t.
func sampleDocs(t *testing.T, task string, kind Kind, file string) []doc {
	t.Helper()
	src, err := openRecords(filepath.Join("testdata", file), kindSpecs[kind], false)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	r := &runner{spec: TaskSpec{Name: task}, ks: kindSpecs[kind], o: Options{StrictRecords: true}}
	var docs []doc
	for {
		d, ok, err := r.nextDoc(src)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return docs
		}
		docs = append(docs, d)
	}
}

// TestTaskSamplesParse: every sample file in testdata is listed above, and every line of it parses as its
// kind, with the golds the files were published with.
func TestTaskSamplesParse(t *testing.T) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{"ceval": true} // ceval/test has no answers: TestTaskCEvalTestSplitRefused
	for _, s := range sampleFiles {
		listed[strings.Split(s.file, "/")[0]] = true
	}
	for _, e := range entries {
		if e.Name() != "SOURCES.md" && !listed[e.Name()] {
			t.Errorf("testdata/%s is not in sampleFiles", e.Name())
		}
	}
	for _, s := range sampleFiles {
		t.Run(s.task, func(t *testing.T) {
			kind, err := KindOf(s.task)
			if err != nil {
				t.Fatal(err)
			}
			docs := sampleDocs(t, s.task, kind, s.file)
			if len(docs) != s.records {
				t.Fatalf("%d records, want %d", len(docs), s.records)
			}
			switch s.task {
			case "gsm8k":
				var golds []string
				for _, d := range docs {
					golds = append(golds, d.answer)
				}
				want := "72 10 5 42 624 35 48 16 41 990 121 5 85 35 5 448000 800 43 16 16"
				if g := strings.Join(golds, " "); g != want {
					t.Errorf("golds %s, want %s", g, want)
				}
			case "hellaswag":
				if q := docs[0].contexts[0]; q != "Roof shingle removal: A man is sitting on a roof. he" {
					t.Errorf("first query %q", q)
				}
				if docs[0].gold != 3 || docs[0].conts[3] != " starts pulling up roofing on a roof." {
					t.Errorf("first record gold %d, continuation %q", docs[0].gold, docs[0].conts[3])
				}
			case "math":
				if docs[2].answer != `\dfrac{9}{7}` {
					t.Errorf("third answer %q", docs[2].answer)
				}
				if b, _ := LastBoxed(docs[17].target); !MathEqual(b, docs[17].answer) {
					t.Errorf("record 18: boxed %q does not match the answer %q", b, docs[17].answer)
				}
			case "mgsm_en", "mgsm_zh":
				if docs[2].answer != "70000" {
					t.Errorf("third answer %q", docs[2].answer)
				}
			case "winogrande":
				if docs[0].contexts[1] != "Sarah was a much better surgeon than Maria so Maria" || docs[0].conts[0] != " always got the easier cases." {
					t.Errorf("first record %+v", docs[0])
				}
			case "piqa":
				if docs[1].contexts[0] != "Question: dresser\nAnswer:" {
					t.Errorf("second context %q", docs[1].contexts[0])
				}
			case "cmmlu", "ceval":
				var golds, subjects string
				for _, d := range docs {
					golds += string(rune('A' + d.gold))
					subjects += d.subject[:1]
				}
				want := map[string][2]string{"cmmlu/test": {"CABCCC", "aaaaww"}, "cmmlu/dev": {"CAABAA", "aaawww"},
					"ceval/val": {"BCC", "ccc"}, "ceval/dev": {"BCB", "ccc"}}[s.file]
				if golds != want[0] || subjects != want[1] {
					t.Errorf("golds %s, subjects %s; want %s, %s", golds, subjects, want[0], want[1])
				}
			}
		})
	}
}

// TestTaskReleasedLayoutsReadAsTheHarnessLayouts: Hugging Face allenai/ai2_arc's records and
// lm-evaluation-harness's lambada_openai {"text"} records (testdata's conversions of the harness-layout samples)
// give the same contexts, continuations and golds as the samples they were converted from.
func TestTaskReleasedLayoutsReadAsTheHarnessLayouts(t *testing.T) {
	for _, c := range []struct {
		kind           Kind
		harness, other string
	}{
		{KindMultipleChoice, "arc_challenge_test_first20.jsonl", "arc_challenge_test_first20_hf.jsonl"},
		{KindLambada, "lambada_openai_test_first20.jsonl", "lambada_openai_test_first20_text.jsonl"},
	} {
		t.Run(c.other, func(t *testing.T) {
			want, got := sampleDocs(t, string(c.kind), c.kind, c.harness), sampleDocs(t, string(c.kind), c.kind, c.other)
			if len(got) != len(want) || len(got) != 20 {
				t.Fatalf("%d records, want %d (20)", len(got), len(want))
			}
			for i := range want {
				w, g := want[i], got[i]
				if !slices.Equal(g.contexts, w.contexts) || !slices.Equal(g.conts, w.conts) || !slices.Equal(g.choices, w.choices) || g.gold != w.gold || g.shot != w.shot {
					t.Errorf("record %d: %+v\nwant %+v", i+1, g, w)
				}
			}
		})
	}
	for _, c := range []struct {
		kind         Kind
		record, want string
	}{
		{KindLambada, `{"text": "word"}`, `"text" has no space`},
		{KindMultipleChoice, `{"question": "q", "choices": ["a", "b"], "answerKey": "A"}`, `want {"text": [...], "label": [...]}`},
		{KindMultipleChoice, `{"question": "q", "choices": {"text": ["a", "b"], "label": ["A"]}, "answerKey": "A"}`, "2 texts and 1 labels"},
	} {
		if _, err := kindSpecs[c.kind].parse([]byte(c.record)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.record, err, c.want)
		}
	}
}

// TestTaskKindOf checks how task names map to kinds.
func TestTaskKindOf(t *testing.T) {
	for name, want := range map[string]Kind{
		"hellaswag": KindHellaSwag, "arc_easy": KindMultipleChoice, "arc_challenge": KindMultipleChoice, "piqa": KindMultipleChoice,
		"winogrande": KindWinoGrande, "lambada_openai": KindLambada, "gsm8k": KindGSM8K, "math": KindMATH,
		"mgsm_zh": KindMGSM, "cmath": KindCMATH, "probe-test": KindProbe, "lm": KindLM, "wiki:lm": KindLM, "mine:arc": KindMultipleChoice,
		// the names lm-evaluation-harness and the releases use
		"math500": KindMATH, "MATH500": KindMATH, "minerva_math500": KindMATH, "hendrycks_math": KindMATH,
		"mgsm_en": KindMGSM, "mgsm_direct_zh": KindMGSM, "ai2_arc": KindMultipleChoice, "lambada_standard": KindLambada,
		"gsm8k_cot": KindGSM8K, "cmmlu": KindCMMLU, "cmmlu_agronomy": KindCMMLU, "ceval": KindCEval,
		"ceval-valid": KindCEval, "ceval-valid_accountant": KindCEval, "c-eval": KindCEval, "mine:cmmlu": KindCMMLU,
	} {
		if got, err := KindOf(name); err != nil || got != want {
			t.Errorf("KindOf(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	for _, bad := range []string{"mmlu", "x:nope", ":lm"} {
		if _, err := KindOf(bad); err == nil {
			t.Errorf("KindOf(%q): no error", bad)
		}
	}
	s, err := ParseTaskArg("wiki:lm=/data/a=b.txt")
	if err != nil || s.Name != "wiki" || s.Kind != KindLM || s.File != "/data/a=b.txt" {
		t.Errorf("ParseTaskArg: %+v, %v", s, err)
	}
	if _, err := ParseTaskArg("gsm8k"); err == nil {
		t.Error("ParseTaskArg without a file: no error")
	}
}

// TestTaskHellaSwagPreprocess checks the harness's preprocessing of WikiHow artefacts.
func TestTaskHellaSwagPreprocess(t *testing.T) {
	for in, want := range map[string]string{
		" How to clean a roof [title] Get a ladder. [step] Climb it.  ": "How to clean a roof. Get a ladder. Climb it.",
		"plain":        "plain",
		"a [header] b": "a b",
	} {
		if got := hellaswagPreprocess(in); got != want {
			t.Errorf("preprocess(%q) = %q, want %q", in, got, want)
		}
	}
	// The harness builds the context from ctx_a and ctx_b whenever a record has them, as the released files do
	// beside ctx; a record with ctx alone is taken as it is.
	for _, tc := range []struct{ record, want string }{
		{`{"activity_label":"Roof","ctx_a":"A man climbs.","ctx_b":"he WAVES","endings":["a","b"],"label":"1"}`, "Roof: A man climbs. He waves"},
		{`{"activity_label":"Roof","ctx":"A man climbs. he WAVES","ctx_a":"A man climbs.","ctx_b":"he WAVES","endings":["a","b"],"label":"1"}`, "Roof: A man climbs. He waves"},
		{`{"activity_label":"Roof","ctx":"A man climbs. he waves","endings":["a","b"],"label":"1"}`, "Roof: A man climbs. he waves"},
	} {
		d, err := parseHellaSwag([]byte(tc.record))
		if err != nil || d.contexts[0] != tc.want || d.gold != 1 {
			t.Errorf("%s: context %q, %v; want %q", tc.record, d.contexts, err, tc.want)
		}
	}
}

// fakeBackend scores continuations from a table and completes prompts with a function, recording what it was
// asked.
type fakeBackend struct {
	ll   map[string][2]float64 // continuation -> (log-likelihood, tokens)
	gen  func(prompt string) string
	reqs []Request
	gens []GenRequest
}

func (f *fakeBackend) Score(reqs []Request) ([]Score, error) {
	f.reqs = append(f.reqs, reqs...)
	out := make([]Score, len(reqs))
	for i, r := range reqs {
		v, ok := f.ll[r.Continuation]
		if !ok {
			v = [2]float64{-1, 1}
		}
		out[i] = Score{LogProb: v[0], Tokens: int(v[1]), Greedy: v[0] > -1.5}
	}
	return out, nil
}

func (f *fakeBackend) Generate(reqs []GenRequest) ([]Completion, error) {
	f.gens = append(f.gens, reqs...)
	out := make([]Completion, len(reqs))
	for i, r := range reqs {
		out[i].Text = f.gen(r.Prompt)
	}
	return out, nil
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func checkMetric(t *testing.T, ms Metrics, name string, value, se float64) {
	t.Helper()
	m, ok := ms.Get(name)
	if !ok {
		t.Errorf("no metric %s", name)
		return
	}
	if !near(m.Value, value) || (!math.IsNaN(se) && !near(m.StdErr, se)) {
		t.Errorf("%s = %v ± %v, want %v ± %v", name, m.Value, m.StdErr, value, se)
	}
}

// TestTaskMultipleChoiceHandComputed: with log-likelihoods built to prefer known choices, acc and
// acc_norm_bytes differ where the choices' lengths differ, and the smooth metrics are as computed by hand.
func TestTaskMultipleChoiceHandComputed(t *testing.T) {
	file := writeFile(t, "mc.jsonl", `{"query": "Question: Q1", "choices": ["a", "bbbb"], "gold": 1}
{"query": "Question: Q2", "choices": ["cc", "d"], "gold": 0}
`)
	be := &fakeBackend{ll: map[string][2]float64{
		" a": {-2, 1}, " bbbb": {-4, 4}, // acc picks a (wrong); per byte −2 < −1 picks bbbb (right)
		" cc": {-1, 2}, " d": {-3, 1}, // both pick cc (right)
	}}
	res, err := RunTask(context.Background(), TaskSpec{Name: "arc", Kind: KindMultipleChoice, File: file}, be, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Docs != 2 || len(be.reqs) != 4 || be.reqs[0].Context != "Question: Q1\nAnswer:" {
		t.Fatalf("docs %d, requests %+v", res.Docs, be.reqs)
	}
	checkMetric(t, res.Metrics, "acc", 0.5, math.Sqrt(0.25/2))
	checkMetric(t, res.Metrics, "acc_norm_bytes", 1, 0)
	checkMetric(t, res.Metrics, "chance", 0.5, math.NaN())
	// gold losses per token 4/4 = 1 and 1/2: mean 0.75, SE = sd/√2 = 0.25.
	checkMetric(t, res.Metrics, "gold_loss_per_token", 0.75, 0.25)
	// margins −4 − (−2) = −2 and −1 − (−3) = 2: mean 0, SE 2.
	checkMetric(t, res.Metrics, "ll_margin", 0, 2)
}

// TestTaskWinoGrandeAndLambada: WinoGrande scores the shared continuation under each context; LAMBADA uses
// greedy accuracy and the continuation's loss.
func TestTaskWinoGrandeAndLambada(t *testing.T) {
	wino := writeFile(t, "w.jsonl", `{"context_options": ["A so A", "A so B"], "continuation": "won.", "gold": 1}`+"\n")
	be := &fakeBackend{}
	res, err := RunTask(context.Background(), TaskSpec{Name: "winogrande", Kind: KindWinoGrande, File: wino}, be, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(be.reqs) != 2 || be.reqs[1].Context != "A so B" || be.reqs[1].Continuation != " won." {
		t.Errorf("requests %+v", be.reqs)
	}
	checkMetric(t, res.Metrics, "acc", 0, 0) // equal scores: the first context wins, gold is the second
	lam := writeFile(t, "l.jsonl", `{"context": "the cat sat on the", "continuation": "mat"}
{"context": "a dog", "continuation": "barks"}
`)
	be = &fakeBackend{ll: map[string][2]float64{" mat": {-1, 1}, " barks": {-3, 2}}}
	res, err = RunTask(context.Background(), TaskSpec{Name: "lambada", Kind: KindLambada, File: lam}, be, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkMetric(t, res.Metrics, "acc", 0.5, math.Sqrt(0.125))
	checkMetric(t, res.Metrics, "loss", 2, 1)
	checkMetric(t, res.Metrics, "perplexity", math.Exp(2), math.NaN())
	checkMetric(t, res.Metrics, "gold_loss_per_token", 1.25, 0.25)
}

// TestTaskGSM8KFewshot: generative scoring with strict and flexible extraction, few-shot prompts that never
// show a record its own answer, and the teacher-forced gold loss.
func TestTaskGSM8KFewshot(t *testing.T) {
	file := writeFile(t, "g.jsonl", `{"question": "1+1?", "answer": "1+1=2\n#### 2"}
{"question": "2+3?", "answer": "#### 5"}
{"question": "big?", "answer": "#### 1,000"}
`)
	outs := map[string]string{"1+1?": " 1+1=2\n#### 2", "2+3?": " It is 5.", "big?": " #### 999"}
	be := &fakeBackend{gen: func(p string) string {
		i := strings.LastIndex(p, "Question: ")
		q, _, _ := strings.Cut(p[i+len("Question: "):], "\n")
		return outs[q]
	}}
	res, err := RunTask(context.Background(), TaskSpec{Name: "gsm8k", Kind: KindGSM8K, File: file, Fewshot: file}, be, Options{Shots: 1, MaxNewTokens: 7})
	if err != nil {
		t.Fatal(err)
	}
	checkMetric(t, res.Metrics, "exact_match_strict", 1.0/3, math.Sqrt(2.0/27))
	checkMetric(t, res.Metrics, "exact_match_flexible", 2.0/3, math.Sqrt(2.0/27))
	wantFirst := "Question: 2+3?\nAnswer: #### 5\n\nQuestion: 1+1?\nAnswer:"
	if be.gens[0].Prompt != wantFirst || be.gens[0].MaxTokens != 7 || be.gens[0].Stop[0] != "Question:" {
		t.Errorf("first prompt %q (max %d, stop %q), want %q", be.gens[0].Prompt, be.gens[0].MaxTokens, be.gens[0].Stop, wantFirst)
	}
	if !strings.HasPrefix(be.gens[1].Prompt, "Question: 1+1?") {
		t.Errorf("second prompt %q: want the first record as its shot", be.gens[1].Prompt)
	}
	if be.reqs[0].Continuation != " 1+1=2\n#### 2" {
		t.Errorf("gold scoring request %+v", be.reqs[0])
	}
	if res.Shots != 1 || len(res.Examples) != 3 || !res.Examples[0].Correct || res.Examples[2].Correct {
		t.Errorf("shots %d, examples %+v", res.Shots, res.Examples)
	}
}

// TestTaskProbeClasses: probe accuracies are reported overall, per class and per kind, and the generation
// budget follows the answer's length.
func TestTaskProbeClasses(t *testing.T) {
	file := writeFile(t, "p.jsonl", `{"prompt": "add: 1 + 2 =", "answer": "3", "kind": "add"}
{"prompt": "add: 2 + 2 =", "answer": "4", "kind": "add"}
{"prompt": "add~: 1 + 2 =", "answer": "7", "kind": "add_mem"}
{"prompt": "rev: a b =", "answer": "b a", "kind": "reverse"}
`)
	outs := map[string]string{"add: 1 + 2 =": " 3", "add: 2 + 2 =": " 5", "add~: 1 + 2 =": " 7 ", "rev: a b =": " b a"}
	be := &fakeBackend{gen: func(p string) string { return outs[p] }}
	res, err := RunTask(context.Background(), TaskSpec{Name: "probe", Kind: KindProbe, File: file}, be, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkMetric(t, res.Metrics, "acc", 0.75, math.Sqrt(0.75*0.25/4))
	checkMetric(t, res.Metrics, "acc_reasoning", 2.0/3, math.Sqrt(2.0/27))
	checkMetric(t, res.Metrics, "acc_memorisation", 1, 0)
	checkMetric(t, res.Metrics, "acc_add", 0.5, math.Sqrt(0.125))
	checkMetric(t, res.Metrics, "acc_reverse", 1, 0)
	if be.gens[3].MaxTokens != len("b a")+3 || be.gens[3].Stop[0] != "\n" {
		t.Errorf("probe generation request %+v", be.gens[3])
	}
}

// TestTaskMalformedRecords: malformed records are reported with file and line and skipped and counted, or fatal
// with StrictRecords; --limit counts valid records only.
func TestTaskMalformedRecords(t *testing.T) {
	file := writeFile(t, "bad.jsonl", `{"query": "q", "choices": ["a", "b"], "gold": 0}
{"query": "q", "choices": ["a", "b"], "gold": 0
{"query": "q", "choices": ["a", "b"]}

{"query": "q", "choices": ["a", "b"], "gold": 2}
{"query": "q", "choices": ["a", "b"], "gold": 1}
{"query": "q", "choices": ["a", "b"], "gold": 1}
`)
	var reported []string
	o := Options{Malformed: func(e *RecordError) { reported = append(reported, e.Error()) }}
	res, err := RunTask(context.Background(), TaskSpec{Name: "arc", Kind: KindMultipleChoice, File: file}, &fakeBackend{}, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Docs != 3 || res.Skipped != 3 || len(res.Malformed) != 3 || len(reported) != 3 {
		t.Fatalf("docs %d, skipped %d, listed %v, reported %v", res.Docs, res.Skipped, res.Malformed, reported)
	}
	for i, line := range []int{2, 3, 5} {
		if res.Malformed[i].Line != line || res.Malformed[i].File != file || !strings.HasPrefix(reported[i], file+":"+strconv.Itoa(line)+": ") {
			t.Errorf("malformed %d: %+v, %q; want line %d", i, res.Malformed[i], reported[i], line)
		}
	}
	if !strings.Contains(reported[1], `missing "gold"`) || !strings.Contains(reported[2], "outside [0, 2)") {
		t.Errorf("messages %q", reported)
	}
	o.Limit = 2
	if res, err = RunTask(context.Background(), TaskSpec{Name: "arc", Kind: KindMultipleChoice, File: file}, &fakeBackend{}, o); err != nil || res.Docs != 2 {
		t.Errorf("limit 2: %v docs, %v", res.Docs, err)
	}
	o.StrictRecords = true
	_, err = RunTask(context.Background(), TaskSpec{Name: "arc", Kind: KindMultipleChoice, File: file}, &fakeBackend{}, o)
	var re *RecordError
	if !errors.As(err, &re) || re.Line != 2 || !strings.Contains(err.Error(), file+":2:") {
		t.Errorf("strict: %v", err)
	}
	empty := writeFile(t, "empty.jsonl", "\n\n")
	if _, err := RunTask(context.Background(), TaskSpec{Name: "arc", Kind: KindMultipleChoice, File: empty}, &fakeBackend{}, Options{}); err == nil {
		t.Error("a file without records: no error")
	}
}

// TestEmptyChoiceIsMalformed: a multiple-choice record with an empty (or blank) choice is refused, since an
// empty continuation has log-likelihood 0 and always wins; before, HellaSwag endings ["", ""] scored.
func TestEmptyChoiceIsMalformed(t *testing.T) {
	for name, line := range map[string]string{
		"empty":  `{"activity_label": "a", "ctx_a": "b", "ctx_b": "c", "ctx": "b c", "endings": ["", ""], "label": 0}`,
		"blank":  `{"activity_label": "a", "ctx_a": "b", "ctx_b": "c", "ctx": "b c", "endings": ["x", "  "], "label": 0}`,
		"filled": `{"activity_label": "a", "ctx_a": "b", "ctx_b": "c", "ctx": "b c", "endings": ["x", "y"], "label": 0}`,
	} {
		d, err := parseHellaSwag([]byte(line))
		if err == nil {
			err = d.check()
		}
		if (err == nil) != (name == "filled") || err != nil && !strings.Contains(err.Error(), "is empty") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
