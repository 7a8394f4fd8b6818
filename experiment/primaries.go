package experiment

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/stats"
	"github.com/smallinit/smallinit/train"
)

// Primaries is a plan's pre-registered primary comparisons ([primaries]), named before any run is trained
// (docs/definitions.md §7): H1 and H2 are their statements, judged together under a family-wise error
// of Alpha (Holm over the two); every other comparison of the plan is secondary. Delta is the smallest effect of
// interest of H1 in nats; 0 derives it from EffectiveSize through the prior γ = 0.5 ladder slope, the loss a
// model EffectiveSize larger would save: δ = −slope·ln(1 + EffectiveSize). H2's margin is δ spread over the
// ladder's span of ln N (DeltaH2). The priors (paired SDs of each primary per seed, the ladder slope) come from
// an earlier run named by PriorSource; they predict each primary's minimum detectable effect before training.
//
// The horizon fields state how long a run must be for a verdict to speak to the claim: TokensPerParam sizes the
// runs (tokens per non-embedding parameter at the primary width), PlateauTolerance is the largest relative spread
// of γ = 1's last three mean stable ranks for its condensation to count as over, SpikeThreshold the largest
// rise of the training loss over its running minimum (nats) a run may show before its comparison is flagged.
type Primaries struct {
	H1, H2           string
	Alpha            float64
	Delta            float64
	EffectiveSize    float64
	PriorLadderSlope float64
	PriorSDH1        float64
	PriorSDH2        float64
	PriorSource      string
	Width            int     // H1's width (the γ grid's)
	MinWidths        int     // H2: fewest widths of the ladder
	MinSpan          float64 // H2: largest over smallest width, at least
	TokensPerParam   float64
	PlateauTolerance float64
	SpikeThreshold   float64
	Power            float64
	// Horizons, when it has more than one value, is the horizon series in tokens per non-embedding parameter
	// (its largest is TokensPerParam): every run of a derived group and every full-horizon LR trial trains as a
	// WSD trunk to the longest, and a cooldown branch (train.StartOrResumeBranch) of each shorter horizon decays
	// over Cooldown of that horizon's steps (docs/definitions.md §3, "Horizon series").
	Horizons []float64
	Cooldown float64
	MaxSeeds int            // the most seeds SeedsNeeded looks at
	Sets     []override.Set // the primary arms' recipe on top of the base (e.g. both fixes): sizes N
}

// primariesFile is the TOML layout of [primaries].
type primariesFile struct {
	H1               string         `toml:"h1"`
	H2               string         `toml:"h2"`
	Alpha            float64        `toml:"alpha"`
	Delta            float64        `toml:"delta"`
	EffectiveSize    float64        `toml:"effective_size"`
	PriorLadderSlope float64        `toml:"prior_ladder_slope"`
	PriorSDH1        float64        `toml:"prior_sd_h1"`
	PriorSDH2        float64        `toml:"prior_sd_h2"`
	PriorSource      string         `toml:"prior_source"`
	Width            int            `toml:"width"`
	MinWidths        int            `toml:"min_widths"`
	MinSpan          float64        `toml:"min_span"`
	TokensPerParam   float64        `toml:"tokens_per_param"`
	PlateauTolerance float64        `toml:"plateau_tolerance"`
	SpikeThreshold   float64        `toml:"spike_threshold"`
	Horizons         []float64      `toml:"horizons"`
	Cooldown         float64        `toml:"cooldown"`
	Set              map[string]any `toml:"set"`
}

