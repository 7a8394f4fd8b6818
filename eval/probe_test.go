package eval

import (
	"context"
	"math"
	"testing"
)

// TestProbeChanceReported: eval reports each probe accuracy's chance level, the mean of its records' chance,
// and leaves it out for a group whose records do not all carry one.
func TestProbeChanceReported(t *testing.T) {
	file := writeFile(t, "p.jsonl", `{"prompt": "add: 1 + 2 =", "answer": "3", "kind": "add", "chance": 0.1}
{"prompt": "add: 1 2 + 2 =", "answer": "4 1", "kind": "add", "chance": 0.02}
{"prompt": "add~: 1 + 2 =", "answer": "7", "kind": "add_mem", "chance": 0.125}
{"prompt": "rev: a b =", "answer": "b a", "kind": "reverse"}
`)
	be := &fakeBackend{gen: func(p string) string { return " 3" }}
	res, err := RunTask(context.Background(), TaskSpec{Name: "probe", Kind: KindProbe, File: file}, be, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkMetric(t, res.Metrics, "acc_add", 0.5, math.Sqrt(0.125))
	checkMetric(t, res.Metrics, "chance_add", 0.06, math.NaN())
	checkMetric(t, res.Metrics, "chance_memorisation", 0.125, math.NaN())
	checkMetric(t, res.Metrics, "chance_add_mem", 0.125, math.NaN())
	for _, name := range []string{"chance", "chance_reasoning", "chance_reverse"} {
		if m, ok := res.Metrics.Get(name); ok {
			t.Errorf("%s = %v reported, but the reverse record has no chance", name, m.Value)
		}
	}
	bad := writeFile(t, "bad.jsonl", `{"prompt": "add: 1 + 2 =", "answer": "3", "kind": "add", "chance": 1.5}`+"\n")
	if _, err := RunTask(context.Background(), TaskSpec{Name: "probe", Kind: KindProbe, File: bad}, be, Options{StrictRecords: true}); err == nil {
		t.Error("chance 1.5: no error")
	}
}

// TestLMPrefixGenerate: Generate with Prefix continues prefix‖prompt, token for token what Generate on the
// stepper gives from those tokens.
func TestLMPrefixGenerate(t *testing.T) {
	m := testModel(t, 257, 32, 2, 9)
	lm := NewLM(m, byteTokenizer{}, nil)
	lm.Prefix = []int32{256}
	got, err := lm.Generate([]GenRequest{{Prompt: "add: 4 + 5 =", MaxTokens: 6}})
	if err != nil {
		t.Fatal(err)
	}
	want, err := Generate(NewPrefixStepper(m), byteTokenizer{}, append([]int32{256}, byteTokenizer{}.Encode("add: 4 + 5 =")...), GenerateOptions{MaxTokens: 6, EOT: 256}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Text != want.Text {
		t.Errorf("Generate with Prefix %q, from the prefixed tokens %q", got[0].Text, want.Text)
	}
	lm.Prefix = nil
	plain, err := lm.Generate([]GenRequest{{Prompt: "add: 4 + 5 =", MaxTokens: 6}})
	if err != nil {
		t.Fatal(err)
	}
	if plain[0].Text == got[0].Text {
		t.Errorf("the same completion %q with and without the prefix: this model cannot show the prefix is used", got[0].Text)
	}
}
