package reproduce

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/internal/finitejson"
	"github.com/smallinit/smallinit/stats"
)

// RunRecord is one final model of the reproduction as claims.json keeps it: where it is, its recipe's values,
// and every number it was scored to.
type RunRecord struct {
	Group string   `json:"group"`
	Role  Role     `json:"role,omitempty"`
	Arm   string   `json:"arm"`
	Seed  int      `json:"seed"`
	Dir   string   `json:"dir"`
	Gamma float64  `json:"gamma"`
	Width int      `json:"width"`
	N     int64    `json:"n"` // non-embedding parameters
	Eps   float64  `json:"norm_eps"`
	Gate  string   `json:"attn_gate"`
	LR    float64  `json:"lr"`
	Steps int      `json:"steps"`
	Score RunScore `json:"score"`
	// Health is the run's spike statistic and stable-rank plateau check (health.go).
	Health Health `json:"health"`
}

// scoreRuns scores every finished run of the outcome (RunScore, cached per run directory), in run order.
func scoreRuns(ctx context.Context, out *experiment.Outcome, sc scoring) ([]RunRecord, error) {
	var recs []RunRecord
	for _, r := range out.RunList {
		c := r.Config
		s, err := scoreRun(ctx, r.Dir, out.DataDir, sc)
		if err != nil {
			return nil, err
		}
		h, err := healthOf(r.Dir)
		if err != nil {
			return nil, err
		}
		recs = append(recs, RunRecord{Group: r.Group, Role: Role(r.Role), Arm: r.Arm, Seed: int(r.Seed), Dir: r.Dir, Gamma: c.Init.Gamma, Width: c.Model.Dim,
			N: c.Model.NonEmbeddingParams(), Eps: c.Model.NormEps, Gate: c.Model.AttnGate, LR: c.Schedule.PeakLR, Steps: c.TotalSteps(), Score: *s, Health: h})
	}
	return recs, nil
}

// armOf collects the records that match into one arm, per seed; its LR is theirs (the same for every seed of
// an arm) and its name says what it is.
func armOf(name string, recs []RunRecord, match func(r *RunRecord) bool) ArmEvidence {
	a := ArmEvidence{Name: name, Seeds: map[int]Loss{}, OOD: map[int]map[string]float64{}, Spike: map[int]float64{}, Plateau: map[int]float64{}}
	for i := range recs {
		r := &recs[i]
		if !match(r) {
			continue
		}
		a.Seeds[r.Seed] = HeldOutLoss(r.Score.HeldOut)
		a.OOD[r.Seed] = r.Score.OODBitsPerByte()
		if !math.IsNaN(r.Health.Spike) {
			a.Spike[r.Seed] = r.Health.Spike
		}
		if !math.IsNaN(r.Health.Plateau) {
			a.Plateau[r.Seed] = r.Health.Plateau
		}
		a.LR = r.LR
	}
	return a
}

