package reproduce

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/stats"
)

// Primaries is a plan's pre-registered primary comparisons ([primaries]), named before any run is trained
// (docs/definitions.md §7): H1 and H2 are their statements, judged together under a family-wise error
// of Alpha (Holm over the two); every other comparison of the plan is secondary. Delta is the smallest effect of
// interest of H1 in nats; 0 derives it from EffectiveSize through the prior γ = 0.5 ladder slope, the loss a
// model EffectiveSize larger would save: δ = −slope·ln(1 + EffectiveSize). H2's margin is δ spread over the
// ladder's span of ln N (DeltaH2). The priors (paired SDs of each primary per seed, the ladder slope) come from
// an earlier run named by PriorSource; they predict each primary's minimum detectable effect before training.
//
// The horizon the primaries' runs train to (their width, recipe and tokens per parameter, the horizon series)
// is experiment's (experiment.Horizon, from the same table), embedded here so that the verdicts' record
// (claims.json's "primaries") keeps one flat object. PlateauTolerance is the largest relative spread of γ = 1's
// last three mean stable ranks for its condensation to count as over.
type Primaries struct {
	H1, H2           string
	Alpha            float64
	Delta            float64
	EffectiveSize    float64
	PriorLadderSlope float64
	PriorSDH1        float64
	PriorSDH2        float64
	PriorSource      string
	experiment.Horizon
	MinWidths        int     // H2: fewest widths of the ladder
	MinSpan          float64 // H2: largest over smallest width, at least
	PlateauTolerance float64
	Power            float64
	MaxSeeds         int // the most seeds SeedsNeeded looks at
}

// primariesFile is the TOML layout of [primaries]'s keys that are the study's (experiment reads the horizon
// keys: width, tokens_per_param, horizons, cooldown, spike_threshold, set).
type primariesFile struct {
	H1               string  `toml:"h1"`
	H2               string  `toml:"h2"`
	Alpha            float64 `toml:"alpha"`
	Delta            float64 `toml:"delta"`
	EffectiveSize    float64 `toml:"effective_size"`
	PriorLadderSlope float64 `toml:"prior_ladder_slope"`
	PriorSDH1        float64 `toml:"prior_sd_h1"`
	PriorSDH2        float64 `toml:"prior_sd_h2"`
	PriorSource      string  `toml:"prior_source"`
	MinWidths        int     `toml:"min_widths"`
	MinSpan          float64 `toml:"min_span"`
	PlateauTolerance float64 `toml:"plateau_tolerance"`
}

