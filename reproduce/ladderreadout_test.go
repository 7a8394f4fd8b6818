package reproduce

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/summary"
	"github.com/smallinit/smallinit/train"
	"github.com/smallinit/smallinit/train/rundir"
)

// syntheticLadder is a world with a known answer: at every width the γ = 0.5 loss is a + b·ln N plus seed noise
// of SD sd, and γ = 1's loss is the γ = 0.5 line's at (1 + eff)·N plus its own noise, so that γ = 1's effective
// size is eff at every width, its paired gain −b·ln(1 + eff) at every width, and H2's slope 0.
func syntheticLadder(eff, sd float64, seeds map[int]int) []StudyRun {
	const a, b = 8.0, -0.25
	widths := map[int]float64{80: 374480, 96: 480096, 112: 681968, 128: 918656, 144: 1079568}
	rng := rand.New(rand.NewPCG(7, 7))
	var runs []StudyRun
	for w, n := range widths {
		for s := range seeds[w] {
			l05 := a + b*math.Log(n) + sd*rng.NormFloat64()
			l1 := a + b*math.Log((1+eff)*n) + sd*rng.NormFloat64()
			runs = append(runs,
				StudyRun{Gamma: 0.5, Width: w, N: n, LR: 2e-3, Seed: s, Loss: Loss{Overall: l05}},
				StudyRun{Gamma: 1, Width: w, N: n, LR: 5e-4, Seed: s, Loss: Loss{Overall: l1}})
			// A rate check beside the ladder: at another rate, never read as the ladder's.
			if w == 80 && s < 2 {
				runs = append(runs, StudyRun{Gamma: 1, Width: w, N: n, LR: 1e-3, Seed: s, Loss: Loss{Overall: 100}})
			}
		}
	}
	return runs
}

var verdictLRs = map[float64]float64{0.5: 2e-3, 1: 5e-4}

// verdictSeeds is family B's design: seeds 0-4 at every rung, 0-6 at width 128.
var verdictSeeds = map[int]int{80: 5, 96: 5, 112: 5, 128: 7, 144: 5}

// TestLineEffectiveSizeRecoversAKnownSize: the straight-line reading recovers the effective size a synthetic
// ladder was built with, inside its bootstrap interval, and says "beyond the ladder" / "below the ladder" when
// the size lies outside the ladder's N.
func TestLineEffectiveSizeRecoversAKnownSize(t *testing.T) {
	for _, tc := range []struct {
		eff  float64
		want string
	}{
		{0.10, "%"},
		{-0.20, "%"},
		{0.50, "beyond the ladder: at least +17.5%"},
		{-0.70, "below the ladder"},
	} {
		ev, err := LadderEvidence(syntheticLadder(tc.eff, 0.004, verdictSeeds), 128, verdictLRs, "synthetic", &Primaries{Alpha: 0.05, Delta: 0.0193, MinWidths: 4, MinSpan: 1.5})
		if err != nil {
			t.Fatal(err)
		}
		le, err := lineEffectiveSize(ev.Ladder, 128, 2000)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(le.Reading, tc.want) {
			t.Errorf("effective size %+g: reading %q, want %q", tc.eff, le.Reading, tc.want)
		}
		if math.Abs(le.B+0.25) > 0.02 {
			t.Errorf("effective size %+g: the γ = 0.5 line's slope %g, built as −0.25", tc.eff, le.B)
		}
		if le.Inside {
			if le.CI == nil || !(le.CI.Lo <= tc.eff && tc.eff <= le.CI.Hi) || math.Abs(le.Gain-tc.eff) > 0.05 {
				t.Errorf("effective size %+g: read %+.4f with interval %+v, which misses it", tc.eff, le.Gain, le.CI)
			}
		}
	}
}

