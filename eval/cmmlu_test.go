package eval

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/model"
)

// cmmluAgronomyQ1 is the first record of testdata/cmmlu/test/agronomy.csv as the harness's doc_to_text builds it.
const cmmluAgronomyQ1 = "水稻属于哪一类作物\nA. 油料作物\nB. 纤维作物\nC. 粮食作物\nD. 糖料作物\n答案："

// TestTaskCMMLUPromptsAsHarness: zero-shot, every choice is scored as " A".." D" after the subject's description
// and the question; few-shot, the first examples of the same subject's dev file come between them, each
// followed by "\n\n" (lm_eval/tasks/cmmlu/_default_template_yaml, fewshot_delimiter "\n\n", target_delimiter " ").
// A quoted CSV field keeps its comma, doubled quote and line break.
func TestTaskCMMLUPromptsAsHarness(t *testing.T) {
	desc := "以下是关于农学的单项选择题，请直接给出正确答案的选项。\n\n"
	be := &fakeBackend{}
	spec := TaskSpec{Name: "cmmlu", Kind: KindCMMLU, File: filepath.Join("testdata", "cmmlu", "test", "agronomy.csv")}
	res, err := RunTask(context.Background(), spec, be, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Docs != 4 || len(be.reqs) != 16 {
		t.Fatalf("%d records, %d requests", res.Docs, len(be.reqs))
	}
	for j, r := range be.reqs[:4] {
		if r.Context != desc+cmmluAgronomyQ1 || r.Continuation != " "+string(rune('A'+j)) {
			t.Errorf("request %d: %q + %q", j, r.Context, r.Continuation)
		}
	}
	if want := desc + "关于轮作，下列说法正确的是\n（单选）\nA. 会加重病虫害\nB. 必须每年种\"同一\"作物\nC. 有利于保持地力\nD. 只适用于温室\n答案："; be.reqs[12].Context != want {
		t.Errorf("quoted record: %q, want %q", be.reqs[12].Context, want)
	}

	be = &fakeBackend{}
	spec.Fewshot = filepath.Join("testdata", "cmmlu", "dev") // a directory: the examples of the same subject
	if _, err := RunTask(context.Background(), spec, be, Options{Shots: 2}); err != nil {
		t.Fatal(err)
	}
	shots := "玉米原产于哪个洲\nA. 亚洲\nB. 欧洲\nC. 美洲\nD. 非洲\n答案： C\n\n" +
		"土壤酸性过强时常施用\nA. 石灰\nB. 硫磺\nC. 食盐\nD. 砂糖\n答案： A\n\n"
	if got := be.reqs[0].Context; got != desc+shots+cmmluAgronomyQ1 {
		t.Errorf("2-shot context %q, want %q", got, desc+shots+cmmluAgronomyQ1)
	}

	// C-Eval: its own description, the same question layout.
	be = &fakeBackend{}
	spec = TaskSpec{Name: "ceval-valid", Kind: KindCEval, File: filepath.Join("testdata", "ceval", "val"), Fewshot: filepath.Join("testdata", "ceval", "dev")}
	if _, err := RunTask(context.Background(), spec, be, Options{Shots: 1}); err != nil {
		t.Fatal(err)
	}
	want := "以下是中国关于计算机网络的单项选择题，请选出其中的正确答案。\n\n" +
		"TCP属于哪一层的协议____\nA. 网络层\nB. 传输层\nC. 会话层\nD. 表示层\n答案： B\n\n" +
		"IPv4地址的长度是多少位____\nA. 16\nB. 32\nC. 64\nD. 128\n答案："
	if be.reqs[0].Context != want {
		t.Errorf("C-Eval 1-shot context %q, want %q", be.reqs[0].Context, want)
	}
}

// TestTaskCEvalTestSplitRefused: C-Eval's test split has no answers; reading it says so and names the file, and
// a row with an empty answer is a malformed record that says the same.
func TestTaskCEvalTestSplitRefused(t *testing.T) {
	file := filepath.Join("testdata", "ceval", "test", "computer_network_test.csv")
	_, err := RunTask(context.Background(), TaskSpec{Name: "ceval", Kind: KindCEval, File: file}, &fakeBackend{}, Options{})
	if err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "val split") {
		t.Errorf("test split: error %v", err)
	}
	empty := writeFile(t, "law_val.csv", "id,question,A,B,C,D,answer,explanation\n0,q,1,2,3,4,,\n1,q,1,2,3,4,A,\n2,q,1,2,3,4,E,\n")
	res, err := RunTask(context.Background(), TaskSpec{Name: "ceval", Kind: KindCEval, File: empty}, &fakeBackend{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Docs != 1 || res.Skipped != 2 || res.Malformed[0].Line != 2 || !strings.Contains(res.Malformed[0].Err, "no released answers") ||
		res.Malformed[1].Line != 4 || !strings.Contains(res.Malformed[1].Err, `answer "E"`) {
		t.Errorf("docs %d, malformed %+v", res.Docs, res.Malformed)
	}
	if _, ok := res.Metrics.Get("acc_law"); !ok {
		t.Errorf("no acc_law in %+v", res.Metrics)
	}
}

// TestSubjectOf: subjects from the released file names.
func TestSubjectOf(t *testing.T) {
	for _, c := range []struct {
		path  string
		known map[string]string
		want  string
	}{
		{"cmmlu/test/agronomy.csv", cmmluSubjects, "agronomy"},
		{"ceval/val/accountant_val.csv", cevalSubjects, "accountant"},
		{"ceval/dev/high_school_physics_dev.csv", cevalSubjects, "high_school_physics"},
		{"shared/cmmlu_dev_agronomy.csv", cmmluSubjects, "agronomy"},
		{"x/cmmlu_high_school_physics.csv", cmmluSubjects, "high_school_physics"},
		{"x/my_exam.csv", cmmluSubjects, "my_exam"},
	} {
		if got := subjectOf(c.path, c.known); got != c.want {
			t.Errorf("subjectOf(%q) = %q, want %q", c.path, got, c.want)
		}
	}
}

// letterModel is a model whose next-token distribution is the same at every position and favours one byte:
// every embedding row is the all-ones vector, every other matrix is zero except the head row of fav (all
// 0.1), so the final RMSNorm sees ones and the logits are 0.1·Dim for fav and 0 for every other token.
func letterModel(t *testing.T, seqLen int, fav byte) *model.Model {
	t.Helper()
	m := testModel(t, 257, seqLen, 2, 1)
	for _, s := range m.Specs {
		v := m.Params.Flat[s.Offset : s.Offset+s.Size()]
		for i := range v {
			switch s.Class {
			case arch.ClassNorm, arch.ClassEmbed:
				v[i] = 1
			case arch.ClassHead:
				if i/m.Config.Dim == int(fav) {
					v[i] = 0.1
				} else {
					v[i] = 0
				}
			default:
				v[i] = 0
			}
		}
	}
	return m
}

// TestTaskCMMLUFavouredLetterScoresAsConstructed: on a real LM whose logits favour "C" by z = 3.2 nats, every
// record is answered C, so the accuracies are the shares of C among the golds of testdata/cmmlu/test, by hand:
// agronomy C,A,B,C → 2/4, world_history C,C → 2/2, overall 4/6, subject mean (0.5+1)/2 = 0.75 with SE
// sqrt(v_agronomy + v_world_history)/2 at the Agresti-Coull proportions (z² = 3.8415): agronomy
// p̃ = (2 + 1.9207)/7.8415 = 0.5, v = 0.25/7.8415; world_history p̃ = 3.9207/5.8415 = 0.67118,
// v = 0.67118·0.32882/5.8415; SE 0.131968, not the 0.125 of the plain p(1−p)/n, whose 0 for world_history would
// read as certainty. Each choice " X" is two tokens (space, letter) under the same distribution,
// L = log(256 + e^z) the loss of a non-favoured token: the gold loss per token is L − z/2 for gold C and L
// otherwise, and the margin +z for gold C, −z otherwise.
func TestTaskCMMLUFavouredLetterScoresAsConstructed(t *testing.T) {
	m := letterModel(t, 64, 'C') // prompts are longer than 64 bytes: the logits do not depend on the context
	lm := NewLM(m, byteTokenizer{}, nil)
	spec := TaskSpec{Name: "cmmlu", Kind: KindCMMLU, File: filepath.Join("testdata", "cmmlu", "test")}
	res, err := RunTask(context.Background(), spec, lm, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Docs != 6 {
		t.Fatalf("%d records", res.Docs)
	}
	checkMetric(t, res.Metrics, "acc", 4.0/6, math.Sqrt(4.0/6*2/6/6))
	checkMetric(t, res.Metrics, "acc_norm_bytes", 4.0/6, math.Sqrt(4.0/6*2/6/6)) // one-byte choices: acc_norm = acc
	checkMetric(t, res.Metrics, "acc_agronomy", 0.5, 0.25)
	checkMetric(t, res.Metrics, "acc_world_history", 1, 0)
	z2 := 1.959963984540054 * 1.959963984540054
	agro, world := 0.25/(4+z2), (2+z2/2)/(2+z2)*(1-(2+z2/2)/(2+z2))/(2+z2)
	se := math.Sqrt(agro+world) / 2
	checkMetric(t, res.Metrics, "acc_subject_mean", 0.75, se)
	if sm, _ := res.Metrics.Get("acc_subject_mean"); !near(sm.Lo, 0.75-1.959963984540054*se) || sm.Hi != 1 ||
		sm.Note != "over 2 of the 67 subjects" {
		t.Errorf("acc_subject_mean interval [%v, %v], note %q; want [0.75 − z·%v, 1] over 2 of the 67 subjects", sm.Lo, sm.Hi, sm.Note, se)
	}
	checkMetric(t, res.Metrics, "chance", 0.25, math.NaN())
	z := 0.1 * float64(m.Config.Dim)
	L := math.Log(256 + math.Exp(z))
	// gold losses: four of L − z/2, two of L: mean L − z/3, sample sd (z/2)·sqrt(8/30), SE sd/√6.
	nearTol := func(name string, got Metric, value, se float64) {
		if math.Abs(got.Value-value) > 1e-4 || math.Abs(got.StdErr-se) > 1e-4 {
			t.Errorf("%s = %v ± %v, want %v ± %v", name, got.Value, got.StdErr, value, se)
		}
	}
	g, _ := res.Metrics.Get("gold_loss_per_token")
	nearTol("gold_loss_per_token", g, L-z/3, z/2*math.Sqrt(8.0/30)/math.Sqrt(6))
	mg, _ := res.Metrics.Get("ll_margin")
	// margins: four +z, two −z: mean z/3, sample sd 2z·sqrt(8/30)·... = sqrt(Σ(x−μ)²/5): (4·(2z/3)² + 2·(4z/3)²)/5.
	nearTol("ll_margin", mg, z/3, math.Sqrt((4*(2*z/3)*(2*z/3)+2*(4*z/3)*(4*z/3))/5/6))
}

// TestTaskCMMLUConvertedJSONL: rows converted to JSON lines ({"Question", "A"-"D", "Answer", "subject"}, as an
// independent check converted the released test set) read as the CSV rows do, subject from the record; a
// record without a question or with a non-string field is malformed.
func TestTaskCMMLUConvertedJSONL(t *testing.T) {
	file := writeFile(t, "cmmlu_test.jsonl", `{"Question": "水稻属于哪一类作物", "A": "油料作物", "B": "纤维作物", "C": "粮食作物", "D": "糖料作物", "Answer": "C", "subject": "agronomy"}
{"Question": "古代金字塔主要位于今天的哪个国家", "A": "希腊", "B": "印度", "C": "埃及", "D": "秘鲁", "Answer": "C", "subject": "world_history"}
{"A": "1", "B": "2", "C": "3", "D": "4", "Answer": "A"}
{"Question": "q", "A": 1, "B": 2, "C": 3, "D": [4], "Answer": "A"}
`)
	be := &fakeBackend{}
	res, err := RunTask(context.Background(), TaskSpec{Name: "cmmlu", Kind: KindCMMLU, File: file}, be, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Docs != 2 || res.Skipped != 2 || be.reqs[0].Context != "以下是关于农学的单项选择题，请直接给出正确答案的选项。\n\n"+cmmluAgronomyQ1 {
		t.Errorf("docs %d, skipped %d %+v, first context %q", res.Docs, res.Skipped, res.Malformed, be.reqs[0].Context)
	}
	if _, ok := res.Metrics.Get("acc_world_history"); !ok {
		t.Errorf("no acc_world_history in %+v", res.Metrics)
	}
}