// parsePrimaries reads the study's keys of the plan's [primaries] (nil without the table), checks them and
// fills their defaults (α 0.05, 80% power, ≥ 4 widths spanning ≥ 2.5×, plateau within 5%). The horizon is the
// plan's (p.Horizon): a tier that changes it gives the primaries of that tier through primariesAt.
func parsePrimaries(p *experiment.Plan) (*Primaries, error) {
	var f primariesFile
	ok, err := p.DecodeStudy(experiment.TablePrimaries, &f)
	if err != nil || !ok {
		return nil, err
	}
	pr := &Primaries{H1: f.H1, H2: f.H2, Alpha: f.Alpha, Delta: f.Delta, EffectiveSize: f.EffectiveSize,
		PriorLadderSlope: f.PriorLadderSlope, PriorSDH1: f.PriorSDH1, PriorSDH2: f.PriorSDH2, PriorSource: f.PriorSource,
		MinWidths: f.MinWidths, MinSpan: f.MinSpan, PlateauTolerance: f.PlateauTolerance, Power: stats.Power, MaxSeeds: 64}
	if p.Horizon != nil {
		pr.Horizon = *p.Horizon
	}
	if pr.H1 == "" || pr.H2 == "" {
		return nil, fmt.Errorf("primaries: h1 and h2 state the two primary comparisons before training")
	}
	if pr.Alpha == 0 {
		pr.Alpha = 0.05
	}
	if pr.MinWidths == 0 {
		pr.MinWidths = 4
	}
	if pr.MinSpan == 0 {
		pr.MinSpan = 2.5
	}
	if pr.PlateauTolerance == 0 {
		pr.PlateauTolerance = 0.05
	}
	for _, c := range []struct {
		key     string
		v       float64
		ok      bool
		between string
	}{
		{"alpha", pr.Alpha, pr.Alpha > 0 && pr.Alpha < 0.5, "in (0, 0.5)"},
		{"delta", pr.Delta, pr.Delta >= 0 && pr.Delta < 10, "in [0, 10) nats"},
		{"effective_size", pr.EffectiveSize, pr.EffectiveSize >= 0 && pr.EffectiveSize < 100, "in [0, 100)"},
		{"prior_ladder_slope", pr.PriorLadderSlope, pr.PriorLadderSlope <= 0 && pr.PriorLadderSlope > -10, "in (−10, 0] nats per ln N"},
		{"prior_sd_h1", pr.PriorSDH1, pr.PriorSDH1 >= 0 && pr.PriorSDH1 < 10, "in [0, 10) nats"},
		{"prior_sd_h2", pr.PriorSDH2, pr.PriorSDH2 >= 0 && pr.PriorSDH2 < 10, "in [0, 10) nats per ln N"},
		{"min_widths", float64(pr.MinWidths), pr.MinWidths >= 2 && pr.MinWidths <= 64, "in [2, 64]"},
		{"min_span", pr.MinSpan, pr.MinSpan >= 1 && pr.MinSpan <= 1e3, "in [1, 1000]"},
		{"plateau_tolerance", pr.PlateauTolerance, pr.PlateauTolerance > 0 && pr.PlateauTolerance < 1, "in (0, 1)"},
	} {
		if !c.ok || math.IsNaN(c.v) {
			return nil, fmt.Errorf("primaries.%s = %g: want a value %s", c.key, c.v, c.between)
		}
	}
	if pr.Delta == 0 && (pr.EffectiveSize == 0 || pr.PriorLadderSlope == 0) {
		return nil, fmt.Errorf("primaries: give delta, or effective_size and prior_ladder_slope to derive it")
	}
	return pr, nil
}

// at is the primaries with the horizon of plan p as its tier runs it (Plan.Tiered); nil stays nil.
func (pr *Primaries) at(p *experiment.Plan) *Primaries {
	if pr == nil {
		return nil
	}
	q := *pr
	if p.Horizon != nil {
		q.Horizon = *p.Horizon
	}
	return &q
}

// DeltaH1 is H1's smallest effect of interest in nats (Delta, or −PriorLadderSlope·ln(1 + EffectiveSize)).
func (pr *Primaries) DeltaH1() float64 {
	if pr.Delta > 0 {
		return pr.Delta
	}
	return -pr.PriorLadderSlope * math.Log1p(pr.EffectiveSize)
}

// DeltaH2 is H2's smallest effect of interest, in nats per ln N: a gain that grows by DeltaH1 across a ladder
// whose non-embedding sizes span lnSpan = ln(N_max/N_min).
func (pr *Primaries) DeltaH2(lnSpan float64) float64 {
	if !(lnSpan > 0) {
		return math.NaN()
	}
	return pr.DeltaH1() / lnSpan
}

// FirstStepAlpha is the level of Holm's first step over the two primaries, α/2: the level at which a primary's
// MDE is predicted (the one that decides it when the other primary is not rejected).
func (pr *Primaries) FirstStepAlpha() float64 { return pr.Alpha / 2 }

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
func (pr *Primaries) PowerOf(n int, lnSpan float64) []Power {
	a := pr.FirstStepAlpha()
	one := func(name string, delta, sd float64) Power {
		pw := Power{Name: name, Delta: delta, PriorSD: sd, Seeds: n, MDE: math.NaN()}
		if sd > 0 && n >= 2 {
			pw.MDE = stats.PredictedMDE(n, sd, a, pr.Power)
			if delta > 0 {
				pw.SeedsNeeded = stats.SeedsFor(delta, sd, a, pr.Power, pr.MaxSeeds)
			}
		}
		return pw
	}
	return []Power{one("H1", pr.DeltaH1(), pr.PriorSDH1), one("H2", pr.DeltaH2(lnSpan), pr.PriorSDH2)}
}

