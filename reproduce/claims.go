package reproduce

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/fit"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/sweep"
	"github.com/smallinit/smallinit/train"
)

// Verdicts of a claim.
const (
	Supported    = "supported"
	NotSupported = "not supported"
	Inconclusive = "inconclusive"
)

// Claim is one claim of SPEC's introduction checked against this reproduction.
type Claim struct {
	N        int    `json:"claim"`
	Text     string `json:"text"`
	Verdict  string `json:"verdict"`
	Evidence string `json:"evidence"` // the numbers, with their uncertainty
}

// Result is a reproduction's outcome (OUT/claims.json).
type Result struct {
	Out    string  `json:"out"`
	Seeds  int     `json:"seeds"`
	Steps  int     `json:"steps"`
	Tokens int64   `json:"tokens_per_run"`
	Runs   int     `json:"runs"`
	Claims []Claim `json:"claims"`
	// CompareA and CompareB are the run directories of claim 4's comparison (γ = 1 and γ = 0.5).
	CompareA string `json:"compare_a,omitempty"`
	CompareB string `json:"compare_b,omitempty"`
	// ValLoss is the mean validation loss (and its standard error over seeds) per configuration label.
	ValLoss map[string][2]float64 `json:"val_loss"`
}

// row is one finished run.
type row struct {
	exp    string
	dir    string
	values map[string]any
	n      int64
	loss   float64
}

// num is the run's value of a numeric axis. Axis values read back from a sweep's plan are json.Number.
func (r row) num(key string) float64 {
	switch v := r.values[key].(type) {
	case json.Number:
		f, err := v.Float64()
		if err != nil {
			return math.NaN()
		}
		return f
	case float64:
		return v
	case int64:
		return float64(v)
	case int:
		return float64(v)
	}
	return math.NaN()
}

func (r row) str(key string) string { return fmt.Sprint(r.values[key]) }

// gather collects every finished run of every experiment.
func gather(out string) ([]row, error) {
	var rows []row
	for _, exp := range Experiments {
		dir := filepath.Join(out, exp)
		plan, err := sweep.ReadPlan(dir)
		if err != nil {
			return nil, err
		}
		t, err := sweep.Collect(dir)
		if err != nil {
			return nil, err
		}
		for _, r := range t.Rows {
			if r.State != sweep.StateDone || math.IsNaN(r.ValLoss) {
				continue
			}
			rows = append(rows, row{exp: exp, dir: sweep.RunDir(dir, plan.Runs[r.Index]), values: r.Values, n: r.N, loss: r.ValLoss})
		}
	}
	return rows, nil
}

// losses returns the val losses of the runs of experiment exp matching every key=value in match.
func losses(rows []row, exp string, match map[string]float64, strMatch map[string]string) []float64 {
	var out []float64
	for _, r := range rows {
		if r.exp != exp {
			continue
		}
		ok := true
		for k, v := range match {
			ok = ok && r.num(k) == v
		}
		for k, v := range strMatch {
			ok = ok && r.str(k) == v
		}
		if ok {
			out = append(out, r.loss)
		}
	}
	return out
}

// verdict compares a difference d (positive: the claim's direction) with its standard error.
func verdict(d, se float64) string {
	switch {
	case se == 0 && d > 0, d > 2*se:
		return Supported
	case d < -2*se:
		return NotSupported
	}
	return Inconclusive
}

