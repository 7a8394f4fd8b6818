package reproduce

import (
	"slices"

	"github.com/smallinit/smallinit/internal/finitejson"
	"github.com/smallinit/smallinit/probes/probescore"

	"github.com/smallinit/smallinit/stats"
)

// Evidence is everything the verdicts of claims 1-4 read (Judge), filled by the plan code from its finished
// runs. Every arm is kept per seed, so that arms are compared seed by seed (docs/definitions.md §7). What the plan must run
// for a verdict to be possible:
//
//   - Gamma: the γ grid (default 0.5, 0.75, 1, 1.25, 1.5) at one width with both fixes (ε = 1e-12, gate), each
//     γ at its own tuned learning rate, on the same ≥ MinSeeds seeds (claims 1 and 3).
//   - NoFix05, NoFix1: γ = 0.5 and γ = 1 at the same width and seeds without the fixes (ε = 1e-5, or the
//     width-emulated ε_eq of docs/definitions.md §7 where the plan runs it, and no gate) (claim 2, "the fixes release the gain").
//   - Ladder: γ = 0.5 and γ = 1 with both fixes at ≥ MinWidths widths on the same seeds (claim 2, the gain
//     against ln N, and the effective model size).
//   - Tokens: per seed, the per-token losses of γ = 1 and γ = 0.5 (the Gamma width, both fixes) and of a
//     reference model that is neither (claim 4).
//   - Probes: a γ = 0.5 pilot's probe scores and the probe arms' scores per seed (claim 1's reasoning half).
//
// Losses are the final models' losses on the whole validation split (docs/definitions.md §7), never the slice the learning
// rate was selected on. A missing part leaves its claim inconclusive with the reason.
type Evidence struct {
	// Source says what the losses were measured on, e.g. "whole validation split, 1,204,224 tokens"; every
	// verdict quotes it.
	Source  string       `json:"source"`
	Width   int          `json:"width"` // the width of Gamma, NoFix05/NoFix1 and Tokens
	Gamma   []GammaArm   `json:"gamma"`
	NoFix05 *ArmEvidence `json:"no_fix_gamma0.5,omitempty"`
	NoFix1  *ArmEvidence `json:"no_fix_gamma1,omitempty"`
	Ladder  []Rung       `json:"ladder"`
	// LadderOwnHorizon: the ladder trained at a horizon of its own (experiment.LadderHorizon), its rung at Width
	// a run of its own rather than the γ grid's, so the ladder's L(N) speaks to its horizon, not H1's.
	LadderOwnHorizon bool            `json:"ladder_own_horizon,omitempty"`
	Tokens           []TokenLosses   `json:"-"`                         // large; claim 4 writes its per-bin figures instead
	TokenRef         string          `json:"token_reference,omitempty"` // what the reference model of Tokens is
	Probes           *ProbeEvidence  `json:"probes,omitempty"`
	Anchor           *AnchorEvidence `json:"anchor,omitempty"`    // claim 1's reasoning half on the anchor-function tasks (anchor.go)
	SharedLR         []GammaArm      `json:"shared_lr,omitempty"` // optional: the γ arms at one shared LR (the study's "cost-free" reading), reported beside claim 1
	// Grid is the full-horizon learning-rate grid (experiment.TuneFull) as evidence at matched learning rates:
	// both γ at every rate on the tuning seeds, per width, on the LR-selection slice. H1 and H2 at matched LR
	// are reported from it beside the primaries at the tuned LR. Nil without such a grid.
	Grid []GridCell `json:"lr_grid,omitempty"`
	// Horizons are the γ grid's γ = 0.5 and γ = 1 arms at each shorter horizon of the plan's series (the
	// primary runs' cooldown branches), reported beside H1 (nil without a series).
	Horizons []HorizonArms `json:"horizons,omitempty"`
	// Primaries are the plan's pre-registered primaries (nil: claim 1's loss and claim 2's slope are judged as
	// secondaries, the protocol of plans without [primaries]).
	Primaries *Primaries `json:"primaries,omitempty"`
	// ByRole are the arms of the roles Roles marks ByGamma, one per γ, for the verdicts that read them by role
	// (RoleArm). Nil when the plan has none.
	ByRole map[Role][]GammaArm `json:"by_role,omitempty"`
}

// RoleArm is the arm of role r at γ g in ByRole, or nil.
func (ev *Evidence) RoleArm(r Role, g float64) *ArmEvidence {
	for i := range ev.ByRole[r] {
		if sameGamma(ev.ByRole[r][i].Gamma, g) {
			return &ev.ByRole[r][i].ArmEvidence
		}
	}
	return nil
}

// Loss is a final model's loss on the whole validation split in nats per token, overall and per language
// (e.g. "en", "zh"); bits per byte belong to the report, the verdicts read nats.
type Loss struct {
	Overall    float64            `json:"overall"`
	ByLanguage map[string]float64 `json:"by_language,omitempty"`
}

// MarshalJSON writes a non-finite loss (a diverged run) as null, which encoding/json cannot write.
func (l Loss) MarshalJSON() ([]byte, error) { return finitejson.Marshal(l) }