// Write prints the primaries and their predicted power: what the plan prints before any other number.
func (pr *Primaries) Write(w io.Writer, n int, lnSpan float64) {
	fmt.Fprintf(w, "primary comparisons (pre-registered; Holm over the two at family-wise α = %g; every other comparison is secondary):\n", pr.Alpha)
	fmt.Fprintf(w, "  H1: %s\n  H2: %s\n", pr.H1, pr.H2)
	how := fmt.Sprintf("δ = %g nats (plan)", pr.Delta)
	if pr.Delta == 0 {
		how = fmt.Sprintf("δ = −(prior γ = 0.5 ladder slope %g per ln N)·ln(1 + %g) = %.4f nats: the loss a %.0f%% larger γ = 0.5 model saved on that prior ladder", pr.PriorLadderSlope, pr.EffectiveSize, pr.DeltaH1(), 100*pr.EffectiveSize)
	}
	fmt.Fprintf(w, "  smallest effect of interest: %s", how)
	if lnSpan > 0 {
		fmt.Fprintf(w, "; H2's margin δ/ln(N_max/N_min) = %.4g nats per ln N", pr.DeltaH2(lnSpan))
	}
	fmt.Fprintln(w)
	if hs, cool := pr.Horizon.Series(); hs != nil {
		fmt.Fprintf(w, "  horizon series %v tokens per parameter from one WSD trunk per run (cooldown %g of each horizon's steps): the primaries at %g; the shorter horizons are secondaries\n", hs, cool, pr.TokensPerParam)
	}
	if pr.TokensPerParam > 0 {
		fmt.Fprintf(w, "  horizon: %g tokens per non-embedding parameter at width %d; γ = 1's mean stable rank must have plateaued (last 3 diagnostics within %g%%), else a comparison is untestable at this horizon\n",
			pr.TokensPerParam, pr.Width, 100*pr.PlateauTolerance)
	}
	for _, pw := range pr.PowerOf(n, lnSpan) {
		if pw.Name == "H2" && !(lnSpan > 0) {
			fmt.Fprintf(w, "  H2: this budget's tier runs no ladder: H2 is not tested (inconclusive by design)\n")
			continue
		}
		if !(pw.PriorSD > 0) {
			fmt.Fprintf(w, "  %s: no variance prior (prior_sd_%s): its power cannot be predicted\n", pw.Name, strings.ToLower(pw.Name))
			continue
		}
		fmt.Fprintf(w, "  %s: predicted MDE %.4g at %d seeds (noncentral t, α = %g, %.0f%% power, prior paired SD %.4g from %s); δ %.4g",
			pw.Name, pw.MDE, pw.Seeds, pr.FirstStepAlpha(), 100*pr.Power, pw.PriorSD, pr.PriorSource, pw.Delta)
		switch {
		case pw.SeedsNeeded == 0:
			fmt.Fprintf(w, ": NOT REACHABLE with up to %d seeds at this noise: a verdict can be \"supported\" or \"contradicted\" only for effects of about the MDE\n", pr.MaxSeeds)
		case pw.SeedsNeeded <= n:
			fmt.Fprintf(w, ": reached (%d seeds suffice)\n", pw.SeedsNeeded)
		default:
			fmt.Fprintf(w, ": NOT reached at %d seeds (%d needed)\n", n, pw.SeedsNeeded)
		}
	}
}

// lnSpan is ln(N_max/N_min) over the sizes ns: the span of a ladder in ln N, the denominator of H2's margin
// (docs/definitions.md §7); NaN with fewer than two sizes or a size that is not positive, 0 when they are all
// one size (either gives no margin: DeltaH2 is NaN).
func lnSpan(ns []float64) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, n := range ns {
		lo, hi = math.Min(lo, n), math.Max(hi, n)
	}
	if len(ns) < 2 || !(lo > 0) {
		return math.NaN()
	}
	return math.Log(hi / lo)
}
