package experiment

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/smallinit/smallinit/budget"
	"github.com/smallinit/smallinit/data"
)

// Description is what a plan will run under a budget, computed without training: what Run prints first and
// what `--print-plan` prints.
type Description struct {
	Plan     *Plan
	Budget   time.Duration
	Tier     *Tier
	Seeds    []uint64
	Estimate *budget.Estimate
	Arms     []ArmLine
	Tune     *TuneSpec
	Extra    []ExtraWork // a study design's (Options.Extra), on Seeds, costed in Estimate.ExtraCost
	// Scoring is a study design's scoring besides the final models' forward tokens (Options.ScoreTokens), timed
	// by the design and added to Estimate.Wall (AddScoring): reproduce's probe completions.
	Scoring []ScoreWork
	// PrecisionNote says why the arms' precision is what it is, printed after the precision line.
	PrecisionNote string
	// TuneWidths and TuneRungs are the LR sweep's widths and steps per trial of each rung (nil without [tune]).
	TuneWidths []int
	TuneRungs  []int
	// Corpus names the corpus (stats.json's source) and TrainTokens the tokens its runs draw from (0: not
	// known before the corpus is prepared); TrainTokensEstimated says it is the LR-selection slice's share
	// taken off the training split, before the slice is cut (trainTokens).
	Corpus               string
	TrainTokens          int64
	TrainTokensEstimated bool
	// Statement is what a study design registers before anything trains (package reproduce: its hypotheses
	// and their predicted power on these arms and seeds), set by the design: Write prints it first.
	Statement []byte
}

// ScoreWork is scoring a study design does that the scoring probe's forward tokens/s does not price (greedy
// completions, one token at a time): what it is (Name, Text, printed with the plan) and its expected time on
// this machine, as the design measured it.
type ScoreWork struct {
	Name, Text string
	Time       time.Duration
}

// AddScoring charges w to the description's expected wall time (Estimate.Wall, which Register holds against
// the budget) and lists it with the plan.
func (d *Description) AddScoring(w ScoreWork) {
	d.Scoring = append(d.Scoring, w)
	if d.Estimate != nil {
		d.Estimate.Wall += w.Time
	}
}

// ArmLine is one arm of a description: its runs (one per seed) share the recipe but the seed.
type ArmLine struct {
	Group, Arm string
	Seeds      []uint64
	Gamma      float64
	Width      int
	Eps        float64
	Gate       string
	LR         string // "tuned" or the shared value
	Precision  string // train.precision of its matmuls: "f32" or "bf16"
	Steps      int
	Tokens     int64 // per run
	Params     int64 // non-embedding
	// Ladder marks a rung of a ladder group; EmbeddingShare is the share of its parameters in the embedding and
	// head.
	Ladder         bool
	EmbeddingShare float64
}

