// Package reproduce runs the study's experiments scaled to one machine — a γ sweep, the 2×2 of fixes, a
// model-size ladder — as sweeps under one budget, then fits, compares and checks each claim of
// SPEC's introduction against the results, reporting honestly when a claim does not reproduce at this scale.
package reproduce

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/sweep"
)

// Experiment names: the sweeps of a reproduction. No configuration is trained twice: the fully fixed corner
// of the 2×2 and the width-128 point of the size ladder are the γ sweep's runs.
const (
	ExpGamma   = "gamma"    // γ ∈ {0.5, 0.75, 1, 1.25, 1.5} at width 128 with both fixes (ε = 1e-12, elementwise gate)
	ExpDefault = "eps1e-5"  // γ ∈ {0.5, 1} × gate ∈ {none, elementwise} at ε = 1e-5
	ExpEpsOnly = "eps1e-12" // γ ∈ {0.5, 1} at ε = 1e-12 without gate
	ExpSizes   = "sizes"    // widths 64, 96, 160 × γ ∈ {0.5, 1} with both fixes (with width 128: 4 sizes)
	ExpProbes  = "probes"   // γ ∈ {0.5, 1} with both fixes, width 128, on the corpus with probes mixed in (probes.go)
)

// Experiments lists them in run order.
var Experiments = []string{ExpGamma, ExpDefault, ExpEpsOnly, ExpSizes, ExpProbes}

// Shape of the runs: the tiny preset's depth and heads with a 128-token context, batch 16.
const (
	seqLen = 128
	batch  = 16
)

var (
	gammas = []float64{0.5, 0.75, 1, 1.25, 1.5}
	widths = []int{64, 96, 160} // plus 128 from the γ sweep
)

// base returns the overrides shared by every run.
func base(dataDir string, vocab, steps int) []string {
	return []string{
		"model.preset=tiny", fmt.Sprintf("model.vocab_size=%d", vocab), fmt.Sprintf("model.max_position_embeddings=%d", seqLen),
		fmt.Sprintf("train.batch_size=%d", batch), fmt.Sprintf("train.steps=%d", steps), "train.log_interval=25",
		fmt.Sprintf("train.eval_interval=%d", max(steps/5, 1)), "train.eval_windows=64",
		fmt.Sprintf("train.checkpoint_interval=%d", max(steps/5, 1)), "train.keep_checkpoints=1",
		fmt.Sprintf("train.diagnostics_interval=%d", max(steps/10, 1)),
		"schedule.kind=cosine", "schedule.lr=2e-3", fmt.Sprintf("schedule.warmup_steps=%d", max(steps/20, 1)),
		"data.train=" + filepath.Join(dataDir, data.TrainFile), "data.val=" + filepath.Join(dataDir, data.ValFile),
	}
}

// gridText writes a sweep grid: the base overrides and the axes, in TOML.
func gridText(baseSets []string, axes map[string]string) string {
	var b strings.Builder
	b.WriteString("# written by smallinit reproduce\n[base]\n")
	for _, kv := range baseSets {
		k, v, _ := strings.Cut(kv, "=")
		if _, err := fmt.Sscanf(v, "%g", new(float64)); err != nil || strings.ContainsAny(v, "/") {
			v = fmt.Sprintf("%q", v)
		}
		fmt.Fprintf(&b, "%s = %s\n", k, v)
	}
	b.WriteString("\n[axes]\n")
	keys := make([]string, 0, len(axes))
	for k := range axes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%q = %s\n", k, axes[k])
	}
	return b.String()
}