// TestLadderEvidenceJudgesAKnownWorld: judged by the primaries' judge, a world where γ = 1 is a constant +30%
// effective size has H1 supported (its gain, 0.25·ln 1.3 = 0.066 nats, far above δ) and H2 not supported (the
// slope is 0 by construction); the rate-check runs are left out, and the ladder has its five rungs with width
// 128 over seeds 0-6.
func TestLadderEvidenceJudgesAKnownWorld(t *testing.T) {
	spec := &Primaries{Alpha: 0.05, Delta: 0.0193, MinWidths: 4, MinSpan: 1.5}
	ev, err := LadderEvidence(syntheticLadder(0.30, 0.004, verdictSeeds), 128, verdictLRs, "synthetic", spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Ladder) != 5 || len(ev.Gamma) != 2 || len(ev.Gamma[1].Seeds) != 7 || len(ev.Ladder[0].G1.Seeds) != 5 {
		t.Fatalf("evidence: %d rungs, %d γ arms, %d seeds at 128, %d at 80", len(ev.Ladder), len(ev.Gamma), len(ev.Gamma[1].Seeds), len(ev.Ladder[0].G1.Seeds))
	}
	for _, r := range ev.Ladder {
		for s, l := range r.G1.Seeds {
			if l.Overall == 100 {
				t.Errorf("width %d seed %d: a rate-check run was read as the ladder's", r.Width, s)
			}
		}
	}
	claims := judgePrimaries(ev, 200)
	if claims[0].ID != "H1" || claims[0].Verdict != Supported {
		t.Errorf("H1: %s (%s), want supported: %s", claims[0].Verdict, claims[0].Reason, claims[0].Evidence)
	}
	if claims[1].ID != "H2" || claims[1].Verdict == Supported {
		t.Errorf("H2: %s, want not supported (a slope of 0 by construction): %s", claims[1].Verdict, claims[1].Evidence)
	}
	if got := claims[0].Tests[0].Estimate.Mean; math.Abs(got-0.25*math.Log(1.3)) > 0.01 {
		t.Errorf("H1's gain %.4f, built as %.4f", got, 0.25*math.Log(1.3))
	}
	if n := claims[1].Tests[0].Estimate.N; n != 5 {
		t.Errorf("H2 read over %d seeds, want 5 (the seeds with every rung)", n)
	}
	dup := append(syntheticLadder(0.3, 0.004, verdictSeeds), StudyRun{Gamma: 1, Width: 96, N: 480096, LR: 5e-4, Seed: 0, Dir: "again"})
	if _, err := LadderEvidence(dup, 128, verdictLRs, "synthetic", spec); err == nil || !strings.Contains(err.Error(), "two runs") {
		t.Errorf("a run read twice: %v, want refused", err)
	}
}

