package tune

import (
	"math"
	"testing"
)

// TestAtWidthInterpolatesLogLog checks log-log interpolation between the swept widths, the factor-2 clamp
// beyond them, exact values at the swept widths, and the errors.
func TestAtWidthInterpolatesLogLog(t *testing.T) {
	a, b := Swept{64, 8e-3}, Swept{128, 4e-3} // LR ∝ 1/width between them
	for _, c := range []struct {
		w    int
		want float64
	}{
		{64, 8e-3}, {128, 4e-3}, {96, 8e-3 * 64.0 / 96}, {256, 2e-3}, {512, 2e-3}, // 512: 1e-3 clamped to 4e-3/2
		{32, 1.6e-2}, {16, 1.6e-2},
	} {
		for _, order := range [][2]Swept{{a, b}, {b, a}} {
			got, err := AtWidth(order[0], order[1], c.w)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-c.want) > 1e-12 {
				t.Errorf("AtWidth(%v, %v, %d) = %g, want %g", order[0], order[1], c.w, got, c.want)
			}
		}
	}
	for _, c := range [][3]any{{Swept{64, 0}, b, 96}, {a, Swept{0, 1e-3}, 96}, {a, b, 0}, {a, Swept{64, 1e-3}, 96}} {
		if _, err := AtWidth(c[0].(Swept), c[1].(Swept), c[2].(int)); err == nil {
			t.Errorf("AtWidth%v accepted", c)
		}
	}
}
