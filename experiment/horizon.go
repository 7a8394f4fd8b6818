package experiment

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"github.com/smallinit/smallinit/internal/finitejson"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train"
)

// The horizon series (docs/definitions.md §3, "Horizon series"): with Horizon.Horizons = [h_1 < … < h_k], a
// plan's runs are WSD trunks that train to h_k tokens per non-embedding parameter, and every shorter h_i is a
// cooldown branch that leaves the trunk at the start of its own decay. A branch is the independent WSD run of
// its horizon (train.StartOrResumeBranch), so one trunk gives the whole series for the cost of its branches'
// decays.

// DefaultCooldown is the fraction of a horizon's steps its WSD decay takes when a plan gives none.
const DefaultCooldown = 0.2

// checkHorizons checks a horizon series: increasing positive tokens per parameter whose largest is tpp (when
// tpp > 0), and a cooldown fraction in (0, 0.5] (0: DefaultCooldown), which only a series may set.
func checkHorizons(tpp float64, hs []float64, cool float64) error {
	if len(hs) == 0 {
		if cool != 0 {
			return fmt.Errorf("cooldown %g without horizons", cool)
		}
		return nil
	}
	for i, h := range hs {
		if !(h > 0) || h > 1e4 || i > 0 && !(h > hs[i-1]) {
			return fmt.Errorf("horizons %v: want increasing tokens per parameter in (0, 10000]", hs)
		}
	}
	if tpp > 0 && hs[len(hs)-1] != tpp {
		return fmt.Errorf("horizons %v: the longest must be tokens_per_param %g", hs, tpp)
	}
	if cool < 0 || cool > 0.5 || math.IsNaN(cool) {
		return fmt.Errorf("cooldown %g: want a fraction of each horizon's steps in (0, 0.5] (0: %g)", cool, DefaultCooldown)
	}
	return nil
}

// series is the plan's horizon series and cooldown fraction (Horizon.Series).
func (p *Plan) series() ([]float64, float64) { return p.Horizon.Series() }

// Series is the horizon series and its cooldown fraction (DefaultCooldown when none is given); nil when h is
// nil or has fewer than two horizons.
func (h *Horizon) Series() ([]float64, float64) {
	if h == nil || len(h.Horizons) < 2 {
		return nil, 0
	}
	cool := h.Cooldown
	if cool == 0 {
		cool = DefaultCooldown
	}
	return h.Horizons, cool
}

// horizonSteps are the steps of horizon h for a trunk of steps at the series' longest horizon H:
// ceil(steps·h/H), so a run's horizons keep its tokens per parameter in proportion.
func horizonSteps(steps int, h, H float64) int { return max(1, int(math.Ceil(float64(steps)*h/H))) }

// decaySteps is the WSD decay of a run of steps: round(cool·steps).
func decaySteps(steps int, cool float64) int { return int(math.Round(cool * float64(steps))) }

// branchRun is one cooldown branch of a trunk: its horizon, directory and config.
type branchRun struct {
	horizon float64
	dir     string
	cfg     recipe.Config
}

// seriesKeys are the keys a horizon series sets in every run (horizonRecipe), with the value it sets ("" for
// a key it computes). A group or arm that sets one to anything else is refused, naming both values, rather than
// silently overwritten (a cosine arm trained as WSD, so that a cosine − WSD pair compares WSD with WSD); so is
// a base train.snapshot_steps, which the series would drop. The base's schedule keys are the recipe of the
// plan's tiers without a series (reproduce.toml's cosine): under a series they are replaced with a note.
var seriesKeys = map[string]string{recipe.KeyScheduleKind: recipe.ScheduleWSD, keySnapshotSteps: "", keyDecaySteps: ""}

const (
	keySnapshotSteps = "train.snapshot_steps"
	keyDecaySteps    = "schedule.decay_steps"
)

// checkSeriesKeys refuses a plan with a horizon series whose recipe sets a key the series sets (seriesKeys),
// and says which base keys the series replaces through logf.
func (p *Plan) checkSeriesKeys(logf func(string, ...any)) error {
	hs, _ := p.series()
	if hs == nil {
		return nil
	}
	conflict := func(s override.Set) (string, bool) {
		want, ok := seriesKeys[s.Key]
		if !ok || want != "" && fmt.Sprint(s.Value) == want {
			return "", false
		}
		if want == "" {
			return "a value of its own", true
		}
		return fmt.Sprintf("%q", want), true
	}
	for _, s := range p.Base {
		if series, ok := conflict(s); ok && s.Key == keySnapshotSteps {
			return fmt.Errorf("plan %s: the base recipe sets %s = %v, but the horizon series %v sets it to %s in every trunk: drop the key, or drop the series (primaries.horizons)",
				p.Name, s.Key, s.Value, hs, series)
		} else if ok {
			logf("note: plan %s: the horizon series %v sets %s to %s in every run, in place of the base recipe's %v\n", p.Name, hs, s.Key, series, s.Value)
		}
	}
	for i := range p.Groups {
		g := &p.Groups[i]
		if p.ownHorizon(g) {
			continue // a ladder group at its own horizon: singleHorizon, which sets the same keys for its rungs
		}
		for _, a := range append([]Arm{{Name: "", Sets: g.Sets}}, g.Arms...) {
			for _, s := range a.Sets {
				if series, ok := conflict(s); ok {
					where := "group " + g.Name
					if a.Name != "" {
						where += " arm " + a.Name
					}
					return fmt.Errorf("plan %s: %s sets %s = %v, but the horizon series %v sets it to %s in every run (WSD trunks and their cooldown branches): drop the key, or drop the series (primaries.horizons)",
						p.Name, where, s.Key, s.Value, hs, series)
				}
			}
		}
	}
	return nil
}