// parsePrimaries checks [primaries] and fills its defaults (α 0.05, 80% power, ≥ 4 widths spanning ≥ 2.5×,
// plateau within 5%).
func parsePrimaries(f *primariesFile) (*Primaries, error) {
	if f == nil {
		return nil, nil
	}
	p := &Primaries{H1: f.H1, H2: f.H2, Alpha: f.Alpha, Delta: f.Delta, EffectiveSize: f.EffectiveSize,
		PriorLadderSlope: f.PriorLadderSlope, PriorSDH1: f.PriorSDH1, PriorSDH2: f.PriorSDH2, PriorSource: f.PriorSource,
		Width: f.Width, MinWidths: f.MinWidths, MinSpan: f.MinSpan, TokensPerParam: f.TokensPerParam,
		PlateauTolerance: f.PlateauTolerance, SpikeThreshold: f.SpikeThreshold, Power: stats.Power, MaxSeeds: 64,
		Sets: override.Flatten(f.Set), Horizons: f.Horizons, Cooldown: f.Cooldown}
	if err := checkHorizons(p.TokensPerParam, p.Horizons, p.Cooldown); err != nil {
		return nil, fmt.Errorf("primaries: %w", err)
	}
	if p.H1 == "" || p.H2 == "" {
		return nil, fmt.Errorf("primaries: h1 and h2 state the two primary comparisons before training")
	}
	if p.Alpha == 0 {
		p.Alpha = 0.05
	}
	if p.MinWidths == 0 {
		p.MinWidths = 4
	}
	if p.MinSpan == 0 {
		p.MinSpan = 2.5
	}
	if p.PlateauTolerance == 0 {
		p.PlateauTolerance = 0.05
	}
	for _, c := range []struct {
		key     string
		v       float64
		ok      bool
		between string
	}{
		{"alpha", p.Alpha, p.Alpha > 0 && p.Alpha < 0.5, "in (0, 0.5)"},
		{"delta", p.Delta, p.Delta >= 0 && p.Delta < 10, "in [0, 10) nats"},
		{"effective_size", p.EffectiveSize, p.EffectiveSize >= 0 && p.EffectiveSize < 100, "in [0, 100)"},
		{"prior_ladder_slope", p.PriorLadderSlope, p.PriorLadderSlope <= 0 && p.PriorLadderSlope > -10, "in (−10, 0] nats per ln N"},
		{"prior_sd_h1", p.PriorSDH1, p.PriorSDH1 >= 0 && p.PriorSDH1 < 10, "in [0, 10) nats"},
		{"prior_sd_h2", p.PriorSDH2, p.PriorSDH2 >= 0 && p.PriorSDH2 < 10, "in [0, 10) nats per ln N"},
		{"width", float64(p.Width), p.Width > 0 && p.Width <= 1<<16, "in [1, 65536]"},
		{"min_widths", float64(p.MinWidths), p.MinWidths >= 2 && p.MinWidths <= 64, "in [2, 64]"},
		{"min_span", p.MinSpan, p.MinSpan >= 1 && p.MinSpan <= 1e3, "in [1, 1000]"},
		{"tokens_per_param", p.TokensPerParam, p.TokensPerParam >= 0 && p.TokensPerParam <= 1e4, "in [0, 10000]"},
		{"plateau_tolerance", p.PlateauTolerance, p.PlateauTolerance > 0 && p.PlateauTolerance < 1, "in (0, 1)"},
		{"spike_threshold", p.SpikeThreshold, p.SpikeThreshold >= 0 && p.SpikeThreshold < 100, "in [0, 100) nats"},
	} {
		if !c.ok || math.IsNaN(c.v) {
			return nil, fmt.Errorf("primaries.%s = %g: want a value %s", c.key, c.v, c.between)
		}
	}
	if p.Delta == 0 && (p.EffectiveSize == 0 || p.PriorLadderSlope == 0) {
		return nil, fmt.Errorf("primaries: give delta, or effective_size and prior_ladder_slope to derive it")
	}
	return p, nil
}

// DeltaH1 is H1's smallest effect of interest in nats (Delta, or −PriorLadderSlope·ln(1 + EffectiveSize)).
func (p *Primaries) DeltaH1() float64 {
	if p.Delta > 0 {
		return p.Delta
	}
	return -p.PriorLadderSlope * math.Log1p(p.EffectiveSize)
}

// DeltaH2 is H2's smallest effect of interest, in nats per ln N: a gain that grows by DeltaH1 across a ladder
// whose non-embedding sizes span lnSpan = ln(N_max/N_min).
func (p *Primaries) DeltaH2(lnSpan float64) float64 {
	if !(lnSpan > 0) {
		return math.NaN()
	}
	return p.DeltaH1() / lnSpan
}

// FirstStepAlpha is the level of Holm's first step over the two primaries, α/2: the level at which a primary's
// MDE is predicted (the one that decides it when the other primary is not rejected).
func (p *Primaries) FirstStepAlpha() float64 { return p.Alpha / 2 }

// Power of one primary before training: its predicted MDE on n seeds from its prior paired SD, and the fewest
// seeds that bring the MDE under its δ (0: none up to MaxSeeds).
type Power struct {
	Name        string
	Delta       float64
	PriorSD     float64
	Seeds       int
	MDE         float64
	SeedsNeeded int
}

// PowerOf predicts each primary's MDE at n seeds; lnSpan is the ladder's ln(N_max/N_min) (H2's margin).
func (p *Primaries) PowerOf(n int, lnSpan float64) []Power {
	a := p.FirstStepAlpha()
	one := func(name string, delta, sd float64) Power {
		pw := Power{Name: name, Delta: delta, PriorSD: sd, Seeds: n, MDE: math.NaN()}
		if sd > 0 && n >= 2 {
			pw.MDE = stats.PredictedMDE(n, sd, a, p.Power)
			if delta > 0 {
				pw.SeedsNeeded = stats.SeedsFor(delta, sd, a, p.Power, p.MaxSeeds)
			}
		}
		return pw
	}
	return []Power{one("H1", p.DeltaH1(), p.PriorSDH1), one("H2", p.DeltaH2(lnSpan), p.PriorSDH2)}
}