func floats(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func seedList(n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprint(i)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// grids returns the experiments' grids; the probe arm trains on probeDir's mixed tokens.
func grids(dataDir, probeDir string, vocab, steps, seeds int) map[string]string {
	b := base(dataDir, vocab, steps)
	fixed := append(append([]string(nil), b...), "model.norm_eps=1e-12", "model.attn_gate=elementwise")
	withProbes := append([]string(nil), fixed...)
	for i, kv := range withProbes {
		if strings.HasPrefix(kv, "data.train=") {
			withProbes[i] = "data.train=" + filepath.Join(probeDir, data.TrainFile)
		}
	}
	ws := make([]float64, len(widths))
	for i, w := range widths {
		ws[i] = float64(w)
	}
	epsOnly := append(append([]string(nil), b...), "model.norm_eps=1e-12", "model.attn_gate=none")
	return map[string]string{
		ExpGamma:   gridText(fixed, map[string]string{"init.gamma": floats(gammas), "seed": seedList(seeds)}),
		ExpDefault: gridText(b, map[string]string{"init.gamma": "[0.5, 1]", "model.attn_gate": `["none", "elementwise"]`, "seed": seedList(seeds)}),
		ExpEpsOnly: gridText(epsOnly, map[string]string{"init.gamma": "[0.5, 1]", "seed": seedList(seeds)}),
		ExpSizes:   gridText(fixed, map[string]string{"init.gamma": "[0.5, 1]", "model.hidden_size": floats(ws), "seed": seedList(seeds)}),
		ExpProbes:  gridText(withProbes, map[string]string{"init.gamma": "[0.5, 1]", "seed": seedList(seeds)}),
	}
}

// runCost is the number of runs and their total cost in units of one width-128 run (FLOPs per token of each
// run's shape over the width-128 shape's).
func runCost(seeds int, vocab int) (runs int, cost float64) {
	flops := func(d int) float64 {
		p, _ := model.LookupPreset("tiny")
		c := p.Config
		c.Vocab, c.SeqLen, c.Dim, c.FFN = vocab, seqLen, d, model.DefaultFFN(d)
		return c.FLOPsPerToken()
	}
	ref := flops(128)
	runs = seeds * (len(gammas) + 4 + 2 + 2*len(widths) + 2)
	cost = float64(seeds) * float64(len(gammas)+4+2+2)
	for _, w := range widths {
		cost += float64(seeds) * 2 * flops(w) / ref
	}
	return runs, cost
}

// Options control a reproduction.
type Options struct {
	Out    string
	Budget time.Duration
	Seeds  int // 0: 2 for budgets under 4 h, else 3
	Steps  int // > 0: steps per run instead of sizing from the budget (tests)
	// CompareWindows limits the validation windows of the token-level comparison (0: all).
	CompareWindows int
	// ProbeTest is the held-out (and recalled) probes per kind the probe arm is scored on (0: 100).
	ProbeTest int
	Log       io.Writer
}

// Run prepares the data (once), sizes the runs to the budget from a throughput probe, runs the
// sweeps (resuming finished and interrupted runs), and evaluates the claims. Its result is also written to
// OUT/claims.json.
func Run(ctx context.Context, o Options) (*Result, error) {
	logf := func(format string, a ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format, a...)
		}
	}
	seeds := o.Seeds
	if seeds <= 0 {
		seeds = 2
		if o.Budget >= 4*time.Hour {
			seeds = 3
		}
	}
	dataDir := filepath.Join(o.Out, "data")
	st, err := data.ReadStats(dataDir)
	if err != nil {
		logf("preparing the embedded corpus in %s\n", dataDir)
		if st, err = data.PrepareEmbedded(dataDir, 4096, nil); err != nil {
			return nil, err
		}
	}
	probeTest := o.ProbeTest
	if probeTest <= 0 {
		probeTest = 100
	}
	probeDir := filepath.Join(o.Out, ProbeDataDir)
	if _, err := os.Stat(filepath.Join(probeDir, data.TrainFile)); err != nil {
		logf("mixing reasoning and memorisation probes into the corpus (%.0f%% of the tokens) in %s\n", 100*eval.ProbeMixShare, probeDir)
	}
	if err := eval.WriteProbeMix(probeDir, dataDir, st.VocabSize, eval.ProbeMixConfig(probeTest), eval.ProbeMixShare); err != nil {
		return nil, err
	}
	runs, cost := runCost(seeds, st.VocabSize)
	steps := o.Steps
	sizingPath := filepath.Join(o.Out, SizingFile)
	if steps <= 0 {
		// A reproduction that was stopped resumes with the steps it was sized to, not a new throughput probe's
		// (which would change every run's id and start the sweeps over).
		if p, err := readSizing(sizingPath); err == nil && p.Budget == o.Budget.String() && p.Seeds == seeds {
			logf("resuming the sizing in %s: %d runs of %d steps\n", sizingPath, runs, p.Steps)
			steps = p.Steps
		} else if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	if steps <= 0 {
		tps, err := probeThroughput(st.VocabSize)
		if err != nil {
			return nil, err
		}
		// Evaluation, diagnostics and checkpoints cost about 15% on top of training.
		steps = int(o.Budget.Seconds() * tps / 1.15 / cost / (batch * seqLen))
		logf("throughput probe: %.0f tokens/s on the width-128 model; %d runs of %d steps (%d tokens each) fit %s\n",
			tps, runs, steps, steps*batch*seqLen, o.Budget)
		if steps < 20 {
			return nil, fmt.Errorf("a budget of %s gives only %d steps per run for %d runs: give at least 30m", o.Budget, steps, runs)
		}
		b, _ := json.MarshalIndent(Sizing{Budget: o.Budget.String(), Seeds: seeds, Steps: steps, ProbeTokensPerS: tps}, "", "  ")
		if err := os.MkdirAll(o.Out, 0o755); err != nil {
			return nil, err
		}
		if err := model.WriteFileAtomic(sizingPath, append(b, '\n')); err != nil {
			return nil, err
		}
	}
	res := &Result{Steps: steps, Seeds: seeds, Runs: runs, Tokens: int64(steps * batch * seqLen), Out: o.Out}
	for _, exp := range Experiments {
		gtext := grids(dataDir, probeDir, st.VocabSize, steps, seeds)[exp]
		dir := filepath.Join(o.Out, exp)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		gpath := filepath.Join(o.Out, exp+".grid.toml")
		if err := model.WriteFileAtomic(gpath, []byte(gtext)); err != nil {
			return nil, err
		}
		g, err := sweep.ParseGrid(gpath)
		if err != nil {
			return nil, err
		}
		logf("\n== %s: %s\n", exp, dir)
		if _, err := sweep.Execute(ctx, g, dir, sweep.Options{Jobs: 1, Index: -1, Log: o.Log}); err != nil {
			return nil, fmt.Errorf("%s sweep: %w", exp, err)
		}
	}
	if err := res.evaluate(o.Out, dataDir, probeDir, o.CompareWindows); err != nil {
		return nil, err
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	if err := model.WriteFileAtomic(filepath.Join(o.Out, "claims.json"), append(b, '\n')); err != nil {
		return nil, err
	}
	return res, nil
}

// probeThroughput measures training tokens/s of the width-128 model over a few steps.
func probeThroughput(vocab int) (float64, error) {
	p, _ := model.LookupPreset("tiny")
	c := p.Config
	c.Vocab, c.SeqLen = vocab, seqLen
	pool := kernel.NewPool(0)
	defer pool.Close()
	m, err := model.New(c, batch, pool)
	if err != nil {
		return 0, err
	}
	in, tg := make([]int32, batch*seqLen), make([]int32, batch*seqLen)
	for i := range in {
		in[i], tg[i] = int32(i*7919%vocab), int32(i*104729%vocab)
	}
	var t0 time.Time
	for s := 0; s < 4; s++ {
		if s == 1 {
			t0 = time.Now()
		}
		if _, err := m.Forward(in, tg); err != nil {
			return 0, err
		}
		m.ZeroGrads()
		m.Backward()
	}
	return 3 * float64(len(in)) / time.Since(t0).Seconds(), nil
}

// meanSE is the mean and its standard error over the values. Fewer than two values give a NaN standard error
// (one seed says nothing of the noise between seeds), no value a NaN mean; verdict reads either as inconclusive.
func meanSE(xs []float64) (mean, se float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range xs {
		mean += x / float64(len(xs))
	}
	if len(xs) < 2 {
		return mean, math.NaN()
	}
	var v float64
	for _, x := range xs {
		v += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(v / float64(len(xs)-1) / float64(len(xs)))
}

// SizingFile (in the output directory) records how a budget was sized, so that an interrupted reproduction
// resumes with the same runs.
const SizingFile = "sizing.json"

// Sizing is how a reproduction was sized: the steps per run its throughput probe gave for the budget.
type Sizing struct {
	Budget          string  `json:"budget"`
	Seeds           int     `json:"seeds"`
	Steps           int     `json:"steps"`
	ProbeTokensPerS float64 `json:"probe_tokens_per_s"`
}

// readSizing reads a plan file, refusing one that cannot have been written by Run.
func readSizing(path string) (Sizing, error) {
	var p Sizing
	b, err := os.ReadFile(path)
	if err != nil {
		return p, err
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("%s: %w (delete it to size the budget again)", path, err)
	}
	if p.Steps < 1 || p.Seeds < 1 || p.Steps > 1e9 {
		return p, fmt.Errorf("%s: steps %d, seeds %d are not a sizing (delete it to size the budget again)", path, p.Steps, p.Seeds)
	}
	return p, nil
}