// horizonRecipe makes c, a run of c.TotalSteps() steps at the series' longest horizon, a WSD trunk: the decay
// over the cooldown fraction of its steps, the warmup the plan's per-step divisor gives the series' shortest
// horizon (every branch shares the trunk's warmup), and a snapshot at every shorter horizon's branch point. It
// returns the trunk and its branches, each named dir(horizon, steps), with the plan's per-step keys of its own
// steps. Without a series c comes back unchanged.
func (p *Plan) horizonRecipe(c recipe.Config, dir func(h float64, steps int) string) (recipe.Config, []branchRun, error) {
	hs, cool := p.series()
	if hs == nil {
		return c, nil, nil
	}
	H, S := hs[len(hs)-1], c.TotalSteps()
	c.Train.Steps, c.Train.Tokens = S, 0
	c.Schedule.Kind, c.Schedule.DecaySteps = recipe.ScheduleWSD, decaySteps(S, cool)
	shortest := horizonSteps(S, hs[0], H)
	for _, ps := range p.PerStep {
		if ps.Key == recipe.KeyWarmup {
			c.Schedule.Warmup = max(shortest/ps.Div, 1)
		}
	}
	var branches []branchRun
	c.Train.SnapshotSteps = nil
	for _, h := range hs[:len(hs)-1] {
		n := horizonSteps(S, h, H)
		b := c
		b.Train.Steps, b.Train.SnapshotSteps = n, nil
		b.Schedule.DecaySteps = decaySteps(n, cool)
		var sets []override.Set
		for _, ps := range p.PerStep {
			if ps.Key != recipe.KeyWarmup {
				sets = append(sets, override.Set{Key: ps.Key, Value: int64(max(n/ps.Div, 1))})
			}
		}
		if err := override.Apply(sets, &b); err != nil {
			return c, nil, fmt.Errorf("horizon %g: %w", h, err)
		}
		at := train.BranchPoint(b)
		if at <= c.Schedule.Warmup || slices.Contains(c.Train.SnapshotSteps, at) {
			return c, nil, fmt.Errorf("horizon %g: branch point %d is inside the warmup (%d steps) or shared with another horizon: the series is too fine for %d steps", h, at, c.Schedule.Warmup, S)
		}
		c.Train.SnapshotSteps = append(c.Train.SnapshotSteps, at)
		branches = append(branches, branchRun{horizon: h, dir: dir(h, n), cfg: b})
	}
	for i := range branches {
		if err := train.CheckBranch(c, branches[i].cfg, train.BranchPoint(branches[i].cfg)); err != nil {
			return c, nil, fmt.Errorf("horizon %g: %w", branches[i].horizon, err)
		}
	}
	if err := c.Validate(); err != nil {
		return c, nil, fmt.Errorf("horizon trunk: %w", err)
	}
	return c, branches, nil
}

// horizonDir is the directory of a group's branches of horizon h: beside the group's, so that the group's
// directory holds only runs of its own horizon.
func (out *Outcome) horizonDir(g *Group, h float64) string {
	return out.groupDir(g) + fmt.Sprintf("-horizon%g", h)
}

// horizonCost is the training a series adds to a trunk of one step, in trunk steps: Σ cool·h_i/H over the
// shorter horizons (0 without a series).
func (p *Plan) horizonCost() float64 {
	hs, cool := p.series()
	if hs == nil {
		return 0
	}
	var x float64
	for _, h := range hs[:len(hs)-1] {
		x += cool * h / hs[len(hs)-1]
	}
	return x
}

// BranchInfo is one cooldown branch of a plan's run: the run (its group, arm, seed, directory and config), its
// horizon in tokens per non-embedding parameter and its trunk's directory.
type BranchInfo struct {
	RunInfo
	Horizon float64
	Trunk   string
}

// trialBranchDir is a full-horizon trial's branch of steps: beside the trial, named as trials are.
func trialBranchDir(trial string, steps int) string {
	return filepath.Join(filepath.Dir(trial), fmt.Sprintf("%s-branch%dsteps", filepath.Base(trial), steps))
}

// MarshalJSON writes a diverged branch's +Inf loss as null.
func (h HorizonTrial) MarshalJSON() ([]byte, error) { return finitejson.Marshal(h) }

// UnmarshalJSON reads a null loss back as +Inf: only a diverged branch has one.
func (h *HorizonTrial) UnmarshalJSON(b []byte) error {
	type plain HorizonTrial
	var p plain
	if err := finitejson.Unmarshal(b, &p); err != nil {
		return err
	}
	if math.IsNaN(p.Loss) {
		p.Loss = math.Inf(1)
	}
	*h = HorizonTrial(p)
	return nil
}
