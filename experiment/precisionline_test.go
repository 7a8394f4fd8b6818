package experiment

import "testing"

// TestPrecisionLineNamesEveryPrecision: the printed plan names each precision with its arms, whatever the
// precisions are (a new row of the precision table needs no case here).
func TestPrecisionLineNamesEveryPrecision(t *testing.T) {
	arm := func(g, a, p string) ArmLine { return ArmLine{Group: g, Arm: a, Precision: p} }
	for _, tc := range []struct {
		arms []ArmLine
		note string
		want string
	}{
		{nil, "", ""},
		{[]ArmLine{arm("g", "a", "bf16"), arm("g", "b", "bf16")}, "auto", "matmul precision: bf16 in every arm (train.precision; auto)"},
		{[]ArmLine{arm("g", "a", "f32"), arm("g", "b", "bf16"), arm("h", "c", "bf16")}, "",
			"matmul precision: bf16 in g/b, h/c; f32 in g/a (train.precision)"},
		{[]ArmLine{arm("g", "a", "f32"), arm("g", "b", "bf16-tile"), arm("g", "c", "bf16")}, "",
			"matmul precision: bf16 in g/c; bf16-tile in g/b; f32 in g/a (train.precision)"},
	} {
		if got := precisionLine(tc.arms, tc.note); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.arms, got, tc.want)
		}
	}
}