// TestReadStudyRuns: runs are read from two study directories at the training mix, with each run's γ, width, N,
// rate and seed from its config.toml; directories of different corpora are refused.
func TestReadStudyRuns(t *testing.T) {
	st := &data.Stats{Source: "test", SHA256: map[string]string{"train.tok": "aa", "val.tok": "bb"},
		TrainByLang: map[string]data.SplitStats{"en": {Tokens: 200}, "zh": {Tokens: 800}}}
	st.Train.Tokens = 1000
	write := func(out string, width int, seed int64, langLoss map[string]float64, stats *data.Stats) {
		t.Helper()
		dir := filepath.Join(out, "main", "run")
		c, err := train.LoadSets("", []override.Set{{Key: recipe.KeySeed, Value: seed}, {Key: "model.hidden_size", Value: int64(width)},
			{Key: recipe.KeyDataTrain, Value: "train.tok"}, {Key: recipe.KeyDataVal, Value: "val.tok"}})
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "config.toml"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := summary.Write(filepath.Join(out, summary.FileName("")), summary.Summary{Data: stats, Runs: []summary.Row{{Run: "run", Dir: dir, LangLoss: langLoss}}}); err != nil {
			t.Fatal(err)
		}
	}
	a, b := t.TempDir(), t.TempDir()
	write(a, 64, 3, map[string]float64{"en": 5, "zh": 4}, st)
	write(b, 96, 5, map[string]float64{"en": 6, "zh": 3}, st)
	// Run a started when it drew its weights (init.json) and finished when it wrote final/config.json; run b has
	// neither, so neither time is stated.
	started, finished := time.Date(2026, 12, 7, 2, 32, 0, 0, time.UTC), time.Date(2026, 12, 7, 3, 1, 5, 0, time.UTC)
	for _, f := range []struct {
		path string
		at   time.Time
	}{{filepath.Join(a, "main", "run", rundir.InitFile), started}, {filepath.Join(a, "main", "run", rundir.FinalDir, "config.json"), finished}} {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.path, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f.path, f.at, f.at); err != nil {
			t.Fatal(err)
		}
	}
	runs, _, err := ReadStudyRuns([]string{a, b}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := runs[0]; r.Started == nil || !r.Started.Equal(started) || r.Finished == nil || !r.Finished.Equal(finished) || runs[1].Started != nil || runs[1].Finished != nil {
		t.Errorf("run times %v-%v and %v-%v, want %v-%v and none", r.Started, r.Finished, runs[1].Started, runs[1].Finished, started, finished)
	}
	if len(runs) != 2 || runs[0].Width != 64 || runs[0].Seed != 3 || runs[1].Width != 96 || runs[1].Seed != 5 || runs[0].N <= 0 {
		t.Fatalf("runs %+v", runs)
	}
	if math.Abs(runs[0].Loss.Overall-(0.2*5+0.8*4)) > 1e-12 || math.Abs(runs[1].Loss.Overall-(0.2*6+0.8*3)) > 1e-12 {
		t.Errorf("training-mix losses %g, %g, want 4.2 and 3.6", runs[0].Loss.Overall, runs[1].Loss.Overall)
	}
	other := *st
	other.SHA256 = map[string]string{"train.tok": "cc", "val.tok": "bb"}
	write(b, 96, 5, map[string]float64{"en": 6, "zh": 3}, &other)
	if _, _, err := ReadStudyRuns([]string{a, b}, false, nil); err == nil || !strings.Contains(err.Error(), "train.tok differs") {
		t.Errorf("two corpora: %v, want refused naming the file", err)
	}
}

// TestVerdictLadderPrimaries: the verdict ladder plan's [primaries] parse as the judge's, with δ 0.0193 and a
// span rule its widths 80-144 meet (N spans 2.88x), so H2 is judged rather than refused for its span.
func TestVerdictLadderPrimaries(t *testing.T) {
	p, err := experiment.Builtin("verdict-20tpp-ladder")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := parsePrimaries(p)
	if err != nil || spec == nil {
		t.Fatalf("primaries: %v", err)
	}
	if spec.Delta != 0.0193 || spec.MinWidths != 4 || spec.MinSpan != 1.8 || spec.Alpha != 0.05 {
		t.Errorf("primaries %+v", spec)
	}
	ev, err := LadderEvidence(syntheticLadder(0.1, 0.004, verdictSeeds), 128, verdictLRs, "synthetic", spec)
	if err != nil {
		t.Fatal(err)
	}
	if c := judgePrimaries(ev, 100)[1]; strings.Contains(c.Reason, "H2 needs") {
		t.Errorf("H2 refused for its span: %s", c.Reason)
	}
}