func (res *Result) evaluate(out, dataDir, probeDir string, windows int) error {
	rows, err := gather(out)
	if err != nil {
		return err
	}
	res.ValLoss = map[string][2]float64{}
	label := func(name string, ls []float64) (float64, float64) {
		m, se := meanSE(ls)
		res.ValLoss[name] = [2]float64{m, se}
		return m, se
	}
	g := func(gamma float64) []float64 {
		return losses(rows, ExpGamma, map[string]float64{"init.gamma": gamma}, nil)
	}

	// Claim 1: γ = 1 beats γ = 0.5 (with both fixes).
	m05, se05 := label("gamma0.5 fixed", g(0.5))
	m1, se1 := label("gamma1 fixed", g(1))
	d1, s1 := m05-m1, math.Hypot(se05, se1)
	res.Claims = append(res.Claims, Claim{N: 1, Text: "γ = 1 lowers validation loss against γ = 0.5 (with ε = 1e-12 and the gate)",
		Verdict: verdict(d1, s1), Evidence: fmt.Sprintf("val loss γ=0.5 %.4f ± %.4f, γ=1 %.4f ± %.4f: γ=1 lower by %.4f ± %.4f (± = SE over seeds)", m05, se05, m1, se1, d1, s1)})
	// Claim 1's second half: the gains are largest on reasoning (probes.go).
	res.Claims = append(res.Claims, reasoningClaim(rows, probeDir))

	// Claim 2: the fixes release the gain, and the effective model size.
	d := func(gamma float64, gate string) []float64 {
		return losses(rows, ExpDefault, map[string]float64{"init.gamma": gamma}, map[string]string{"model.attn_gate": gate})
	}
	md05, sd05 := label("gamma0.5 default", d(0.5, "none"))
	md1, sd1 := label("gamma1 default", d(1, "none"))
	label("gamma0.5 gate only", d(0.5, "elementwise"))
	label("gamma1 gate only", d(1, "elementwise"))
	label("gamma0.5 eps only", losses(rows, ExpEpsOnly, map[string]float64{"init.gamma": 0.5}, nil))
	label("gamma1 eps only", losses(rows, ExpEpsOnly, map[string]float64{"init.gamma": 1}, nil))
	gainDefault, sDefault := md05-md1, math.Hypot(sd05, sd1)
	dd, sdd := d1-gainDefault, math.Hypot(s1, sDefault)
	ev := fmt.Sprintf("gain of γ=1 over γ=0.5: %.4f ± %.4f with both fixes, %.4f ± %.4f with neither (difference %.4f ± %.4f)", d1, s1, gainDefault, sDefault, dd, sdd)
	effGain, effErr := effectiveSize(rows)
	ev += "; " + effErr
	if effGain != nil {
		ev = fmt.Sprintf("%s; effective model size of γ=1 from L(N) of γ=0.5 over 4 widths: %+.0f%% (95%% bootstrap %+.0f%%..%+.0f%%; the study: +44%%)", ev, 100*effGain[0], 100*effGain[1], 100*effGain[2])
	}
	res.Claims = append(res.Claims, Claim{N: 2, Text: "ε = 1e-5 and the attention sink hold γ = 1 back; with both fixes γ = 1 is worth more model size",
		Verdict: verdict(dd, sdd), Evidence: ev})

	// Claim 3: γ = 1 is critical (loss is best at 1 and worse past it).
	best, bestM := 0.0, math.Inf(1)
	var parts []string
	var mPast, sPast float64
	for _, gm := range gammas {
		m, se := label(fmt.Sprintf("gamma%g fixed", gm), g(gm))
		parts = append(parts, fmt.Sprintf("γ=%g %.4f±%.4f", gm, m, se))
		if m < bestM {
			best, bestM = gm, m
		}
		if gm == 1.5 {
			mPast, sPast = m, se
		}
	}
	v3 := Inconclusive
	switch past := mPast - m1; {
	case best == 1 && past > 2*math.Hypot(sPast, se1):
		v3 = Supported
	case best != 1 && math.Abs(bestM-m1) > 2*se1:
		v3 = NotSupported
	}
	res.Claims = append(res.Claims, Claim{N: 3, Text: "γ = 1 is critical: loss is best at γ = 1 and worse past it",
		Verdict: v3, Evidence: fmt.Sprintf("val loss by γ: %s; best γ = %g", strings.Join(parts, ", "), best)})

	// Claim 4: the gains concentrate on medium-to-hard tokens.
	c4, a, b := tokenClaim(rows, dataDir, windows)
	res.Claims = append(res.Claims, c4)
	res.CompareA, res.CompareB = a, b

	// Claim 5: condensation then expansion.
	res.Claims = append(res.Claims, condensationClaim(rows))
	return nil
}

