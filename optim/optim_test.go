package optim

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/recipe"
)

// TestAdamWMatchesFloat64Reference runs five steps on a matrix (decayed) and a norm gain (not decayed) and
// compares with PyTorch's AdamW formula evaluated in float64.
func TestAdamWMatchesFloat64Reference(t *testing.T) {
	pool := kernel.NewPool(2)
	defer pool.Close()
	specs := []arch.TensorSpec{
		{Name: "w", Class: arch.ClassQ, Shape: []int{300, 100}, Offset: 0},
		{Name: "g", Class: arch.ClassNorm, Shape: []int{50000}, Offset: 30000},
	}
	n := 80000
	cfg := recipe.DefaultAdamW()
	o, err := NewAdamW(cfg, specs, pool)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	p := make([]float32, n)
	for i := range p {
		p[i] = float32(rng.NormFloat64())
	}
	p64 := make([]float64, n)
	m64, v64 := make([]float64, n), make([]float64, n)
	for i := range p {
		p64[i] = float64(p[i])
	}
	g := make([]float32, n)
	for step := 1; step <= 5; step++ {
		for i := range g {
			g[i] = float32(rng.NormFloat64() * 1e-3)
		}
		lr, scale := 1e-2*float64(step), float32(0.5)
		o.Update(p, g, lr, scale)
		for i := range p64 {
			gi := float64(g[i]) * float64(scale)
			if i < 30000 {
				p64[i] *= 1 - lr*cfg.WeightDecay
			}
			m64[i] = cfg.Beta1*m64[i] + (1-cfg.Beta1)*gi
			v64[i] = cfg.Beta2*v64[i] + (1-cfg.Beta2)*gi*gi
			mh := m64[i] / (1 - math.Pow(cfg.Beta1, float64(step)))
			vh := v64[i] / (1 - math.Pow(cfg.Beta2, float64(step)))
			p64[i] -= lr * mh / (math.Sqrt(vh) + cfg.Eps)
		}
	}
	var worst float64
	for i := range p {
		worst = math.Max(worst, math.Abs(float64(p[i])-p64[i]))
	}
	if worst > 1e-5 {
		t.Errorf("max |p − p_ref| = %.2e after 5 steps", worst)
	}
	if a := testing.AllocsPerRun(3, func() { o.Update(p, g, 1e-3, 1) }); a != 0 {
		t.Errorf("Update allocates %v times", a)
	}
}

func TestGradNormAndClip(t *testing.T) {
	pool := kernel.NewPool(2)
	defer pool.Close()
	o, _ := NewAdamW(recipe.DefaultAdamW(), []arch.TensorSpec{{Name: "w", Shape: []int{100000}}}, pool)
	g := make([]float32, 100000)
	for i := range g {
		g[i] = 0.01
	}
	if n := o.GradNorm(g); math.Abs(n-math.Sqrt(10)) > 1e-6 {
		t.Errorf("norm %g, want sqrt(10)", n)
	}
	for _, tc := range []struct{ n, max, want float64 }{{0.5, 1, 1}, {4, 1, 0.25}, {4, 0, 1}, {0, 1, 1}} {
		if got := ClipScale(tc.n, tc.max); math.Abs(float64(got)-tc.want) > 1e-7 {
			t.Errorf("ClipScale(%g, %g) = %g, want %g", tc.n, tc.max, got, tc.want)
		}
	}
}

func TestSchedules(t *testing.T) {
	cos := recipe.Schedule{Kind: recipe.ScheduleCosine, PeakLR: 1, Warmup: 10, MinRatio: 0.1, Total: 110}
	wsd := recipe.Schedule{Kind: recipe.ScheduleWSD, PeakLR: 1, Warmup: 10, MinRatio: 0.1, DecaySteps: 20, Total: 110}
	con := recipe.Schedule{Kind: recipe.ScheduleConstant, PeakLR: 1, Warmup: 10, Total: 110}
	for _, tc := range []struct {
		name string
		s    recipe.Schedule
		step int
		want float64
	}{
		{"cosine warmup start", cos, 0, 0.1},
		{"cosine peak", cos, 9, 1},
		{"cosine first decay step", cos, 10, 1},
		{"cosine middle", cos, 10 + 99/2, 0.1 + 0.9*0.5*(1+math.Cos(math.Pi*49.0/99))},
		{"cosine floor", cos, 109, 0.1},
		{"cosine past end", cos, 200, 0.1},
		{"wsd stable", wsd, 89, 1},
		{"wsd decay end", wsd, 109, 0.1},
		{"constant", con, 100, 1},
	} {
		if got := tc.s.LR(tc.step); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: LR(%d) = %g, want %g", tc.name, tc.step, got, tc.want)
		}
	}
	if err := (recipe.Schedule{Kind: "linear", PeakLR: 1}).Validate(); err == nil {
		t.Error("unknown kind accepted")
	}
}