// evidenceOf is the verdicts' Evidence from the scored runs of the reproduce plan, found by role: the γ grid
// (RoleGamma), the shared-LR arms (RoleSharedLR), the no-fix arms at the width-emulated ε without gate
// (RoleEmulated), the ladder (RoleLadder with the γ grid's width), the probe pilot and arms. The per-token losses are filled by the caller.
func evidenceOf(recs []RunRecord, probeDir string) (*Evidence, error) {
	ev := &Evidence{}
	for _, r := range recs {
		if r.Role == RoleGamma {
			ev.Width = r.Width
			if ev.Source == "" {
				ev.Source = r.Score.HeldOut.Source + "; final models"
			}
		}
	}
	in := func(role Role, g float64) func(r *RunRecord) bool {
		return func(r *RunRecord) bool { return r.Role == role && sameGamma(r.Gamma, g) }
	}
	for _, g := range gammas {
		ev.Gamma = append(ev.Gamma, GammaArm{Gamma: g, ArmEvidence: armOf(fmt.Sprintf("γ=%g ε=1e-12 gate d=%d tuned LR", g, ev.Width), recs, in(RoleGamma, g))})
	}
	for _, g := range []float64{0.5, 1} {
		a := armOf(fmt.Sprintf("γ=%g ε=1e-12 gate d=%d shared LR", g, ev.Width), recs, in(RoleSharedLR, g))
		if len(a.Seeds) > 0 {
			ev.SharedLR = append(ev.SharedLR, GammaArm{Gamma: g, ArmEvidence: a})
		}
	}
	noFix := func(g float64) *ArmEvidence {
		var eps float64
		for _, r := range recs {
			if r.Role == RoleEmulated && sameGamma(r.Gamma, g) {
				eps = r.Eps
			}
		}
		a := armOf(fmt.Sprintf("γ=%g ε_eq=%.3g (2048-wide saturation) no gate d=%d", g, eps, ev.Width), recs, func(r *RunRecord) bool {
			return in(RoleEmulated, g)(r) && r.Gate == "none"
		})
		return &a
	}
	ev.NoFix05, ev.NoFix1 = noFix(0.5), noFix(1)
	// The ladder: its own rungs, and the γ grid's runs at a width it has no rung of. A ladder with a rung at
	// the γ grid's width of other steps trained at a horizon of its own.
	own := map[int]bool{}
	for _, r := range recs {
		if r.Role == RoleLadder {
			own[r.Width] = true
		}
	}
	for _, r := range recs {
		if r.Role == RoleGamma && own[r.Width] {
			for _, l := range recs {
				if l.Role == RoleLadder && l.Width == r.Width && l.Steps != r.Steps {
					ev.LadderOwnHorizon = true
				}
			}
		}
	}
	rung := func(r *RunRecord) bool { return r.Role == RoleLadder || r.Role == RoleGamma && !own[r.Width] }
	n := map[int]int64{}
	for i := range recs {
		if rung(&recs[i]) {
			n[recs[i].Width] = recs[i].N
		}
	}
	ws := make([]int, 0, len(n))
	for w := range n {
		ws = append(ws, w)
	}
	slices.Sort(ws)
	for _, w := range ws {
		at := func(g float64) func(r *RunRecord) bool {
			return func(r *RunRecord) bool {
				return sameGamma(r.Gamma, g) && r.Width == w && rung(r)
			}
		}
		ev.Ladder = append(ev.Ladder, Rung{Width: w, N: float64(n[w]),
			G05: armOf(fmt.Sprintf("γ=0.5 fixed d=%d", w), recs, at(0.5)), G1: armOf(fmt.Sprintf("γ=1 fixed d=%d", w), recs, at(1))})
	}
	ev.ByRole = roleArms(recs, Roles)
	p, err := probeEvidence(recs, probeDir)
	if err != nil {
		return nil, err
	}
	ev.Probes = p
	return ev, nil
}

// roleArms are the runs of every role the table marks ByGamma, one arm per γ (ascending), named by role and γ;
// nil when no such role has runs.
func roleArms(recs []RunRecord, roles map[Role]RoleSpec) map[Role][]GammaArm {
	var out map[Role][]GammaArm
	for role, spec := range roles {
		if !spec.ByGamma {
			continue
		}
		var gs []float64
		for _, r := range recs {
			if r.Role == role && !slices.ContainsFunc(gs, func(g float64) bool { return sameGamma(g, r.Gamma) }) {
				gs = append(gs, r.Gamma)
			}
		}
		slices.Sort(gs)
		for _, g := range gs {
			if out == nil {
				out = map[Role][]GammaArm{}
			}
			a := armOf(fmt.Sprintf("%s γ=%g", role, g), recs, func(r *RunRecord) bool { return r.Role == role && sameGamma(r.Gamma, g) })
			out[role] = append(out[role], GammaArm{Gamma: g, ArmEvidence: a})
		}
	}
	return out
}

