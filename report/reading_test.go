package report

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/smallinit/smallinit/summary"
)

// TestNoiseRangeIsNoTighterThanTheSeeds: a final-loss axis spans the data and at least four seed-to-seed SDs;
// the SD is the largest measured over a point's seeds (SE·√n), else the project's measured summary.SeedNoise.
func TestNoiseRangeIsNoTighterThanTheSeeds(t *testing.T) {
	for _, c := range []struct {
		name         string
		ses          []float64
		ns           []int
		lo, hi       float64
		sd           float64
		measured     bool
		wantLo, want float64
	}{
		// One seed per point: SeedNoise 0.019, span max(0.026, 0.076) = 0.076 around 7.253, ×1.1.
		{"one seed, close points", []float64{math.NaN(), math.NaN()}, []int{1, 1}, 7.24, 7.266, summary.SeedNoise, false, 7.253 - 0.0418, 7.253 + 0.0418},
		// SE 0.01 over 4 seeds: SD 0.02; span max(0.3, 0.08) = 0.3, ×1.1.
		{"seeds, far points", []float64{0.01, 0.005}, []int{4, 4}, 7.0, 7.3, 0.02, true, 7.15 - 0.165, 7.15 + 0.165},
	} {
		sd, measured := seedNoise(c.ses, c.ns)
		lo, hi := noiseRange(c.lo, c.hi, sd)
		if math.Abs(sd-c.sd) > 1e-12 || measured != c.measured || math.Abs(lo-c.wantLo) > 1e-9 || math.Abs(hi-c.want) > 1e-9 {
			t.Errorf("%s: SD %v (measured %v), range [%v, %v]; want %v (%v), [%v, %v]", c.name, sd, measured, lo, hi, c.sd, c.measured, c.wantLo, c.want)
		}
	}
}

// TestPlainTickLabels: ticks read as a reader writes numbers: "25", not "25.00"; no binary fractions or "-0";
// token counts as "200k" and "1M", not "200000" and "1e+06".
func TestPlainTickLabels(t *testing.T) {
	for v, want := range map[float64]string{25: "25", 0.5: "0.5", 7.26: "7.26", 0.1 + 0.2: "0.3", math.Copysign(0, -1): "0", 40000: "40k", 2e6: "2M", 1.05e6: "1.05M", 200000: "200k", 2.5e9: "2.5B", -3e6: "-3M", 9999: "9999", 1e-5: "1e-05"} {
		if got := plainLabel(v); got != want {
			t.Errorf("plainLabel(%v) = %q, want %q", v, got, want)
		}
	}
	for _, tk := range (distinctTicks{}).Ticks(0, 100) {
		if tk.Label != "" && tk.Label != plainLabel(tk.Value) {
			t.Errorf("tick %v labelled %q", tk.Value, tk.Label)
		}
	}
}

// TestShareColumnsGivesEveryRowTheColumnsAxes: the panels of a column get one x and y range covering all of
// them (on a log axis padded in log space), so that small multiples are read on one scale.
func TestShareColumnsGivesEveryRowTheColumnsAxes(t *testing.T) {
	rows := [][]Panel{
		{{LogY: true, Series: []Series{{X: []float64{0, 20}, Y: []float64{30, 90}}}}, {Series: []Series{{X: []float64{0, 20}, Y: []float64{1, 1.01}}}}},
		{{LogY: true, Series: []Series{{X: []float64{0, 10}, Y: []float64{2, 50}}}}, {Series: []Series{{X: []float64{0, 20}, Y: []float64{1, 6}}}}},
	}
	shareColumns(rows)
	f := math.Pow(90.0/2, 0.05)
	for i := range rows {
		if r := rows[i][0]; math.Abs(r.YRange[0]-2/f) > 1e-9 || math.Abs(r.YRange[1]-90*f) > 1e-9 || r.XRange[0] != 0 || r.XRange[1] != 20 {
			t.Errorf("row %d, log column: x %v, y %v; want [0, 20], [%v, %v]", i, r.XRange, r.YRange, 2/f, 90*f)
		}
		if r := rows[i][1]; math.Abs(r.YRange[0]-0.75) > 1e-9 || math.Abs(r.YRange[1]-6.25) > 1e-9 {
			t.Errorf("row %d, linear column: y %v, want [0.75, 6.25]", i, r.YRange)
		}
	}
}

