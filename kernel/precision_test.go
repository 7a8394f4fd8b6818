package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestEveryKernelSetRunsEveryPrecision checks that each kernel set of this CPU has, for every precision, a
// micro-kernel with packers and blocking (its own or the precision's twin), that F32 is always its own, and
// that a precision's twin keeps the KC its results depend on; so that a precision added to the table without
// a twin fails here rather than with a nil call in a run.
func TestEveryKernelSetRunsEveryPrecision(t *testing.T) {
	for _, im := range available() {
		for _, prec := range Precisions() {
			g := im.gemmFor(prec)
			if g.kern == nil || g.mr <= 0 || g.nr <= 0 || g.kc <= 0 || g.mc%g.mr != 0 || g.nc%g.nr != 0 {
				t.Errorf("%s: precision %s: kernel %+v is missing or mis-blocked", im.name, prec, g)
			}
			kc := g.kc
			if g.split {
				kc /= 2 // two float32 steps per pair (bf16split.go)
			}
			if tw := precisions[prec].twin; tw != nil && im.nativeFor(prec) && kc != tw.kc {
				t.Errorf("%s: precision %s: native KC %d pairs, twin's %d (the result depends on it)", im.name, prec, kc, tw.kc)
			}
		}
		if !im.nativeFor(F32) {
			t.Errorf("%s: no F32 kernel of its own", im.name)
		}
	}
	if genericImpl.nativeFor(BF16) || genericImpl.gemmFor(BF16) != &genericBF16Gemm {
		t.Error("the generic set does not run BF16 through its twin")
	}
}

// TestPrecisionNamesAreDistinct checks that the precisions have distinct, non-empty names, since configs and
// records carry the name.
func TestPrecisionNamesAreDistinct(t *testing.T) {
	seen := map[string]Precision{}
	for _, p := range Precisions() {
		n := p.String()
		if n == "" || strings.HasPrefix(n, "precision(") {
			t.Errorf("precision %d has no name", p)
		}
		if q, ok := seen[n]; ok {
			t.Errorf("precisions %d and %d are both %q", q, p, n)
		}
		seen[n] = p
	}
	if got, want := NumPrecisions.String(), fmt.Sprintf("precision(%d)", NumPrecisions); got != want {
		t.Errorf("NumPrecisions.String() = %q, want %s", got, want)
	}
}

// TestGemmIsTheF32Precision checks that Pool.Gemm and GemmOn are In(F32)'s products bit for bit, and that
// In(BF16) differs from them on values bfloat16 cannot hold (so the slot really switches the arithmetic).
func TestGemmIsTheF32Precision(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	const m, n, k = 37, 29, 70
	a, b := randSlice(rng, m*k), randSlice(rng, k*n)
	run := func(f func(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool)) []float32 {
		c := make([]float32, m*n)
		f(false, false, m, n, k, a, k, b, n, c, n, false)
		return c
	}
	on := func(g func(w int, transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool)) func(bool, bool, int, int, int, []float32, int, []float32, int, []float32, int, bool) {
		return func(ta, tb bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, acc bool) {
			g(1, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, acc)
		}
	}
	ref, bf := run(p.In(F32).Gemm), run(p.In(BF16).Gemm)
	for name, got := range map[string][]float32{"Gemm": run(p.Gemm), "GemmOn": run(on(p.GemmOn)), "In(F32).GemmOn": run(on(p.In(F32).GemmOn))} {
		for i := range ref {
			if math.Float32bits(got[i]) != math.Float32bits(ref[i]) {
				t.Fatalf("%s: C[%d] = %v, In(F32).Gemm %v", name, i, got[i], ref[i])
			}
		}
	}
	same := 0
	for i := range ref {
		if ref[i] == bf[i] {
			same++
		}
	}
	if same == len(ref) {
		t.Errorf("In(BF16).Gemm gave the float32 product exactly on random operands")
	}
}

// TestInRejectsAnUnknownPrecision checks that a precision outside the table panics with the package's name.
func TestInRejectsAnUnknownPrecision(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "kernel.Pool.In") {
			t.Errorf("In(NumPrecisions): recovered %v, want a kernel.Pool.In panic", r)
		}
	}()
	p.In(NumPrecisions)
}