// ArmEvidence is what one arm measured: its configuration's final losses per seed, with the learning rate it
// ran at. The arm itself, a named recipe of the plan, is experiment.Arm; a report's arm (report.Arm) is the runs
// of a directory grouped by the config keys they vary, with labels to draw. Three things, three names.
type ArmEvidence struct {
	Name  string       `json:"name"`  // e.g. "γ=1 ε=1e-12 gate d=256"
	LR    float64      `json:"lr"`    // its own tuned learning rate, or the shared one
	Seeds map[int]Loss `json:"seeds"` // seed → loss
	// OOD is, per seed, the bits per byte on each out-of-distribution text (corpus/ood), reported beside the
	// verdicts (generalisation), not judged.
	OOD map[int]map[string]float64 `json:"ood_bits_per_byte,omitempty"`
	// HeldOut is, per seed, the bits per byte on each source of the corpus's held-out text (HeldOutText),
	// reported beside the verdicts, not judged.
	HeldOut map[int]map[string]float64 `json:"held_out_bits_per_byte,omitempty"`
	// Spike is, per seed, the training loss's largest rise over its running minimum (stats.Spike); Plateau the
	// relative spread of its mean stable rank over the last 3 diagnostics (stats.TailSpread). A seed without
	// the record is absent.
	Spike   map[int]float64 `json:"spike,omitempty"`
	Plateau map[int]float64 `json:"stable_rank_tail_spread,omitempty"`
}

// Overall is the arm's overall loss per seed.
func (a *ArmEvidence) Overall() stats.BySeed {
	out := stats.BySeed{}
	if a != nil {
		for s, l := range a.Seeds {
			out[s] = l.Overall
		}
	}
	return out
}

// Language is the arm's loss on one language per seed (seeds without that language are left out).
func (a *ArmEvidence) Language(lang string) stats.BySeed {
	out := stats.BySeed{}
	if a != nil {
		for s, l := range a.Seeds {
			if v, ok := l.ByLanguage[lang]; ok {
				out[s] = v
			}
		}
	}
	return out
}

// languages lists the languages any seed of the arms has, sorted.
func languages(arms ...*ArmEvidence) []string {
	var out []string
	for _, a := range arms {
		if a == nil {
			continue
		}
		for _, l := range a.Seeds {
			for k := range l.ByLanguage {
				if !slices.Contains(out, k) {
					out = append(out, k)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// GammaArm is one γ of the grid.
type GammaArm struct {
	Gamma float64 `json:"gamma"`
	ArmEvidence
}

// Rung is one width of the size ladder: γ = 0.5 and γ = 1 with both fixes.
type Rung struct {
	Width int         `json:"width"`
	N     float64     `json:"n"` // non-embedding parameters (docs/definitions.md §4)
	G05   ArmEvidence `json:"gamma0.5"`
	G1    ArmEvidence `json:"gamma1"`
}

// TokenLosses is one seed's per-token losses (nats) on the same validation tokens, in the same order: A is
// γ = 1, B is γ = 0.5 (both of this seed), Ref a reference model that is neither of them (another seed's
// γ = 0.5 model, or an n-gram model of the training data; docs/definitions.md §4 "token difficulty").
type TokenLosses struct {
	Seed      int
	A, B, Ref []float32
}

// ProbeEvidence is claim 1's reasoning half: a γ = 0.5 pilot, judged first (docs/definitions.md §7: a test is judged only
// when a baseline clears chance + 5 binomial standard errors), and the γ = 0.5 and γ = 1 probe arms per seed.
type ProbeEvidence struct {
	Pilot *probescore.Scores         `json:"pilot"`
	G05   map[int]*probescore.Scores `json:"gamma0.5"`
	G1    map[int]*probescore.Scores `json:"gamma1"`
}

// OODText is the arm's bits per byte on one out-of-distribution text per seed.
func (a *ArmEvidence) OODText(name string) stats.BySeed {
	out := stats.BySeed{}
	if a != nil {
		for s, m := range a.OOD {
			if v, ok := m[name]; ok {
				out[s] = v
			}
		}
	}
	return out
}

// HeldOutSource is the arm's bits per byte on one source of the held-out text per seed.
func (a *ArmEvidence) HeldOutSource(name string) stats.BySeed {
	out := stats.BySeed{}
	if a != nil {
		for s, m := range a.HeldOut {
			if v, ok := m[name]; ok {
				out[s] = v
			}
		}
	}
	return out
}

// oodTexts lists the out-of-distribution texts any seed of the arms was scored on, sorted.
func oodTexts(arms ...*ArmEvidence) []string {
	return scoredNames(func(a *ArmEvidence) map[int]map[string]float64 { return a.OOD }, arms)
}

// heldOutSources lists the held-out sources any seed of the arms was scored on, sorted.
func heldOutSources(arms ...*ArmEvidence) []string {
	return scoredNames(func(a *ArmEvidence) map[int]map[string]float64 { return a.HeldOut }, arms)
}

// scoredNames lists the names any seed of the arms has in the per-seed map field gives, sorted.
func scoredNames(field func(*ArmEvidence) map[int]map[string]float64, arms []*ArmEvidence) []string {
	var out []string
	for _, a := range arms {
		if a == nil {
			continue
		}
		for _, m := range field(a) {
			for k := range m {
				if !slices.Contains(out, k) {
					out = append(out, k)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// GridCell is one rate of the full-horizon LR grid at one width: each γ's selection loss per tuning seed (a
// diverged trial is +Inf, written null).
type GridCell struct {
	Width int     `json:"width"`
	N     float64 `json:"n"` // non-embedding parameters at Width (0: the width is not on the ladder)
	LR    float64 `json:"lr"`
	// TokensPerParam is the horizon of a ladder grid at its own horizon; 0 for the grid at the primaries'.
	TokensPerParam float64         `json:"tokens_per_param,omitempty"`
	G05            map[int]float64 `json:"gamma0.5"`
	G1             map[int]float64 `json:"gamma1"`
}

// MarshalJSON writes a diverged trial's loss as null.
func (g GridCell) MarshalJSON() ([]byte, error) { return finitejson.Marshal(g) }
