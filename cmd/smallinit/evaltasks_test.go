package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/model/modeltest"
	"github.com/smallinit/smallinit/tokenizer"
)

// evalSamples is the directory of the benchmark samples (with their SOURCES.md licence notice).
const evalSamples = "../../eval/testdata"

// writeTinyModel writes a randomly initialised two-layer model with a 64-token context and, unless noTok, a
// tokenizer trained on a few sentences beside it; it returns the model directory.
func writeTinyModel(t *testing.T, noTok bool) string {
	t.Helper()
	tok, err := tokenizer.Train([]string{
		"Question: Natalia sold 48 clips in April and half as many in May. How many clips did she sell? Answer: 72",
		"A man is sitting on a roof. He starts pulling up roofing on a roof.",
		"add: 4 8 2 + 9 3 7 = 1 4 1 9\nrev: a b c = c b a\n",
		"Problem: What is $1+1$?\nSolution: It is $\\boxed{2}$.",
		"芳芳买了一本书有99页，看了90页，她还剩多少页没有看？",
	}, 300)
	if err != nil {
		t.Fatal(err)
	}
	c := arch.Config{Vocab: tok.VocabSize(), Dim: 32, FFN: 64, Layers: 2, Heads: 2, SeqLen: 64, NormEps: 1e-5,
		Norm: arch.NormRMS, AttnGate: arch.GateNone, RopeTheta: 10000, FFNKind: arch.FFNDense}
	pool := kernel.NewPool(1)
	defer pool.Close()
	m, err := model.New(c, 1, pool)
	if err != nil {
		t.Fatal(err)
	}
	modeltest.Fill(m, 1)
	dir := filepath.Join(t.TempDir(), "model")
	if err := m.Save(dir, nil); err != nil {
		t.Fatal(err)
	}
	if !noTok {
		if err := tok.Save(filepath.Join(dir, "tokenizer.json")); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestEvalTasksEndToEnd runs eval-tasks on every benchmark sample, a text file for lm, and GSM8K with few-shot
// examples, on a tiny random model: every metric is finite and the JSON report holds every task.
func TestEvalTasksEndToEnd(t *testing.T) {
	dir := writeTinyModel(t, false)
	s := func(f string) string { return filepath.Join(evalSamples, f) }
	text := filepath.Join(t.TempDir(), "held-out.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("The quick brown fox jumps over the lazy dog.\n", 40)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := &evalTasksCmd{Model: dir, Batch: 4, Shots: 2, Limit: 6, MaxNewTokens: 12, JSON: true, Task: []string{
		"hellaswag=" + s("hellaswag_val_first20.jsonl"), "arc_easy=" + s("arc_easy_test_first20.jsonl"),
		"arc_challenge=" + s("arc_challenge_test_first20.jsonl"), "piqa=" + s("piqa_val_first20.jsonl"),
		"winogrande=" + s("winogrande_dev_first20.jsonl"), "lambada_openai=" + s("lambada_openai_test_first20.jsonl"),
		"gsm8k=" + s("gsm8k_train_sample20.jsonl"), "math=" + s("math_test_not500_sample20.jsonl"),
		"mgsm_en=" + s("mgsm_en_first5.tsv"), "mgsm_zh=" + s("mgsm_zh_first5.tsv"), "cmath=" + s("cmath_dev_first20.jsonl"),
		"wiki:lm=" + text, "arc_challenge_hf=" + s("arc_challenge_test_first20_hf.jsonl"),
		"lambada_text=" + s("lambada_openai_test_first20_text.jsonl"),
	}, Fewshot: []string{"gsm8k=" + s("gsm8k_train_sample20.jsonl")}}
	var out, log bytes.Buffer
	rep, err := cmd.run(context.Background(), &out, &log, false)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	var js struct {
		Tasks []struct {
			Task    string `json:"task"`
			Docs    int    `json:"docs"`
			Shots   int    `json:"shots"`
			Metrics map[string]struct {
				Value  *float64 `json:"value"`
				StdErr *float64 `json:"stderr"`
			} `json:"metrics"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(out.Bytes(), &js); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, out.String())
	}
	if len(js.Tasks) != len(cmd.Task) || len(rep.Tasks) != len(cmd.Task) {
		t.Fatalf("%d tasks in the report, want %d", len(js.Tasks), len(cmd.Task))
	}
	want := map[string][]string{
		"hellaswag": {"acc", "acc_norm_bytes", "gold_loss_per_token", "ll_margin"}, "winogrande": {"acc", "ll_margin"},
		"lambada_openai": {"acc", "loss", "gold_loss_per_token"}, "gsm8k": {"exact_match_strict", "exact_match_flexible", "gold_loss_per_token"},
		"math": {"exact_match", "boxed_rate"}, "mgsm_zh": {"exact_match_flexible"}, "cmath": {"exact_match_strict"},
		"wiki": {"loss", "bits_per_byte"},
	}
	for _, task := range js.Tasks {
		wantDocs := 6 // --limit
		if strings.HasPrefix(task.Task, "mgsm") {
			wantDocs = 5 // the whole file
		}
		if task.Task != "wiki" && task.Docs != wantDocs {
			t.Errorf("%s: %d records scored", task.Task, task.Docs)
		}
		for name, m := range task.Metrics {
			if m.Value == nil || math.IsNaN(*m.Value) || math.IsInf(*m.Value, 0) {
				t.Errorf("%s: %s is not finite", task.Task, name)
			}
		}
		for _, name := range want[task.Task] {
			m, ok := task.Metrics[name]
			if !ok || m.StdErr == nil {
				t.Errorf("%s: no %s with a standard error in %v", task.Task, name, task.Metrics)
			}
		}
		if loss, ok := task.Metrics["gold_loss_per_token"]; ok && (*loss.Value <= 0 || *loss.Value > 20) {
			t.Errorf("%s: gold loss per token %v for a random model", task.Task, *loss.Value)
		}
	}
	if js.Tasks[6].Shots != 2 {
		t.Errorf("gsm8k: %d shots", js.Tasks[6].Shots)
	}
	// Hugging Face ARC and the harness's lambada_openai {"text"} score as the samples they were converted from.
	byName := map[string]int{}
	for i, task := range js.Tasks {
		byName[task.Task] = i
	}
	for same, as := range map[string]string{"arc_challenge_hf": "arc_challenge", "lambada_text": "lambada_openai"} {
		a, b := js.Tasks[byName[same]].Metrics, js.Tasks[byName[as]].Metrics
		if len(a) == 0 || len(a) != len(b) {
			t.Errorf("%s: metrics %v, %s: %v", same, a, as, b)
		}
		for name, m := range a {
			if o, ok := b[name]; !ok || *o.Value != *m.Value {
				t.Errorf("%s: %s = %v, %s's %v", same, name, *m.Value, as, o.Value)
			}
		}
	}
	// The text summary names every metric.
	cmd.JSON = false
	out.Reset()
	if _, err := cmd.run(context.Background(), &out, io.Discard, false); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"hellaswag (hellaswag,", "acc_norm_bytes", "bits_per_byte", "exact_match_flexible", "±"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("summary lacks %q:\n%s", w, out.String())
		}
	}
	// The table across tasks closes the text: one line per task, its headline metric and its spread.
	_, table, ok := strings.Cut(out.String(), fmt.Sprintf("summary of %d tasks", len(cmd.Task)))
	if !ok {
		t.Fatalf("no summary table across tasks:\n%s", out.String())
	}
	for _, task := range rep.Tasks {
		m := task.Metrics[0]
		line := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(task.Task) + ` +` + string(task.Kind) + ` +` + fmt.Sprint(task.Docs) + ` +` + m.Name + ` +` + fmt.Sprintf("%.4f", m.Value) + ` +[[±]`)
		if !line.MatchString(table) {
			t.Errorf("summary table has no line for %s (%s %.4f):\n%s", task.Task, m.Name, m.Value, table)
		}
	}
}

// TestEvalTasksPrefixEOT: --prefix-eot scores every context after <|endoftext|>: the report says so and the
// gold loss moves (a random model gives a different distribution after a different first token).
func TestEvalTasksPrefixEOT(t *testing.T) {
	dir := writeTinyModel(t, false)
	// Short prompts, so that no context is cut to the 64-token window (which would cut the prefix too).
	probes := filepath.Join(t.TempDir(), "probes.jsonl")
	if err := os.WriteFile(probes, []byte(`{"prompt":"add: 4 + 5 =","answer":"9","kind":"add"}
{"prompt":"add: 1 2 + 3 =","answer":"1 5","kind":"add"}
{"prompt":"rev: a b c =","answer":"c b a","kind":"reverse"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	loss := func(prefix bool) (float64, bool) {
		cmd := &evalTasksCmd{Model: dir, Batch: 4, MaxNewTokens: 8, PrefixEOT: prefix, Task: []string{"probe=" + probes}}
		rep, err := cmd.run(context.Background(), io.Discard, io.Discard, false)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := rep.Tasks[0].Metrics.Get("gold_loss_per_token")
		if !ok {
			t.Fatal("no gold_loss_per_token")
		}
		return m.Value, rep.PrefixEOT
	}
	plain, p0 := loss(false)
	after, p1 := loss(true)
	if p0 || !p1 {
		t.Errorf("report's prefix_eot: %v without the flag, %v with it", p0, p1)
	}
	if math.Abs(after-plain) < 1e-4 {
		t.Errorf("gold loss %.6f with --prefix-eot and %.6f without: the prefix is not applied", after, plain)
	}
}

// TestEvalTasksErrors: a missing tokenizer, an unknown task name, a few-shot file for no task and a malformed
// record under --strict-records are errors that say what to do or where.
func TestEvalTasksErrors(t *testing.T) {
	noTok := writeTinyModel(t, true)
	arc := filepath.Join(evalSamples, "arc_easy_test_first20.jsonl")
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"query": "q", "choices": ["a", "b"], "gold": 0}`+"\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	withTok := writeTinyModel(t, false)
	for _, tc := range []struct {
		cmd  evalTasksCmd
		want string
	}{
		{evalTasksCmd{Model: noTok, Task: []string{"arc=" + arc}}, "--tokenizer"},
		{evalTasksCmd{Model: withTok, Task: []string{"mmlu=" + arc}}, "cannot tell its kind"},
		{evalTasksCmd{Model: withTok, Task: []string{"arc=" + arc}, Fewshot: []string{"gsm8k=" + arc}}, "no --task named gsm8k"},
		{evalTasksCmd{Model: withTok, Task: []string{"arc=" + bad}, StrictRecords: true}, bad + ":2:"},
	} {
		c := tc.cmd
		c.Batch, c.MaxNewTokens = 2, 4
		var log bytes.Buffer
		_, err := c.run(context.Background(), io.Discard, &log, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.cmd.Task, err, tc.want)
		}
	}
	// Without --strict-records the malformed line is reported with its file and line and skipped.
	c := evalTasksCmd{Model: withTok, Task: []string{"arc=" + bad}, Batch: 2, MaxNewTokens: 4}
	var log bytes.Buffer
	rep, err := c.run(context.Background(), io.Discard, &log, false)
	if err != nil || rep.Tasks[0].Docs != 1 || rep.Tasks[0].Skipped != 1 || !strings.Contains(log.String(), bad+":2:") {
		t.Errorf("skipping: %v, %+v, log %q", err, rep, log.String())
	}
}

// TestEvalTasksChineseTruncationAndWarnings: CMMLU (a directory of per-subject CSVs, 2-shot from the dev
// directory) and C-Eval run by their names and report per-subject accuracies; a task whose every prompt is
// longer than the 64-token context says in its summary line how many scored contexts and generation prompts
// lost their start; malformed-record warnings stop after the first few and are summarised; --special-tokens is
// in the report.
func TestEvalTasksChineseTruncationAndWarnings(t *testing.T) {
	dir := writeTinyModel(t, false)
	tmp := t.TempDir()
	long := filepath.Join(tmp, "long.jsonl")
	var b strings.Builder
	for i := range 3 {
		fmt.Fprintf(&b, `{"question": "%s%d?", "answer": "so #### %d"}`+"\n", strings.Repeat("She sold 48 clips in April and half as many in May. ", 4), i, i)
	}
	bad := filepath.Join(tmp, "bad.jsonl")
	b2 := strings.Repeat("not json\n", 12) + `{"query": "q", "choices": ["a", "b"], "gold": 0}` + "\n"
	if os.WriteFile(long, []byte(b.String()), 0o644) != nil || os.WriteFile(bad, []byte(b2), 0o644) != nil {
		t.Fatal("cannot write the task files")
	}
	s := func(f string) string { return filepath.Join(evalSamples, f) }
	cmd := &evalTasksCmd{Model: dir, Batch: 4, Shots: 2, MaxNewTokens: 8, SpecialTokens: "literal", Task: []string{
		"cmmlu=" + s("cmmlu/test"), "ceval-valid=" + s("ceval/val"), "gsm8k=" + long, "arc=" + bad,
	}, Fewshot: []string{"cmmlu=" + s("cmmlu/dev")}}
	var out, log bytes.Buffer
	rep, err := cmd.run(context.Background(), &out, &log, false)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if rep.Special != "literal" || rep.Tasks[0].Docs != 6 || rep.Tasks[0].Shots != 2 || rep.Tasks[1].Docs != 3 {
		t.Errorf("report %+v", rep)
	}
	for _, name := range []string{"acc_agronomy", "acc_world_history", "acc_subject_mean"} {
		if _, ok := rep.Tasks[0].Metrics.Get(name); !ok {
			t.Errorf("cmmlu: no %s", name)
		}
	}
	if _, ok := rep.Tasks[1].Metrics.Get("acc_computer_network"); !ok {
		t.Error("ceval: no acc_computer_network")
	}
	for _, w := range []string{"cmmlu (cmmlu,", "ceval-valid (ceval,", "acc_agronomy",
		"gsm8k (gsm8k, " + long + "): 3 records, prompts lost their start to the context length: 3 of 3 teacher-forced gold answers and 3 of 3 generation prompts"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("summary lacks %q:\n%s", w, out.String())
		}
	}
	if n := strings.Count(log.String(), "warning: skipping malformed record"); n != maxWarnings ||
		!strings.Contains(log.String(), "arc: skipped 12 malformed records (7 more not shown") {
		t.Errorf("%d warnings, log:\n%s", n, log.String())
	}
	cmd.SpecialTokens = "strip"
	if _, err := cmd.run(context.Background(), io.Discard, io.Discard, false); err == nil || !strings.Contains(err.Error(), "--special-tokens") {
		t.Errorf("--special-tokens strip: %v", err)
	}
}