// ArmSummary is one arm's mean over its seeds, for the terminal and the report: its loss on the whole
// validation split beside its mechanism's state (norm saturation, sink rate), so a reader sees whether the
// mechanism was active.
type ArmSummary struct {
	Group          string  `json:"group"`
	Arm            string  `json:"arm"`
	Seeds          int     `json:"seeds"`
	LR             float64 `json:"lr"`
	Eps            float64 `json:"norm_eps"`
	Gate           string  `json:"attn_gate"`
	Gamma          float64 `json:"gamma"`
	Width          int     `json:"width"`
	Loss           float64 `json:"val_loss"`
	LossSE         float64 `json:"val_loss_se"`
	NormSaturation float64 `json:"norm_saturation"`
	FirstNormSat   float64 `json:"first_norm_saturation"`
	SinkRate       float64 `json:"sink_rate"`
}

// summarise averages the records of each arm over seeds, in run order.
func summarise(recs []RunRecord) []ArmSummary {
	var out []ArmSummary
	at := map[string]int{}
	losses := map[string][]float64{}
	for _, r := range recs {
		key := r.Group + "/" + r.Arm
		if r.Arm == "" {
			key = r.Group + fmt.Sprintf("/γ=%g d=%d", r.Gamma, r.Width)
		}
		i, ok := at[key]
		if !ok {
			i = len(out)
			at[key] = i
			out = append(out, ArmSummary{Group: r.Group, Arm: r.Arm, LR: r.LR, Eps: r.Eps, Gate: r.Gate, Gamma: r.Gamma, Width: r.Width})
			if out[i].Arm == "" {
				out[i].Arm = fmt.Sprintf("gamma%g", r.Gamma)
			}
		}
		a := &out[i]
		a.Seeds++
		a.NormSaturation += r.Score.NormSaturation
		a.FirstNormSat += r.Score.FirstNormSaturation
		a.SinkRate += r.Score.SinkRate
		losses[key] = append(losses[key], r.Score.HeldOut.Overall.Loss)
	}
	for key, i := range at {
		a := &out[i]
		e := stats.Mean(losses[key], nil, ClaimAlpha)
		a.Loss, a.LossSE = e.Mean, e.SE
		a.NormSaturation /= float64(a.Seeds)
		a.FirstNormSat /= float64(a.Seeds)
		a.SinkRate /= float64(a.Seeds)
	}
	return out
}

// fmtNum writes a NaN as "n/a".
func fmtNum(format string, v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf(format, v)
}

// WriteText prints the reproduction for a terminal: the runs, the plan's amendments, each arm's loss beside its final norm saturation
// and sink rate (whether the mechanism was active), and every claim's verdict with its evidence.
func (res *Result) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "reproduction in %s: %d runs of %d steps (%d tokens each), %d seeds per verdict arm", res.Out, res.Runs, res.Steps, res.Tokens, res.Seeds)
	if res.Tier != "" {
		fmt.Fprintf(w, ", tier %s", res.Tier)
	}
	fmt.Fprintln(w)
	if res.Smoke != "" {
		fmt.Fprintf(w, "SMOKE TEST: %s\n", res.Smoke)
	}
	for _, a := range res.Amendments {
		fmt.Fprintf(w, "AMENDED after the plan was printed: %s (%s, quoted whole in claims.json)\n", a.Time.Format(amendmentLayout+" UTC"), filepath.Join(res.Out, a.File))
	}
	fmt.Fprint(w, res.Primaries)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "group\tarm\tseeds\tLR\tval loss ± SE\tnorm saturation (mean / first)\tsink rate %")
	for _, a := range res.Arms {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.3g\t%s ± %s\t%s / %s\t%s\n", a.Group, a.Arm, a.Seeds, a.LR, fmtNum("%.4f", a.Loss), fmtNum("%.4f", a.LossSE),
			fmtNum("%.3g", a.NormSaturation), fmtNum("%.3g", a.FirstNormSat), fmtNum("%.1f", a.SinkRate))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := res.writeHorizons(w); err != nil {
		return err
	}
	for _, c := range res.Claims {
		id := fmt.Sprintf("claim %d", c.N)
		if c.ID != "" {
			id = fmt.Sprintf("primary %s (claim %d)", c.ID, c.N)
		}
		fmt.Fprint(w, wrapText(id+": "+c.Text, TextWidth, "  "))
		fmt.Fprint(w, wrapText("verdict: "+c.Verdict, TextWidth, "    "))
		if c.Reason != "" {
			fmt.Fprint(w, wrapText("why: "+c.Reason, TextWidth, "    "))
		}
		if c.Evidence != "" {
			fmt.Fprint(w, wrapText("evidence: "+c.Evidence, TextWidth, "    "))
		}
		fmt.Fprintln(w)
	}
	if err := res.writeClaimTable(w); err != nil {
		return err
	}
	_, err := fmt.Fprint(w, wrapText(fmt.Sprintf("every number in %s, figures in %s and %s", filepath.Join(res.Out, "claims.json"),
		filepath.Join(res.Out, FiguresFile), filepath.Join(res.Out, "report.html")), TextWidth, "  "))
	return err
}

