package optim

import (
	"math"
	"strconv"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/safetensors"
)

// torchAdamWFixture is written by `python/torchref.py adamw --out testdata/adamw` (see testdata/adamw/README.md):
// 20 steps of torch.optim.AdamW (β = (0.9, 0.95), ε = 1e-8, weight decay 0.1 on the matrices w and e, 0 on the
// norm gain b) with torch.nn.utils.clip_grad_norm_(1.0) and a cosine schedule, all in float32.
const torchAdamWFixture = "../testdata/adamw/adamw.safetensors"

// Tolerances: relative error ‖x_go − x_torch‖/‖x_torch‖ per tensor.
const (
	torchParamTol  = 1e-6 // parameters after every step
	torchMomentTol = 1e-6 // exp_avg and exp_avg_sq after the last step
)

// TestAdamWMatchesPyTorch replays the fixture's gradients through GradNorm, ClipScale and Update with the
// Schedule's learning rates and compares the parameters with PyTorch's after each step, and the moments at the end.
func TestAdamWMatchesPyTorch(t *testing.T) {
	f, err := safetensors.Open(torchAdamWFixture)
	if err != nil {
		t.Fatalf("%v (regenerate with: /usr/bin/python3 python/torchref.py adamw --out testdata/adamw)", err)
	}
	defer f.Close()

	sched := recipe.Schedule{Kind: recipe.ScheduleCosine, PeakLR: 1e-2, Warmup: 5, MinRatio: 0.1, Total: 20}
	if err := sched.Validate(); err != nil {
		t.Fatal(err)
	}
	const steps = 20

	// Tensor layout: w [37, 29] and e [64, 16] are matrices (weight-decayed), b [29] a norm gain (not decayed).
	var specs []arch.TensorSpec
	off := 0
	for _, ts := range []struct {
		name, class string
		rank        int
	}{{"w", arch.ClassQ, 2}, {"b", arch.ClassNorm, 1}, {"e", arch.ClassEmbed, 2}} {
		info, ok := f.Info("init." + ts.name)
		if !ok || len(info.Shape) != ts.rank {
			t.Fatalf("fixture: init.%s missing or not of rank %d", ts.name, ts.rank)
		}
		spec := arch.TensorSpec{Name: ts.name, Class: ts.class, Layer: -1, Shape: info.Shape, Offset: off}
		if spec.IsMatrix() != (ts.rank == 2) {
			t.Fatalf("%s: IsMatrix = %v", ts.name, spec.IsMatrix())
		}
		specs = append(specs, spec)
		off += spec.Size()
	}
	n := off

	read32 := func(name string, dst []float32) {
		t.Helper()
		if err := f.ReadFloat32(name, dst); err != nil {
			t.Fatal(err)
		}
	}
	read64 := func(name string, size int) []float64 {
		t.Helper()
		v := make([]float64, size)
		if err := f.ReadFloat64(name, v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	// readFlat reads the tensors prefix+<name> into one flat buffer with the specs' layout.
	readFlat := func(prefix string, dst []float32) {
		t.Helper()
		for _, s := range specs {
			read32(prefix+s.Name, dst[s.Offset:s.Offset+s.Size()])
		}
	}
	relErr := func(got, want []float32) float64 {
		var num, den float64
		for i := range want {
			d := float64(got[i]) - float64(want[i])
			num += d * d
			den += float64(want[i]) * float64(want[i])
		}
		return math.Sqrt(num) / math.Max(math.Sqrt(den), 1e-30)
	}

	lrs := read64("lr", steps)
	norms := read64("grad_norm", steps)
	coefs := read64("clip_coef", steps)

	pool := kernel.NewPool(2)
	defer pool.Close()
	o, err := NewAdamW(recipe.DefaultAdamW(), specs, pool)
	if err != nil {
		t.Fatal(err)
	}
	params, grads, want := make([]float32, n), make([]float32, n), make([]float32, n)
	readFlat("init.", params)
	clipped := 0
	var worstParam float64
	for step := 0; step < steps; step++ {
		lr := sched.LR(step)
		if math.Abs(lr-lrs[step]) > 1e-12 {
			t.Errorf("step %d: Schedule.LR = %.15g, fixture lr %.15g", step, lr, lrs[step])
		}
		readFlat("grad."+strconv.Itoa(step)+".", grads)
		norm := o.GradNorm(grads)
		if e := math.Abs(norm-norms[step]) / norms[step]; e > 1e-6 {
			t.Errorf("step %d: GradNorm %.9g, PyTorch clip_grad_norm_ %.9g (rel err %.1e)", step, norm, norms[step], e)
		}
		scale := ClipScale(norm, 1)
		// Both multiply by max_norm/(norm + 1e-6), clamped to 1.
		if e := math.Abs(float64(scale)-coefs[step]) / coefs[step]; e > 2e-6 {
			t.Errorf("step %d: ClipScale %.9g, PyTorch clip coefficient %.9g (rel err %.1e)", step, scale, coefs[step], e)
		}
		if scale < 1 {
			clipped++
		}
		o.Update(params, grads, lr, scale)
		readFlat("param."+strconv.Itoa(step)+".", want)
		for _, s := range specs {
			e := relErr(params[s.Offset:s.Offset+s.Size()], want[s.Offset:s.Offset+s.Size()])
			if e > torchParamTol {
				t.Errorf("step %d: %s: parameter rel err %.2e > %g", step, s.Name, e, torchParamTol)
			}
			worstParam = math.Max(worstParam, e)
		}
	}
	if clipped == 0 || clipped == steps {
		t.Errorf("fixture clips %d of %d steps: want both clipped and unclipped steps", clipped, steps)
	}
	var worstMoment float64
	for _, mom := range []struct {
		prefix string
		got    []float32
	}{{"exp_avg.", o.M}, {"exp_avg_sq.", o.V}} {
		readFlat(mom.prefix, want)
		for _, s := range specs {
			e := relErr(mom.got[s.Offset:s.Offset+s.Size()], want[s.Offset:s.Offset+s.Size()])
			if e > torchMomentTol {
				t.Errorf("%s%s: rel err %.2e > %g", mom.prefix, s.Name, e, torchMomentTol)
			}
			worstMoment = math.Max(worstMoment, e)
		}
	}
	t.Logf("%d steps (%d clipped): worst parameter rel err %.2e, worst moment rel err %.2e", steps, clipped, worstParam, worstMoment)
}
