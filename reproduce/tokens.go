package reproduce

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/smallinit/smallinit/stats"
)

// TokenBin is one difficulty quantile of claim 4 over seeds: the reference model's loss range, the token count
// and, per seed, the mean loss reduction L_B − L_A (γ = 0.5 minus γ = 1: positive, γ = 1 is better) and mean
// Δ_sym (docs/definitions.md §4), with their means and t-intervals over seeds.
type TokenBin struct {
	RefRange      [2]float64     `json:"reference_loss_range"` // of the first seed
	Count         int            `json:"count"`                // tokens per seed (of the first seed)
	LossReduction stats.Estimate `json:"loss_reduction"`
	DeltaSym      stats.Estimate `json:"delta_sym"`
}

// deltaSym is docs/definitions.md §4's symmetric probability gap (p_A − p_B)/(p_A + p_B) from the two losses, p = e^(−loss);
// written as tanh((l_B − l_A)/2), which is the same quantity without underflow. (diag.Compare computes it from
// probabilities inside its loop; this reads per-token losses, which is what the claims get.)
func deltaSym(lA, lB float64) float64 { return math.Tanh((lB - lA) / 2) }

// seedBins is one seed's per-bin mean loss reduction and Δ_sym, tokens binned by the reference's loss into
// DifficultyBins equal-count quantiles (easiest first), and its mean loss reduction over all tokens.
type seedBins struct {
	red, dsym, lo, hi []float64
	count             []int
	overall           float64
}

func binTokens(t TokenLosses) (seedBins, error) {
	n := len(t.Ref)
	if len(t.A) != n || len(t.B) != n {
		return seedBins{}, fmt.Errorf("seed %d: %d, %d and %d per-token losses for A, B and the reference: they must be the same tokens", t.Seed, len(t.A), len(t.B), n)
	}
	if n < DifficultyBins {
		return seedBins{}, fmt.Errorf("seed %d: %d tokens, fewer than %d bins", t.Seed, n, DifficultyBins)
	}
	// Difficulty is the reference's loss, never the compared models' own (docs/definitions.md §4: that is confounded). Ties
	// keep token order.
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case t.Ref[a] < t.Ref[b]:
			return -1
		case t.Ref[a] > t.Ref[b]:
			return 1
		}
		return a - b
	})
	var sb seedBins
	var all float64
	for q := 0; q < DifficultyBins; q++ {
		part := idx[q*n/DifficultyBins : (q+1)*n/DifficultyBins]
		var r, d float64
		for _, i := range part {
			a, b := float64(t.A[i]), float64(t.B[i])
			r += b - a
			d += deltaSym(a, b)
		}
		all += r
		k := float64(len(part))
		sb.red = append(sb.red, r/k)
		sb.dsym = append(sb.dsym, d/k)
		sb.count = append(sb.count, len(part))
		sb.lo = append(sb.lo, float64(t.Ref[part[0]]))
		sb.hi = append(sb.hi, float64(t.Ref[part[len(part)-1]]))
	}
	sb.overall = all / float64(n)
	return sb, nil
}

// contrasts of the shape: the mean over medium-to-hard bins (4-9) minus the mean over easy bins (1-3), and the
// medium-to-hard mean minus the hardest bin (10). They are differences of bins of the same seed, so a gain (or
// loss) common to all tokens cancels: the shape is judged apart from the overall sign.
func contrasts(v []float64) (midEasy, midHard float64) {
	mean := func(x []float64) float64 {
		s := 0.0
		for _, y := range x {
			s += y
		}
		return s / float64(len(x))
	}
	easy, mid, hard := mean(v[:3]), mean(v[3:DifficultyBins-1]), v[DifficultyBins-1]
	return mid - easy, mid - hard
}

// judgeTokens is claim 4: γ = 1's gains concentrate on medium-to-hard tokens, not on easy ones nor on the
// hardest (rare, noisy) ones. Decisive, per seed then over seeds: the loss reduction of bins 4-9 minus that of
// bins 1-3, and of bins 4-9 minus bin 10. Reported: the overall loss reduction (the sign, judged by claim 1),
// the Δ_sym contrast, and every bin's loss reduction and Δ_sym.
func judgeTokens(ev *Evidence) Claim {
	text := "gains concentrate on medium-to-hard tokens, not on easy ones nor on the rarest"
	if len(ev.Tokens) == 0 {
		return Claim{N: 4, Text: text, Verdict: Inconclusive, Reason: "no per-token losses with a reference model", Evidence: "per-token losses missing"}
	}
	me, mh, ov, dme := stats.BySeed{}, stats.BySeed{}, stats.BySeed{}, stats.BySeed{}
	var per []seedBins
	var seeds []int
	for _, t := range ev.Tokens {
		sb, err := binTokens(t)
		if err != nil {
			return Claim{N: 4, Text: text, Verdict: Inconclusive, Reason: "bad per-token losses", Evidence: err.Error()}
		}
		me[t.Seed], mh[t.Seed] = contrasts(sb.red)
		dme[t.Seed], _ = contrasts(sb.dsym)
		ov[t.Seed] = sb.overall
		per = append(per, sb)
		seeds = append(seeds, t.Seed)
	}
	zero := stats.BySeed{}
	for _, s := range seeds {
		zero[s] = 0
	}
	var c claimTests
	c.delta = ev.delta()
	c.add("loss reduction, bins 4-9 minus bins 1-3", true, stats.Paired(me, zero))
	c.add("loss reduction, bins 4-9 minus bin 10", true, stats.Paired(mh, zero))
	c.add("overall loss reduction L(γ=0.5) − L(γ=1)", false, stats.Paired(ov, zero))
	c.add("Δ_sym, bins 4-9 minus bins 1-3", false, stats.Paired(dme, zero))
	cl := claimOf(4, text, fmt.Sprintf("γ=1 against γ=0.5, width %d, both fixes; tokens in %d quantiles of the loss of %s", ev.Width, DifficultyBins, refName(ev)), &c, "", nil)
	alpha := ClaimAlpha
	bins := make([]TokenBin, DifficultyBins)
	var reds []string
	for q := range bins {
		var r, d []float64
		for _, sb := range per {
			r, d = append(r, sb.red[q]), append(d, sb.dsym[q])
		}
		bins[q] = TokenBin{RefRange: [2]float64{per[0].lo[q], per[0].hi[q]}, Count: per[0].count[q],
			LossReduction: stats.Mean(r, seeds, alpha), DeltaSym: stats.Mean(d, seeds, alpha)}
		reds = append(reds, fmt.Sprintf("%+.3f/%+.3f", bins[q].LossReduction.Mean, bins[q].DeltaSym.Mean))
	}
	cl.Detail = map[string]any{"reference": refName(ev), "bins": bins}
	cl.Evidence += fmt.Sprintf("; per bin (easy→hard) loss reduction/Δ_sym, mean over %d seeds: %s", len(seeds), strings.Join(reds, " "))
	return cl
}

func refName(ev *Evidence) string {
	if ev.TokenRef == "" {
		return "a reference model"
	}
	return ev.TokenRef
}