// Describe sizes the plan for o (Options.Steps, the sizing file of the same budget, or a fresh throughput
// probe; tps > 0 skips the probe) and lists its arms, training nothing. The corpus need not be prepared: its
// vocabulary is then the plan's.
func Describe(p *Plan, o Options, tps float64) (*Description, error) {
	autoSeeds, err := begin(p, &o)
	if err != nil {
		return nil, err
	}
	out := &Outcome{Plan: p, Out: o.Out, Seeds: o.Seeds, DataDir: filepath.Join(o.Out, DataDir), Tier: p.TierFor(o.Budget)}
	p = p.Tiered(out.Tier)
	out.Plan = p
	st, err := data.ReadStats(out.DataDir)
	if src := o.dataSource(p); err != nil && src != "" {
		if st, err = data.ReadStats(src); err != nil {
			return nil, fmt.Errorf("--data %s: %w", src, err)
		}
	}
	if err != nil {
		st = &data.Stats{Source: "embedded", VocabSize: p.Data.Vocab}
	}
	out.Stats = st
	if p.Data.Probes {
		out.ProbeDir = filepath.Join(o.Out, ProbeDataDir)
	}
	if p, err = resolvePrecision(p, out, &o, false); err != nil {
		return nil, err
	}
	// The sizing on record: refused when it would size this plan's steps but was measured under another engine,
	// device or precision (Run refuses it the same way); its probes are reused only under their own key.
	key, err := o.probeKey(p, out)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(o.Out, budget.SizingFile)
	rec, err := budget.ReadSizing(path)
	ours := err == nil && rec.Differs(key) == ""
	if err == nil && !ours && o.Steps == 0 && rec.For(o.Budget) {
		return nil, rec.Check(path, key)
	}
	if ours && rec.Matches(o.Budget, len(o.Seeds)) {
		out.probeOverhead = time.Duration(rec.ProbeOverheadS * float64(time.Second))
		out.probeScoreTPS = rec.ProbeScoreTokensPerS
	}
	if autoSeeds {
		if err := chooseSeeds(context.Background(), p, out, &o, tps); err != nil {
			return nil, err
		}
		out.Seeds = o.Seeds
		if tps == 0 {
			tps = out.probeTPS
		}
	}
	if ours && rec.Matches(o.Budget, len(o.Seeds)) && o.Steps == 0 {
		o.Steps = rec.Steps
		if tps == 0 {
			tps = rec.ProbeTokensPerS
		}
	}
	e, err := estimate(context.Background(), p, out, &o, tps)
	if err != nil {
		return nil, err
	}
	if o.Steps == 0 && e.Steps < p.Budget.MinSteps {
		if p.Budget.RefuseBelowMin {
			return nil, fmt.Errorf("a budget of %s gives only %d steps per run for %d runs (fewer than %d): give a larger budget", o.Budget, e.Steps, e.Runs, p.Budget.MinSteps)
		}
		e.Steps = p.Budget.MinSteps
	}
	runs, err := expandChecked(p, out, e.Steps, &o)
	if err != nil {
		return nil, err
	}
	d := &Description{Plan: p, Budget: o.Budget, Tier: out.Tier, Seeds: o.Seeds, Estimate: e, Tune: p.Tune, Extra: o.Extra, PrecisionNote: o.precisionNote,
		Corpus: st.Source}
	d.TrainTokens, d.TrainTokensEstimated = trainTokens(p, out.DataDir, st)
	if p.Tune != nil {
		d.TuneWidths = p.tuneWidths(out.Tier)
		if !p.Tune.full() {
			d.TuneRungs = p.Tune.options(e.Steps).Rungs()
		}
	}
	at := map[string]int{}
	for _, r := range runs {
		name := r.arm
		if name == "" { // a sweep point: named by the values the reproduce-like plans vary
			name = fmt.Sprintf("gamma%g-d%d-eps%g-%s", r.cfg.Init.Gamma, r.cfg.Model.Dim, r.cfg.Model.NormEps, r.cfg.Model.AttnGate)
		}
		key := r.group.Name + "/" + name
		if i, ok := at[key]; ok {
			d.Arms[i].Seeds = append(d.Arms[i].Seeds, r.cfg.Seed)
			continue
		}
		c := r.cfg
		lr := fmt.Sprintf("%g", c.Schedule.PeakLR)
		if r.group.LR == LRTuned {
			lr = "tuned"
			if p.Tune != nil && !p.Tune.tunedLike(c) {
				lr = "inherited"
			}
		}
		at[key] = len(d.Arms)
		d.Arms = append(d.Arms, ArmLine{Group: r.group.Name, Arm: name, Seeds: []uint64{c.Seed}, Gamma: c.Init.Gamma, Width: c.Model.Dim,
			Eps: c.Model.NormEps, Gate: c.Model.AttnGate, LR: lr, Precision: cmp.Or(c.Train.Precision, "f32"), Steps: c.TotalSteps(),
			Tokens: int64(c.TotalSteps()) * int64(c.Train.BatchSize) * int64(c.Model.SeqLen), Params: c.Model.NonEmbeddingParams(),
			Ladder: r.group.Ladder, EmbeddingShare: float64(c.Model.NumParams()-c.Model.NonEmbeddingParams()) / float64(c.Model.NumParams())})
	}
	return d, nil
}