// TestAlignedTilesKeepTitlesInside: the canvas of every panel of a small multiple lies within its tile (a title
// drawn at the canvas top is never cut off), and the data areas of a row share their top and bottom.
func TestAlignedTilesKeepTitlesInside(t *testing.T) {
	var rows [][]*plot.Plot
	for _, logY := range []bool{true, false} {
		var row []*plot.Plot
		for _, label := range []string{"a long y label that reaches past the data", "short"} {
			p, _ := seriesPlot(Panel{Title: "a title", XLabel: "step", YLabel: label, LogY: logY,
				Series: []Series{{X: []float64{0, 20}, Y: []float64{2, 100}}}})
			fixLogRanges(p)
			row = append(row, p)
		}
		rows = append(rows, row)
	}
	dc := draw.New(vgsvg.New(vg.Points(780), vg.Points(460)))
	tiles := draw.Tiles{Rows: 2, Cols: 2, PadX: vg.Points(14), PadY: vg.Points(10)}
	cs := alignTiles(rows, tiles, dc)
	for i := range rows {
		var top, bottom []vg.Length
		for j, p := range rows[i] {
			tile, c := tiles.At(dc, j, i), cs[i][j]
			if c.Min.X < tile.Min.X || c.Max.X > tile.Max.X || c.Min.Y < tile.Min.Y || c.Max.Y > tile.Max.Y {
				t.Errorf("panel (%d, %d): canvas %v leaves its tile %v", i, j, c.Rectangle, tile.Rectangle)
			}
			d := p.DataCanvas(c)
			top, bottom = append(top, d.Max.Y), append(bottom, d.Min.Y)
		}
		if math.Abs(float64(top[0]-top[1])) > 0.01 || math.Abs(float64(bottom[0]-bottom[1])) > 0.01 {
			t.Errorf("row %d: data tops %v, bottoms %v; want them shared", i, top, bottom)
		}
	}
}

// TestReadingJudgesTheSpreadAgainstTheNoise: the reading names the lowest and highest arms and compares their
// spread with the noise of their difference: the 95% t half-width over seeds (t at the smaller arm's degrees
// of freedom), else twice summary.SeedNoise for arms of one seed. Numbers worked by hand.
func TestReadingJudgesTheSpreadAgainstTheNoise(t *testing.T) {
	arm := func(label string, losses ...float64) *Arm {
		a := &Arm{Label: label}
		for _, l := range losses {
			a.Runs = append(a.Runs, &Run{Complete: true, Summary: &summary.Row{ValLoss: l}})
		}
		return a
	}
	for _, c := range []struct {
		name string
		arms []*Arm
		want []string
	}{
		// SEs 0.01 and 0.02 over 3 seeds: SE of the difference √0.0005 = 0.02236, t(0.975, 2) = 4.30: 0.0962.
		{"seeds, within", []*Arm{arm("a", 7.19, 7.2, 7.21), arm("b", 7.23, 7.25, 7.27)},
			[]string{"Lowest final validation loss: a at 7.2000 ± 0.0058 (SE, 3 seeds); highest: b at 7.2500 ± 0.0115 (SE, 3 seeds), a spread of 0.0500 nats across 2 arms.",
				"within the noise", "t = 4.30 at 2 degrees of freedom"}},
		{"one seed, beyond", []*Arm{arm("a", 7.2), arm("b", 7.3), arm("c", 7.25)},
			[]string{"Lowest final validation loss: a at 7.2000 (1 seed: no SE); highest: b at 7.3000 (1 seed: no SE), a spread of 0.1000 nats across 3 arms.",
				"exceeds the noise (0.0380 nats"}},
		{"one seed, within", []*Arm{arm("a", 7.2), arm("b", 7.226)}, []string{"within the noise (0.0380 nats"}},
		{"nothing complete", nil, []string{"No arm has a complete run yet"}},
	} {
		got := (&Data{Arms: c.arms}).reading()
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: reading %q lacks %q", c.name, got, w)
			}
		}
	}
}