// TestPlanRunsKeepsThePlansGroupsOfOneRecipe: a verdict reads only the runs of its plan's groups (family A's
// controls, in their own group, share γ, width, rate and seed with the main arms and would be read twice), and
// the runs it keeps must share one recipe: a group of another recipe under a plan's group name is refused,
// naming the key.
func TestPlanRunsKeepsThePlansGroupsOfOneRecipe(t *testing.T) {
	run := func(group string, seed int64, sets ...override.Set) StudyRun {
		t.Helper()
		c, err := train.LoadSets("", append([]override.Set{{Key: recipe.KeySeed, Value: seed},
			{Key: recipe.KeyDataTrain, Value: "train.tok"}, {Key: recipe.KeyDataVal, Value: "val.tok"}}, sets...))
		if err != nil {
			t.Fatal(err)
		}
		return StudyRun{Dir: filepath.Join("out", group, fmt.Sprintf("run-seed%d", seed)), Group: group, Seed: int(seed), recipe: recipeOf(c)}
	}
	p := &experiment.Plan{Name: "ladder", Groups: []experiment.Group{{Name: "main"}, {Name: "ladder"}}}
	wd0 := override.Set{Key: "optimizer.weight_decay", Value: 0.0}
	wide := []override.Set{{Key: "model.hidden_size", Value: int64(96)}, {Key: "schedule.lr", Value: 1e-3},
		{Key: "init.gamma", Value: 1.0}, {Key: "train.steps", Value: int64(40)}, {Key: "train.threads", Value: int64(1)}}
	cases := []struct {
		name     string
		runs     []StudyRun
		kept     int
		left     string
		errWants string
	}{
		{name: "controls left out", runs: []StudyRun{run("main", 0), run("controls", 0, wd0), run("ladder", 1, wide...)}, kept: 2, left: `group "controls" is not one of plan ladder's`},
		{name: "another recipe under the plan's name", runs: []StudyRun{run("main", 0), run("main", 1, wd0)}, errWants: "optimizer.weight_decay (0.1 against 0"},
		{name: "no run of the plan", runs: []StudyRun{run("controls", 0)}, errWants: "no run of plan ladder's groups"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kept, left, err := planRuns(p, tc.runs)
			if tc.errWants != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errWants) {
					t.Fatalf("err %v, want one containing %q", err, tc.errWants)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(kept) != tc.kept || len(left) != len(tc.runs)-tc.kept || !strings.Contains(strings.Join(left, "\n"), tc.left) {
				t.Errorf("kept %d, left %q; want %d kept and %q", len(kept), left, tc.kept, tc.left)
			}
		})
	}
}

