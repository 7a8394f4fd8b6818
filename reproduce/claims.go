package reproduce

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
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
	// ValLoss is the mean validation loss, its standard error over seeds and the seed count per configuration
	// label, for the configurations that have finished runs.
	ValLoss map[string]ArmLoss `json:"val_loss"`
}

// ArmLoss is one configuration's validation loss over its seeds.
type ArmLoss struct {
	Mean  float64  `json:"mean"`
	SE    *float64 `json:"se"` // null with one seed
	Seeds int      `json:"seeds"`
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

// verdict compares a difference d (positive: the claim's direction) with its standard error: beyond two
// standard errors either way it decides. A NaN difference or standard error (an arm without runs, or one seed,
// see meanSE) is inconclusive.
func verdict(d, se float64) string {
	switch {
	case math.IsNaN(d) || math.IsNaN(se):
		return Inconclusive
	case d > 2*se:
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
	res.ValLoss = map[string]ArmLoss{}
	label := func(name string, ls []float64) (float64, float64) {
		m, se := meanSE(ls)
		if len(ls) > 0 {
			a := ArmLoss{Mean: m, Seeds: len(ls)}
			if !math.IsNaN(se) {
				a.SE = &se
			}
			res.ValLoss[name] = a
		}
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
		ev = fmt.Sprintf("%s; effective model size of γ=1 at width 128 from L(N) of γ=0.5 over 4 widths: %+.0f%% (95%% bootstrap %+.0f%%..%+.0f%%; the study: +44%%)", ev, 100*effGain[0], 100*effGain[1], 100*effGain[2])
	}
	// Both halves: the fixes widen γ = 1's lead, and with them γ = 1 is worth more model size (the bootstrap
	// interval of its effective-size gain above 0). Either going clearly the other way refutes the claim.
	v2 := verdict(dd, sdd)
	switch {
	case effGain != nil && effGain[2] < 0:
		v2 = NotSupported
	case v2 == Supported && (effGain == nil || !(effGain[1] > 0)):
		v2 = Inconclusive
	}
	res.Claims = append(res.Claims, Claim{N: 2, Text: "ε = 1e-5 and the attention sink hold γ = 1 back; with both fixes γ = 1 is worth more model size",
		Verdict: v2, Evidence: ev})

	// Claim 3: γ = 1 is critical (loss is best at 1 and worse past it).
	// An arm without runs has a NaN mean, which never compares as the best.
	best, bestM, bestSE := 0.0, math.Inf(1), math.NaN()
	var parts []string
	mPast, sPast := math.NaN(), math.NaN()
	for _, gm := range gammas {
		m, se := label(fmt.Sprintf("gamma%g fixed", gm), g(gm))
		parts = append(parts, fmt.Sprintf("γ=%g %.4f±%.4f", gm, m, se))
		if m < bestM {
			best, bestM, bestSE = gm, m, se
		}
		if gm == 1.5 {
			mPast, sPast = m, se
		}
	}
	v3 := Inconclusive
	switch {
	case best == 1 && verdict(mPast-m1, math.Hypot(sPast, se1)) == Supported:
		v3 = Supported
	case best != 1 && verdict(m1-bestM, math.Hypot(bestSE, se1)) == Supported:
		v3 = NotSupported // another γ is lower than γ = 1 beyond the noise of both
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

// effectiveSize fits L(N) on γ = 0.5 over the four widths (fixes on) and returns the width-128 γ = 1 runs'
// effective-size gain with its bootstrap interval over seeds, or why it could not; the evidence says when
// N_eff lies beyond the fitted sizes.
func effectiveSize(rows []row) (*[3]float64, string) {
	t := &fit.Table{Columns: []string{"N", "val_loss", "seed", "init.gamma", "tokens", "state"}}
	var n128 int64 // the γ sweep's size: width 128
	for _, r := range rows {
		if r.exp == ExpGamma {
			n128 = r.n
		}
	}
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
		var at *fit.Gain
		for i := range law.Treated {
			if law.Treated[i].X == float64(n128) {
				at = &law.Treated[i]
			}
		}
		if at == nil || at.Error != "" {
			return nil, "no effective size for γ=1 at width 128"
		}
		out := [3]float64{at.Gain, math.NaN(), math.NaN()}
		if at.CI != nil && len(at.Losses) >= 2 { // resampling one seed gives a point, not an interval
			out[1], out[2] = at.CI.Lo, at.CI.Hi
		}
		ev := fmt.Sprintf("L(N) = %.3f + %.3g·N^(−%.3f)", law.Law.E, law.Law.A, law.Law.Alpha)
		maxN := 0.0
		for _, c := range law.Baseline {
			maxN = max(maxN, c.X)
		}
		if at.Eff > maxN {
			ev += fmt.Sprintf(" (N_eff %.3g is beyond the largest fitted size %.3g: an extrapolation)", at.Eff, maxN)
		}
		return &out, ev
	}
	return nil, "size law not fitted"
}

// seedPairs returns, per seed (ascending), the γ = 1 and γ = 0.5 run directories of the γ sweep (width 128, both
// fixes), for the seeds that have both.
func seedPairs(rows []row) (seeds []string, pairs map[string][2]string) {
	pairs = map[string][2]string{}
	for _, r := range rows {
		if r.exp != ExpGamma {
			continue
		}
		p := pairs[r.str("seed")]
		switch r.num("init.gamma") {
		case 1:
			p[0] = r.dir
		case 0.5:
			p[1] = r.dir
		}
		pairs[r.str("seed")] = p
	}
	for sd, p := range pairs {
		if p[0] != "" && p[1] != "" {
			seeds = append(seeds, sd)
		}
	}
	slices.Sort(seeds)
	return seeds, pairs
}

// tokenClaim compares γ = 1 (A) with γ = 0.5 (B), width 128, both fixes, seed by seed on the validation tokens:
// each seed's mean loss reduction over the medium-to-hard difficulty deciles 4-9 minus that over the easy
// deciles 1-3. Supported when that difference and the medium-to-hard reduction are above 0 beyond two standard
// errors over seeds; not supported when the difference is below 0 beyond them. a and b are the first seed's
// pair, which the report draws.
func tokenClaim(rows []row, dataDir string, windows int) (c Claim, a, b string) {
	c = Claim{N: 4, Text: "gains concentrate on medium-to-hard tokens, not on easy ones", Verdict: Inconclusive}
	seeds, pairs := seedPairs(rows)
	if len(seeds) == 0 {
		c.Evidence = "runs missing"
		return c, a, b
	}
	a, b = pairs[seeds[0]][0], pairs[seeds[0]][1]
	pool := kernel.NewPool(0)
	defer pool.Close()
	var toks []int32
	var bins [][]float64 // per seed, the loss reduction per decile
	var diffs, mids []float64
	for _, sd := range seeds {
		ma, _, err := model.Load(filepath.Join(pairs[sd][0], train.FinalDir), 8, pool)
		if err != nil {
			c.Evidence = err.Error()
			return c, a, b
		}
		mb, _, err := model.Load(filepath.Join(pairs[sd][1], train.FinalDir), 8, pool)
		if err != nil {
			c.Evidence = err.Error()
			return c, a, b
		}
		if toks == nil {
			if toks, err = data.ReadTokens(filepath.Join(dataDir, data.ValFile), ma.Config.Vocab); err != nil {
				c.Evidence = err.Error()
				return c, a, b
			}
		}
		cmp, err := diag.Compare(ma, mb, toks, 10, windows, nil)
		if err != nil {
			c.Evidence = err.Error()
			return c, a, b
		}
		// Easy: the 3 easiest deciles; medium-to-hard: deciles 4-9; the hardest decile holds the rare and noisy
		// tokens.
		var easy, mid, red []float64
		for i, bin := range cmp.Bins {
			red = append(red, bin.LossReduction)
			switch {
			case i < 3:
				easy = append(easy, bin.LossReduction)
			case i < 9:
				mid = append(mid, bin.LossReduction)
			}
		}
		me, _ := meanSE(easy)
		mm, _ := meanSE(mid)
		bins, diffs, mids = append(bins, red), append(diffs, mm-me), append(mids, mm)
	}
	parts := make([]string, len(bins[0]))
	for i := range parts {
		var v []float64
		for _, r := range bins {
			v = append(v, r[i])
		}
		m, _ := meanSE(v)
		parts[i] = fmt.Sprintf("%+.3f", m)
	}
	dm, sdm := meanSE(diffs)
	mm, smm := meanSE(mids)
	c.Evidence = fmt.Sprintf("loss reduction of γ=1 over γ=0.5 by difficulty decile (easy→hard), mean over %d seeds: %s; deciles 4-9 %+.4f ± %.4f; deciles 4-9 minus 1-3 %+.4f ± %.4f (± = SE over seeds)",
		len(seeds), strings.Join(parts, " "), mm, smm, dm, sdm)
	switch {
	case verdict(dm, sdm) == Supported && verdict(mm, smm) == Supported:
		c.Verdict = Supported
	case verdict(dm, sdm) == NotSupported:
		c.Verdict = NotSupported
	}
	return c, a, b
}

// condensationClaim reads the γ = 1 and γ = 0.5 runs' diagnostics (width 128, fixes), seed by seed: the mean
// stable rank of the block matrices over training. Condense-then-expand: γ = 1's minimum is below 0.9 of its
// start and its end above 1.1 of the minimum, while γ = 0.5 changes less (relative range). Supported when every
// seed (at least two) shows all three; not supported when no seed's γ = 1 condenses; otherwise, or with one
// seed, inconclusive.
func condensationClaim(rows []row) Claim {
	c := Claim{N: 5, Text: "with γ = 1 weights first condense (stable rank drops) then expand; γ = 0.5 starts diffuse and changes slowly", Verdict: Inconclusive}
	seeds, pairs := seedPairs(rows)
	span := func(ts []float64) float64 {
		mn, mx := math.Inf(1), math.Inf(-1)
		for _, v := range ts {
			mn, mx = math.Min(mn, v), math.Max(mx, v)
		}
		return (mx - mn) / ts[0]
	}
	fmtTraj := func(ts []float64) string {
		s := make([]string, len(ts))
		for i, v := range ts {
			s[i] = fmt.Sprintf("%.1f", v)
		}
		return strings.Join(s, " ")
	}
	var ev []string
	shown, condensing, all := 0, 0, 0
	for _, sd := range seeds {
		t1, err := stableRankTrajectory(filepath.Join(pairs[sd][0], train.DiagFile))
		if err != nil {
			c.Evidence = err.Error()
			return c
		}
		t05, err := stableRankTrajectory(filepath.Join(pairs[sd][1], train.DiagFile))
		if err != nil {
			c.Evidence = err.Error()
			return c
		}
		if len(t1) < 3 || len(t05) < 3 {
			continue
		}
		lo, at := math.Inf(1), 0
		for i, v := range t1 {
			if v < lo {
				lo, at = v, i
			}
		}
		condensed := lo < 0.9*t1[0] && at > 0
		expanded := t1[len(t1)-1] > 1.1*lo && at < len(t1)-1
		slower := span(t05) < span(t1)
		shown++
		if condensed {
			condensing++
		}
		if condensed && expanded && slower {
			all++
		}
		ev = append(ev, fmt.Sprintf("seed %s: γ=1 %s; γ=0.5 %s; relative range γ=1 %.2f, γ=0.5 %.2f", sd, fmtTraj(t1), fmtTraj(t05), span(t1), span(t05)))
	}
	if shown == 0 {
		c.Evidence = "diagnostics missing"
		return c
	}
	c.Evidence = fmt.Sprintf("mean stable rank of the block matrices over training; %s; %d of %d seeds condense then expand with γ = 0.5 changing less",
		strings.Join(ev, "; "), all, shown)
	switch {
	case shown >= 2 && all == shown:
		c.Verdict = Supported
	case shown >= 2 && condensing == 0:
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