// effectiveSize fits L(N) on γ = 0.5 over the four widths (fixes on) and returns the width-128 γ = 1 run's
// effective-size gain with its bootstrap interval, or why it could not.
func effectiveSize(rows []row) (*[3]float64, string) {
	t := &fit.Table{Columns: []string{"N", "val_loss", "seed", "init.gamma", "tokens", "state"}}
	for _, r := range rows {
		if r.exp != ExpSizes && r.exp != ExpGamma {
			continue
		}
		gm := r.num("init.gamma")
		if gm != 0.5 && gm != 1 {
			continue
		}
		t.Rows = append(t.Rows, map[string]string{"N": fmt.Sprint(r.n), "val_loss": fmt.Sprint(r.loss),
			"seed": r.str("seed"), "init.gamma": fmt.Sprint(gm), "tokens": "0", "state": "done"})
	}
	base, _ := fit.ParseSelector("init.gamma=0.5")
	treat, _ := fit.ParseSelector("init.gamma=1")
	rep, err := fit.Analyze(t, fit.Options{Baseline: base, Treated: treat, Bootstrap: 500, Seed: 1})
	if err != nil {
		return nil, "size law not fitted: " + err.Error()
	}
	for _, law := range rep.Laws {
		if law.Kind != "size" {
			continue
		}
		if law.Law == nil {
			return nil, "size law refused: " + law.Error
		}
		var best *fit.Gain
		for i := range law.Treated {
			if best == nil || law.Treated[i].X > best.X {
				best = &law.Treated[i]
			}
		}
		if best == nil || best.Error != "" {
			return nil, "no effective size for γ=1"
		}
		out := [3]float64{best.Gain, math.NaN(), math.NaN()}
		if best.CI != nil {
			out[1], out[2] = best.CI.Lo, best.CI.Hi
		}
		return &out, fmt.Sprintf("L(N) = %.3f + %.3g·N^(−%.3f)", law.Law.E, law.Law.A, law.Law.Alpha)
	}
	return nil, "size law not fitted"
}

// tokenClaim compares γ = 1 (A) with γ = 0.5 (B), width 128, both fixes, seed 0, on the validation tokens.
func tokenClaim(rows []row, dataDir string, windows int) (c Claim, a, b string) {
	c = Claim{N: 4, Text: "gains concentrate on medium-to-hard tokens, not on easy ones", Verdict: Inconclusive}
	for _, r := range rows {
		if r.exp == ExpGamma && r.str("seed") == "0" {
			switch r.num("init.gamma") {
			case 1:
				a = r.dir
			case 0.5:
				b = r.dir
			}
		}
	}
	if a == "" || b == "" {
		c.Evidence = "runs missing"
		return c, a, b
	}
	pool := kernel.NewPool(0)
	defer pool.Close()
	ma, _, err := model.Load(filepath.Join(a, train.FinalDir), 8, pool)
	if err != nil {
		c.Evidence = err.Error()
		return c, a, b
	}
	mb, _, err := model.Load(filepath.Join(b, train.FinalDir), 8, pool)
	if err != nil {
		c.Evidence = err.Error()
		return c, a, b
	}
	toks, err := data.ReadTokens(filepath.Join(dataDir, data.ValFile), ma.Config.Vocab)
	if err != nil {
		c.Evidence = err.Error()
		return c, a, b
	}
	cmp, err := diag.Compare(ma, mb, toks, 10, windows, nil)
	if err != nil {
		c.Evidence = err.Error()
		return c, a, b
	}
	// Easy: the 3 easiest deciles; medium-to-hard: deciles 4-9; the hardest decile holds the rare and noisy tokens.
	var easy, mid []float64
	for i, bin := range cmp.Bins {
		switch {
		case i < 3:
			easy = append(easy, bin.LossReduction)
		case i < 9:
			mid = append(mid, bin.LossReduction)
		}
	}
	me, _ := meanSE(easy)
	mm, _ := meanSE(mid)
	parts := make([]string, len(cmp.Bins))
	for i, bin := range cmp.Bins {
		parts[i] = fmt.Sprintf("%+.3f", bin.LossReduction)
	}
	c.Evidence = fmt.Sprintf("loss reduction of γ=1 over γ=0.5 by difficulty decile (easy→hard): %s; mean over deciles 1-3 %+.4f, 4-9 %+.4f; overall mean Δ_sym %+.4f over %d tokens",
		strings.Join(parts, " "), me, mm, cmp.All.MeanDeltaSym, cmp.All.Count)
	switch {
	case mm > 0 && mm > me:
		c.Verdict = Supported
	case mm <= me:
		c.Verdict = NotSupported
	}
	return c, a, b
}