// TestPartialReadScoresAsTheSummaryWould: a study that has not ended (no summary.json) is read from its
// finished runs, each scored here; the losses equal those the study's own summary.json records for the same
// runs, and a directory with neither a summary nor a corpus is refused, naming it.
func TestPartialReadScoresAsTheSummaryWould(t *testing.T) {
	p, err := experiment.Parse([]byte(`
name = "pair"
seeds = [0]
summary = true
[budget]
minutes = 1
efficiency = 0.85
min_steps = 2
[data]
corpus = "embedded"
vocab = 300
[base]
"model.preset" = "tiny"
"model.hidden_size" = 32
"model.num_attention_heads" = 2
"model.num_hidden_layers" = 1
"model.max_position_embeddings" = 32
"train.batch_size" = 2
"train.eval_windows" = 2
[[group]]
name = "main"
[[group.arm]]
name = "gamma0.5"
set = { "init.gamma" = 0.5 }
[[group.arm]]
name = "gamma1"
set = { "init.gamma" = 1.0 }
`))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := experiment.Run(context.Background(), p, experiment.Options{Out: out, Steps: 2}); err != nil {
		t.Fatal(err)
	}
	whole, err := summary.Read(filepath.Join(out, summary.FileName("")))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(out, summary.FileName(""))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadStudyRuns([]string{out}, false, nil); err == nil {
		t.Fatal("no summary.json without partial: read anyway")
	}
	st, err := data.ReadStats(filepath.Join(out, experiment.DataDir))
	if err != nil {
		t.Fatal(err)
	}
	sums, err := corpusSums(out, st)
	if err != nil {
		t.Fatal(err)
	}
	part, err := scoreFinishedRuns(out, sums, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(part) != 2 || len(whole.Runs) != 2 {
		t.Fatalf("%d runs scored from the finished runs, %d in the summary; want 2 and 2", len(part), len(whole.Runs))
	}
	byDir := map[string]summary.Row{}
	for _, r := range whole.Runs {
		byDir[r.Dir] = r
	}
	for _, r := range part {
		w, ok := byDir[r.Dir]
		if !ok || r.ValLoss != w.ValLoss || len(r.LangLoss) != 2 || r.LangLoss["en"] != w.LangLoss["en"] || r.LangLoss["zh"] != w.LangLoss["zh"] {
			t.Errorf("run %s scored %v %v, the summary's %v %v", r.Dir, r.ValLoss, r.LangLoss, w.ValLoss, w.LangLoss)
		}
	}
	dir, dataDir := part[0].Dir, filepath.Join(out, experiment.DataDir)
	checkValidationCache(t, dir, dataDir, sums, part[0])
	// The out-of-distribution score is cached in the run at its window count: read back as written, scored again
	// at another count.
	first, err := scoreOOD(context.Background(), dir, dataDir, 1)
	if err != nil {
		t.Fatal(err)
	}
	var c oodCache
	run, err := train.OpenRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !run.ReadScore(train.OODScore, &c) || c.Windows != 1 || len(c.Texts) != len(first) || len(first) != 3 {
		t.Fatalf("cache %+v after scoring %d texts at 1 window", c, len(first))
	}
	c.Texts[0].LossMean = 42 // a mark: a cached read returns it, a fresh score does not
	if err := run.WriteScore(train.OODScore, c); err != nil {
		t.Fatal(err)
	}
	if again, err := scoreOOD(context.Background(), dir, dataDir, 1); err != nil || again[0].LossMean != 42 || again[1].LossMean != first[1].LossMean || again[1].Bytes != first[1].Bytes {
		t.Errorf("the same window count: %v %v, want the cache read back", again, err)
	}
	if other, err := scoreOOD(context.Background(), dir, dataDir, 2); err != nil || other[0].LossMean == 42 || other[0].Tokens <= first[0].Tokens {
		t.Errorf("2 windows: %v %v, want a fresh score over more tokens than 1 window's %d", other, err, first[0].Tokens)
	}
	// The held-out text's score is cached in the run for its documents: read back as written, scored again for
	// other documents.
	held := &HeldOutText{Digest: "one", Docs: []data.HeldOutDoc{{Source: "sotu", Lang: "en", Text: "Madam Speaker, the state of our union is strong."},
		{Source: "songci", Lang: "zh", Text: "寒蝉凄切，对长亭晚，骤雨初歇。"}, {Source: "sotu", Lang: "en", Text: "And so, my fellow Americans."}}}
	hs, err := scoreHeldOutText(context.Background(), dir, dataDir, held)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 2 || hs[0].Source != "sotu" || hs[0].Documents != 2 || hs[1].Documents != 1 || hs[0].Tokens <= 0 || !(hs[0].BitsPerByte() > 0) {
		t.Fatalf("held-out scores %+v, want sotu (2 documents) then songci (1), each scored", hs)
	}
	var hc heldOutCache
	if !run.ReadScore(train.HeldOutTextScore, &hc) || hc.Digest != "one" {
		t.Fatalf("held-out cache %+v", hc)
	}
	hc.Sources[0].Nats = 42
	if err := run.WriteScore(train.HeldOutTextScore, hc); err != nil {
		t.Fatal(err)
	}
	if again, err := scoreHeldOutText(context.Background(), dir, dataDir, held); err != nil || again[0].Nats != 42 {
		t.Errorf("the same documents: %+v %v, want the cache read back", again, err)
	}
	held.Digest = "two"
	if other, err := scoreHeldOutText(context.Background(), dir, dataDir, held); err != nil || other[0].Nats == 42 || other[0].Nats != hs[0].Nats {
		t.Errorf("other documents: %+v %v, want a fresh score (%g)", other, err, hs[0].Nats)
	}
	empty := t.TempDir()
	if _, _, err := ReadStudyRuns([]string{empty}, true, nil); err == nil || !strings.Contains(err.Error(), empty) || !strings.Contains(err.Error(), "has not ended") {
		t.Errorf("an empty directory: %v, want it named", err)
	}
}

// TestCorpusSumsOfAnEarlierBuild: a corpus whose stats.json records no sums (prepared before they were recorded,
// as bilingual corpus v2) is identified by the sums of its copy's files, so two copies of it are one corpus and
// a copy with one byte changed is not, named by its file.
func TestCorpusSumsOfAnEarlierBuild(t *testing.T) {
	st := &data.Stats{ValByLang: map[string]data.SplitStats{"en": {Tokens: 1}, "zh": {Tokens: 1}}}
	copyOf := func(change string) string {
		t.Helper()
		out := t.TempDir()
		dir := filepath.Join(out, experiment.DataDir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{data.TrainFile, data.ValFile, data.TokenizerFile, data.ValLangFile("en"), data.ValLangFile("zh")} {
			body := "bytes of " + f
			if f == change {
				body += "!"
			}
			if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	sums := func(out string) map[string]string {
		t.Helper()
		s, err := corpusSums(out, st)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b, c := sums(copyOf("")), sums(copyOf("")), sums(copyOf(data.ValLangFile("zh")))
	if len(a) != 5 {
		t.Fatalf("%d files summed, want 5", len(a))
	}
	if err := sameCorpus(a, b); err != nil {
		t.Errorf("two copies of one corpus: %v", err)
	}
	if err := sameCorpus(a, c); err == nil || !strings.Contains(err.Error(), data.ValLangFile("zh")) {
		t.Errorf("a changed file: %v, want it named", err)
	}
	if _, err := corpusSums(t.TempDir(), st); err == nil || !strings.Contains(err.Error(), "records no sha256 sums") {
		t.Errorf("no copy to sum: %v", err)
	}
}

// checkValidationCache: the partial readout's score of the run in dir (want, scored on the corpus of sums) is
// cached in the run and read back without scoring; a cache for another corpus or other final weights is scored
// again, and a cache made to differ is what the next read returns (so the read comes from the cache).
func checkValidationCache(t *testing.T, dir, dataDir string, sums map[string]string, want summary.Row) {
	t.Helper()
	run, err := train.OpenRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	var c validationCache
	if !run.ReadScore(train.ValidationScore, &c) || c.ValLoss != want.ValLoss || c.LangLoss["zh"] != want.LangLoss["zh"] || c.Corpus != corpusDigest(sums) {
		t.Fatalf("validation cache %+v after scoring %v %v", c, want.ValLoss, want.LangLoss)
	}
	marked := c
	marked.ValLoss = 123.5
	if err := run.WriteScore(train.ValidationScore, marked); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		cache    validationCache
		fresh    bool
		wantLoss float64
	}{
		{"the same final model and corpus: read back", marked, false, 123.5},
		{"another corpus: scored again", func() validationCache { m := marked; m.Corpus = "other"; return m }(), true, want.ValLoss},
		{"other final weights: scored again", func() validationCache { m := marked; m.Model = "other"; return m }(), true, want.ValLoss},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := run.WriteScore(train.ValidationScore, tc.cache); err != nil {
				t.Fatal(err)
			}
			announced := false
			row, fresh, err := scoreFinishedRun(context.Background(), dir, dataDir, corpusDigest(sums), func() { announced = true })
			if err != nil {
				t.Fatal(err)
			}
			if fresh != tc.fresh || announced != tc.fresh || row.ValLoss != tc.wantLoss {
				t.Errorf("fresh %v (announced %v), loss %v; want fresh %v, loss %v", fresh, announced, row.ValLoss, tc.fresh, tc.wantLoss)
			}
		})
	}
}
