package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/smallinit/smallinit/stats"
	"github.com/smallinit/smallinit/summary"
)

// armResult is an arm's final validation loss over its complete seeds (Arm.FinalVal).
type armResult struct {
	arm      *Arm
	mean, se float64
	n        int
}

// results are the arms with a complete run, lowest final validation loss first.
func (d *Data) results() []armResult {
	var out []armResult
	for _, a := range d.Arms {
		if mean, se, n := a.FinalVal(); n > 0 {
			out = append(out, armResult{arm: a, mean: mean, se: se, n: n})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].mean < out[j].mean })
	return out
}

// lossText is a final loss with its standard error over seeds, or the word that there is none.
func (r armResult) lossText() string {
	s := fmtLoss(r.mean)
	if r.n > 1 && !math.IsNaN(r.se) {
		return s + " ± " + strconv.FormatFloat(r.se, 'f', 4, 64) + fmt.Sprintf(" (SE, %d seeds)", r.n)
	}
	return s + " (1 seed: no SE)"
}

// seedNoise is the seed-to-seed standard deviation of a final loss that the points of a figure or the arms of
// a reading are judged against: the largest measured over the seeds of one point (SE·√n, where a point has
// two or more seeds), else summary.SeedNoise, the SD this project measured for a paired γ gain (measured false).
func seedNoise(ses []float64, ns []int) (sd float64, measured bool) {
	for i, se := range ses {
		if ns[i] > 1 && !math.IsNaN(se) {
			sd, measured = math.Max(sd, se*math.Sqrt(float64(ns[i]))), true
		}
	}
	if !measured {
		return summary.SeedNoise, false
	}
	return sd, true
}

// noiseText says where seedNoise's SD came from, for a caption or the reading.
func noiseText(sd float64, measured bool) string {
	if measured {
		return fmt.Sprintf("the largest seed-to-seed SD of a point here, %.3f nats", sd)
	}
	return fmt.Sprintf("%.3f nats, the seed-to-seed SD of a paired γ gain measured at 2,243 steps (docs/results/2026-12-02-reproduce-2h.md), "+
		"as a point here has one seed", sd)
}

// noiseRange is a y range for final losses spanning lo..hi (their error bars included) and at least four
// seed-to-seed SDs (±2 SD), centred on the data: a figure zoomed tighter would draw noise as an effect.
func noiseRange(lo, hi, sd float64) (float64, float64) {
	span := math.Max(hi-lo, 4*sd)
	c := (lo + hi) / 2
	return c - 0.55*span, c + 0.55*span
}

// noiseCaption is the sentence a final-loss figure adds about its y range.
func noiseCaption(sd float64, measured bool) string {
	return fmt.Sprintf(" The y axis spans at least four seed-to-seed SDs (4 × %.3f = %.3f nats; %s), so that differences within the noise look small.",
		sd, 4*sd, noiseText(sd, measured))
}

// reading is the report's headline: two sentences on the arms' final validation losses, the lowest and the
// highest, and whether their spread exceeds the noise of their difference: its 95% t half-width where both
// arms have seeds, else twice summary.SeedNoise.
func (d *Data) reading() string {
	rs := d.results()
	switch len(rs) {
	case 0:
		return "No arm has a complete run yet, so there is no final loss to read. The runs and how far they got are listed under Runs."
	case 1:
		return fmt.Sprintf("One arm, %s, has complete runs: final validation loss %s. With no other arm to compare, "+
			"this report shows its curves and diagnostics only.", rs[0].arm.Label, rs[0].lossText())
	}
	best, worst := rs[0], rs[len(rs)-1]
	spread := worst.mean - best.mean
	first := fmt.Sprintf("Lowest final validation loss: %s at %s; highest: %s at %s, a spread of %.4f nats across %d arms.",
		best.arm.Label, best.lossText(), worst.arm.Label, worst.lossText(), spread, len(rs))
	var noise float64
	var why string
	if best.n > 1 && worst.n > 1 && !math.IsNaN(best.se) && !math.IsNaN(worst.se) {
		// A 95% band for the difference of two means over seeds: t at the smaller arm's degrees of freedom
		// (Welch's lower bound, conservative) times the SE of the difference.
		df := min(best.n, worst.n) - 1
		t := stats.TQuantile(0.975, float64(df))
		noise = t * math.Hypot(best.se, worst.se)
		why = fmt.Sprintf("the 95%% half-width of their difference, t = %.2f at %d degree%s of freedom × its SE %.4f", t, df, plural(df), math.Hypot(best.se, worst.se))
	} else {
		noise = 2 * summary.SeedNoise
		why = fmt.Sprintf("twice the %.3f-nat seed-to-seed SD of a paired γ gain measured at 2,243 steps, as these arms have one seed", summary.SeedNoise)
	}
	if spread < noise {
		return first + fmt.Sprintf(" That is within the noise (%.4f nats, %s), so these runs do not rank the arms: more seeds would.", noise, why)
	}
	return first + fmt.Sprintf(" That exceeds the noise (%.4f nats, %s); arms closer together than that are not ranked by these runs.", noise, why)
}