// condensationClaim reads the γ = 1 and γ = 0.5 runs' diagnostics (width 128, fixes, seed 0): the mean stable
// rank of the block matrices over training. Condense-then-expand: its minimum is below both its start and its
// end; γ = 0.5 changes less (relative range).
func condensationClaim(rows []row) Claim {
	c := Claim{N: 5, Text: "with γ = 1 weights first condense (stable rank drops) then expand; γ = 0.5 starts diffuse and changes slowly", Verdict: Inconclusive}
	traj := map[float64][]float64{}
	for _, r := range rows {
		if r.exp != ExpGamma || r.str("seed") != "0" || (r.num("init.gamma") != 1 && r.num("init.gamma") != 0.5) {
			continue
		}
		ts, err := stableRankTrajectory(filepath.Join(r.dir, train.DiagFile))
		if err != nil {
			c.Evidence = err.Error()
			return c
		}
		traj[r.num("init.gamma")] = ts
	}
	t1, t05 := traj[1], traj[0.5]
	if len(t1) < 3 || len(t05) < 3 {
		c.Evidence = "diagnostics missing"
		return c
	}
	lo, at := math.Inf(1), 0
	for i, v := range t1 {
		if v < lo {
			lo, at = v, i
		}
	}
	span := func(ts []float64) float64 {
		mn, mx := math.Inf(1), math.Inf(-1)
		for _, v := range ts {
			mn, mx = math.Min(mn, v), math.Max(mx, v)
		}
		return (mx - mn) / ts[0]
	}
	condensed := lo < 0.9*t1[0] && at > 0
	expanded := t1[len(t1)-1] > 1.1*lo && at < len(t1)-1
	slower := span(t05) < span(t1)
	fmtTraj := func(ts []float64) string {
		s := make([]string, len(ts))
		for i, v := range ts {
			s[i] = fmt.Sprintf("%.1f", v)
		}
		return strings.Join(s, " ")
	}
	c.Evidence = fmt.Sprintf("mean stable rank of the block matrices over training, γ=1: %s; γ=0.5: %s; relative range γ=1 %.2f, γ=0.5 %.2f",
		fmtTraj(t1), fmtTraj(t05), span(t1), span(t05))
	switch {
	case condensed && expanded && slower:
		c.Verdict = Supported
	case !condensed:
		c.Verdict = NotSupported
	}
	return c
}

// stableRankTrajectory is the mean stable rank of the q, k, v, o and FFN matrices at each diagnostics step.
func stableRankTrajectory(path string) ([]float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []float64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec struct {
			Step        int `json:"step"`
			Diagnostics struct {
				Classes []diag.ClassSummary `json:"classes"`
			} `json:"diagnostics"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var s float64
		var n int
		for _, cl := range rec.Diagnostics.Classes {
			switch cl.Class {
			case model.ClassQ, model.ClassK, model.ClassV, model.ClassO, model.ClassFFNGate, model.ClassFFNUp, model.ClassFFNDown:
				s += cl.StableRank
				n++
			}
		}
		if n > 0 {
			out = append(out, s/float64(n))
		}
	}
	return out, nil
}