// MarshalJSON writes NaN (one seed's standard error, a run without diagnostics) as null.
func (a ArmSummary) MarshalJSON() ([]byte, error) { return finitejson.Marshal(a) }

// TextWidth is the column a reproduction's printed verdicts wrap at: one claim's evidence is several hundred
// characters, which a terminal cannot read as one line.
const TextWidth = 100

// wrapText breaks s into lines of at most width columns at spaces (a word longer than a line stays whole), the
// lines after the first indented by indent; every line ends in a newline.
func wrapText(s string, width int, indent string) string {
	var b strings.Builder
	col := 0
	for i, word := range strings.Fields(s) {
		n := utf8.RuneCountInString(word)
		switch {
		case i == 0:
		case col+1+n > width:
			b.WriteString("\n" + indent)
			col = utf8.RuneCountInString(indent)
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += n
	}
	b.WriteByte('\n')
	return b.String()
}

// writeClaimTable closes the printed reproduction with one row per claim: claim | verdict | estimate [CI] | n |
// why. The estimate is the claim's first decisive comparison (its mean and interval, "—" where it has none); why
// is the reason's first clause, the whole of it in the block above and in claims.json.
func (res *Result) writeClaimTable(w io.Writer) error {
	fmt.Fprintln(w, "claims")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "claim\tverdict\testimate [CI]\tn\twhy")
	for _, c := range res.Claims {
		id := fmt.Sprintf("%d", c.N)
		if c.ID != "" {
			id = fmt.Sprintf("%s (%d)", c.ID, c.N)
		}
		est, n := claimEstimate(c)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", id, c.Verdict, est, n, shortReason(c.Reason, 60))
	}
	return tw.Flush()
}

// claimEstimate is a claim's first decisive test (else its first test) as "mean [lo, hi]" and its seed count;
// "—" for a claim without a measured comparison, and the mean alone where fewer than 3 seeds give no interval.
func claimEstimate(c Claim) (est, n string) {
	var t *Test
	for i := range c.Tests {
		if c.Tests[i].Decisive {
			t = &c.Tests[i]
			break
		}
	}
	if t == nil && len(c.Tests) > 0 {
		t = &c.Tests[0]
	}
	if t == nil || t.Estimate.N == 0 || math.IsNaN(t.Estimate.Mean) {
		return "—", "—"
	}
	e := t.Estimate
	n = fmt.Sprintf("%d", e.N)
	if e.N < 3 || math.IsNaN(e.Lo) || math.IsNaN(e.Hi) || math.IsInf(e.Lo, 0) || math.IsInf(e.Hi, 0) {
		return fmt.Sprintf("%+.4f (no interval)", e.Mean), n
	}
	return fmt.Sprintf("%+.4f [%+.4f, %+.4f]", e.Mean, e.Lo, e.Hi), n
}

// shortReason is the reason's first clause (up to a ";" or ":"), at most max characters.
func shortReason(r string, max int) string {
	if i := strings.IndexAny(r, ";:"); i >= 0 {
		r = r[:i]
	}
	r = strings.TrimSpace(r)
	if r == "" {
		return "—"
	}
	if rs := []rune(r); len(rs) > max {
		r = string(rs[:max-1]) + "…"
	}
	return r
}