// Write prints the description: budget, tier, seeds, the arms, the LR sweep and the time arithmetic.
func (d *Description) Write(w io.Writer) error {
	e := d.Estimate
	if _, err := w.Write(d.Statement); err != nil {
		return err
	}
	fmt.Fprintf(w, "plan %s, budget %s", d.Plan.Name, d.Budget)
	if d.Tier != nil {
		fmt.Fprintf(w, " (tier %s)", d.Tier.Name)
	}
	fmt.Fprintf(w, ": %d seeds per verdict arm %v, %d runs of %d steps × %d tokens (%d tokens per run of the base shape)\n",
		len(d.Seeds), d.Seeds, e.Runs, e.Steps, e.StepTokens, int64(e.Steps)*int64(e.StepTokens))
	if d.Tier != nil && d.Tier.Smoke != "" {
		fmt.Fprintf(w, "SMOKE TEST: %s\n", d.Tier.Smoke)
	}
	if e.HorizonParams > 0 {
		fmt.Fprintf(w, "horizon: %d steps × %d tokens = %.3g tokens per non-embedding parameter at width %d (N = %d), sized before seeds and arms; every width of the ladder trains the same tokens per parameter (its own steps)%s\n",
			e.Steps, e.StepTokens, float64(e.Steps)*float64(e.StepTokens)/float64(e.HorizonParams), d.Plan.Horizon.Width, e.HorizonParams, ladderAt(d.Plan))
		if e.Wall > d.Budget {
			fmt.Fprintf(w, "OVER BUDGET: at this horizon the plan needs about %s, more than the budget %s: give a larger budget or fewer seeds (--seeds); it starts only with --force\n", e.Wall.Round(time.Minute), d.Budget)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "group\tarm\tseeds\tγ\twidth\tN (non-emb.)\tε\tgate\tLR\tsteps\ttokens/run")
	for _, a := range d.Arms {
		ss := make([]string, len(a.Seeds))
		for i, s := range a.Seeds {
			ss[i] = fmt.Sprint(s)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%g\t%d\t%d\t%.3g\t%s\t%s\t%d\t%d\n", a.Group, a.Arm, strings.Join(ss, ","), a.Gamma, a.Width, a.Params, a.Eps, a.Gate, a.LR, a.Steps, a.Tokens)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	d.writeCorpus(w)
	if line := precisionLine(d.Arms, d.PrecisionNote); line != "" {
		fmt.Fprintln(w, line)
	}
	for _, a := range d.Arms {
		if a.LR == "inherited" {
			fmt.Fprintf(w, "LR \"inherited\": the arm is not tuned itself; it runs at the rate tuned for its γ with the sweep's recipe (%s), which it differs from in ε or the gate\n", setsText(d.Tune.Sets))
			break
		}
	}
	if d.Tune.full() {
		for _, g := range d.Tune.Gammas {
			if lrs := d.Tune.gridOptions(d.Plan, true, g).LRs; !slices.Equal(lrs, d.Tune.LRs) {
				fmt.Fprintf(w, "LR grid rates for γ = %g: %v (the tier's tune_lrs)\n", g, lrs)
			}
		}
		fmt.Fprintf(w, "LR grid (package tune, at the full horizon): γ ∈ %v, rates %v (up to %d more past an edge) on tuning seeds %v at width %d, every trial its width's full horizon; a rate whose training loss spikes (primaries.spike_threshold) or diverges on any seed is vetoed; the best mean loss on the LR-selection slice wins (never the validation split). %s: %d trial steps at most\n",
			d.Tune.Gammas, d.Tune.LRs, d.Tune.Extend, d.Tune.Seeds, d.TuneWidths[0], d.transferText(), e.TuneSteps)
		d.writeLadder(w)
	} else if d.Tune != nil {
		fmt.Fprintf(w, "LR sweep (package tune): γ ∈ %v at widths %v, %d-value factor-2 grid around %g extended to bracket the best, successive halving over trials of %v steps, seed %d; trained without the LR-selection slice, scored on it (never the validation split): at most %d trial steps\n",
			d.Tune.Gammas, d.TuneWidths, d.Tune.Values, d.Tune.Center, d.TuneRungs, d.Tune.Seed, e.TuneSteps)
	}
	for i, x := range d.Extra {
		c := e.ExtraCost[i]
		fmt.Fprintf(w, "%s: %s, on seeds %v; %.0f base-model steps = %.1f min (taken from the budget)\n", x.Name, x.Text, d.Seeds, c,
			c*float64(e.StepTokens)/(e.TokensPerS*d.Plan.Budget.Efficiency)/60)
	}
	var scoring time.Duration
	for _, x := range d.Scoring {
		scoring += x.Time
		fmt.Fprintf(w, "%s: %s = %.1f min\n", x.Name, x.Text, x.Time.Minutes())
	}
	e.WriteTime(w, d.Plan.Budget.Efficiency, d.Budget, scoringText(scoring, len(d.Scoring)))
	return nil
}

// scoringText is the design's timed scoring (n items, t in all) as the time line adds it, "" without any.
func scoringText(t time.Duration, n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" + the design's scoring above %.1f min", t.Minutes())
}

// writeCorpus prints the corpus, the tokens the runs draw from, the epochs each width's runs see at each
// horizon, and a warning for every run that would see a token more than once; then the horizon series.
func (d *Description) writeCorpus(w io.Writer) {
	if d.TrainTokens > 0 {
		about, what := "", "the training split less the LR-selection slice"
		if d.TrainTokensEstimated {
			about, what = "about ", fmt.Sprintf("the training split less the LR-selection slice's share, %g%%, before the slice is cut", 100*data.DefaultSelectShare)
		}
		fmt.Fprintf(w, "corpus: %s: %s%d training tokens the runs draw from", d.Corpus, about, d.TrainTokens)
		if d.Plan.withoutSelection() {
			fmt.Fprintf(w, " (%s)", what)
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "corpus: %s (prepared when the plan runs: its epochs are printed then)\n", d.Corpus)
	}
	hs, cool := d.Plan.series()
	H := 0.0
	if hs != nil {
		H = hs[len(hs)-1]
	}
	seen := map[[2]int64]bool{}
	over := false
	for _, a := range d.Arms {
		if k := [2]int64{int64(a.Width), a.Tokens}; seen[k] || d.TrainTokens == 0 {
			continue
		} else {
			seen[k] = true
		}
		ep := float64(a.Tokens) / float64(d.TrainTokens)
		line := fmt.Sprintf("  width %d: %d tokens per run = %.2f epochs", a.Width, a.Tokens, ep)
		if a.Ladder && d.Plan.Ladder != nil {
			line = fmt.Sprintf("  width %d, ladder rung at %g tokens per parameter: %d tokens per run = %.2f epochs", a.Width, d.Plan.Ladder.TokensPerParam, a.Tokens, ep)
		}
		for _, h := range hs {
			if h == H || a.Ladder && d.Plan.Ladder != nil {
				continue
			}
			n := horizonSteps(a.Steps, h, H)
			line += fmt.Sprintf("; its %g-token branch %d steps = %.2f epochs", h, n, float64(n)*float64(a.Tokens)/float64(a.Steps)/float64(d.TrainTokens))
		}
		fmt.Fprintln(w, line)
		over = over || ep > 1
	}
	if over {
		fmt.Fprintf(w, "WARNING: some runs pass one epoch of %s: they see tokens more than once, which confounds the horizon with repetition (use a larger corpus: smallinit data prepare, --data)\n", d.Corpus)
	}
	if hs != nil {
		fmt.Fprintf(w, "horizon series %v tokens per non-embedding parameter: every run trains as a WSD trunk to %g (decay over its last %.0f%% of steps); each shorter horizon is a cooldown branch from the trunk's snapshot, decaying over its own last %.0f%%, equal to the independent WSD run of that horizon; the branches add %.0f%% to the trunks' training\n",
			hs, H, 100*cool, 100*cool, 100*d.Plan.horizonCost())
	}
}

// transferText states the LR grid's one transfer rule and where it is checked.
func (d *Description) transferText() string {
	w := d.TuneWidths[0]
	if len(d.TuneWidths) == 1 && d.Plan.Ladder != nil {
		return fmt.Sprintf("Every arm at the primaries' horizon runs at width %d: no transfer rule is needed (the ladder's rates come from its own grid, below); with the ladder's grid", w)
	}
	if len(d.TuneWidths) == 1 {
		return fmt.Sprintf("Every arm runs at width %d: no transfer rule is needed", w)
	}
	return fmt.Sprintf("One transfer rule for every γ: LR(d) = LR(%d)·(%d/d)^%g, checked at widths %v (the rule may cost at most %.4g nats there)",
		w, w, d.Tune.TransferExponent, d.TuneWidths[1:], d.Tune.transferTolerance())
}

// precisionLine says which matmul precision each arm runs: one precision for every arm, or each precision with
// its arms ("" without arms); note, when set, follows.
func precisionLine(arms []ArmLine, note string) string {
	precs := map[string][]string{}
	for _, a := range arms {
		precs[a.Precision] = append(precs[a.Precision], a.Group+"/"+a.Arm)
	}
	if note != "" {
		note = "; " + note
	}
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(precs)) {
		parts = append(parts, fmt.Sprintf("%s in %s", p, strings.Join(precs[p], ", ")))
	}
	switch len(precs) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("matmul precision: %s in every arm (train.precision%s)", arms[0].Precision, note)
	}
	return fmt.Sprintf("matmul precision: %s (train.precision%s)", strings.Join(parts, "; "), note)
}