// Write prints the primaries and their predicted power: what Describe prints before any other number.
func (p *Primaries) Write(w io.Writer, n int, lnSpan float64) {
	fmt.Fprintf(w, "primary comparisons (pre-registered; Holm over the two at family-wise α = %g; every other comparison is secondary):\n", p.Alpha)
	fmt.Fprintf(w, "  H1: %s\n  H2: %s\n", p.H1, p.H2)
	how := fmt.Sprintf("δ = %g nats (plan)", p.Delta)
	if p.Delta == 0 {
		how = fmt.Sprintf("δ = −(prior γ = 0.5 ladder slope %g per ln N)·ln(1 + %g) = %.4f nats: the loss a %.0f%% larger model saves", p.PriorLadderSlope, p.EffectiveSize, p.DeltaH1(), 100*p.EffectiveSize)
	}
	fmt.Fprintf(w, "  smallest effect of interest: %s", how)
	if lnSpan > 0 {
		fmt.Fprintf(w, "; H2's margin δ/ln(N_max/N_min) = %.4g nats per ln N", p.DeltaH2(lnSpan))
	}
	fmt.Fprintln(w)
	if hs, cool := (&Plan{Primaries: p}).series(); hs != nil {
		fmt.Fprintf(w, "  horizon series %v tokens per parameter from one WSD trunk per run (cooldown %g of each horizon's steps): the primaries at %g; the shorter horizons are secondaries\n", hs, cool, p.TokensPerParam)
	}
	if p.TokensPerParam > 0 {
		fmt.Fprintf(w, "  horizon: %g tokens per non-embedding parameter at width %d; γ = 1's mean stable rank must have plateaued (last 3 diagnostics within %g%%), else a comparison is untestable at this horizon\n",
			p.TokensPerParam, p.Width, 100*p.PlateauTolerance)
	}
	for _, pw := range p.PowerOf(n, lnSpan) {
		if pw.Name == "H2" && !(lnSpan > 0) {
			fmt.Fprintf(w, "  H2: this budget's tier runs no ladder: H2 is not tested (inconclusive by design)\n")
			continue
		}
		if !(pw.PriorSD > 0) {
			fmt.Fprintf(w, "  %s: no variance prior (prior_sd_%s): its power cannot be predicted\n", pw.Name, strings.ToLower(pw.Name))
			continue
		}
		fmt.Fprintf(w, "  %s: predicted MDE %.4g at %d seeds (noncentral t, α = %g, %.0f%% power, prior paired SD %.4g from %s); δ %.4g",
			pw.Name, pw.MDE, pw.Seeds, p.FirstStepAlpha(), 100*p.Power, pw.PriorSD, p.PriorSource, pw.Delta)
		switch {
		case pw.SeedsNeeded == 0:
			fmt.Fprintf(w, ": NOT REACHABLE with up to %d seeds at this noise: a verdict can be \"supported\" or \"contradicted\" only for effects of about the MDE\n", p.MaxSeeds)
		case pw.SeedsNeeded <= n:
			fmt.Fprintf(w, ": reached (%d seeds suffice)\n", pw.SeedsNeeded)
		default:
			fmt.Fprintf(w, ": NOT reached at %d seeds (%d needed)\n", n, pw.SeedsNeeded)
		}
	}
}

// horizonSteps is the steps per run that give the primaries' TokensPerParam tokens per non-embedding parameter
// at their width (docs/definitions.md §7, "Horizon before breadth"), ceil(TokensPerParam·N/(batch·T)), and that
// N (of the base recipe with the primaries' Sets at Width); 0 steps when the plan sizes its runs from the budget
// instead.
func (p *Plan) horizonSteps(out *Outcome) (int, int64, error) {
	pr := p.Primaries
	if pr == nil || !(pr.TokensPerParam > 0) {
		return 0, 0, nil
	}
	sets := append(append(out.baseSets(p, nil, 100), pr.Sets...), override.Set{Key: "model.hidden_size", Value: int64(pr.Width)})
	c, err := train.LoadSets("", sets)
	if err != nil {
		return 0, 0, fmt.Errorf("plan %s: primaries.width %d: %w", p.Name, pr.Width, err)
	}
	n := c.Model.NonEmbeddingParams()
	steps := math.Ceil(pr.TokensPerParam * float64(n) / float64(c.Train.BatchSize*c.Model.SeqLen))
	if steps > MaxSteps {
		return 0, 0, fmt.Errorf("plan %s: primaries.tokens_per_param %g gives %g steps per run, more than %d", p.Name, pr.TokensPerParam, steps, MaxSteps)
	}
	return int(steps), n, nil
}

// ladderSpan is ln(N_max/N_min) over the arms of the plan's ladder groups and the primaries' width (NaN with
// fewer than two sizes).
func (d *Description) ladderSpan() float64 {
	ladder := map[string]bool{}
	for _, g := range d.Plan.Groups {
		ladder[g.Name] = g.Ladder
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, a := range d.Arms {
		if ladder[a.Group] || a.Width == d.Plan.Primaries.Width {
			lo, hi = math.Min(lo, float64(a.Params)), math.Max(hi, float64(a.Params))
		}
	}
	if !(lo > 0) || !(hi > lo) {
		return math.NaN()
	}
	return math.Log(hi / lo)
}
