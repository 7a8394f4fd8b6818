// Package optim holds the optimizer (AdamW), gradient clipping and learning-rate schedules (docs/definitions.md §3).
package optim

import (
	"math"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/recipe"
)

// segment is a run of the flat parameter buffer with one weight-decay setting.
type segment struct {
	lo, hi int
	decay  bool
}

// AdamW is decoupled-weight-decay Adam (Loshchilov & Hutter 2019) over a model's flat parameter buffer, in one
// fused pass per step that also applies the gradient-clipping scale. Weight decay applies to matrices and
// embeddings, not to norm gains and biases.
type AdamW struct {
	Config recipe.AdamW
	M, V   []float32 // first and second moments, same layout as the parameters
	Step   int       // updates applied so far

	segs []segment
	pool *kernel.Pool
	norm []float64 // partial sums of squared gradients, one per fixed block of the buffer

	// operands of the running pass (set before pool.For; run is created once so that steps allocate nothing)
	params, grads []float32
	lr, b1c, b2c  float64
	scale         float32
	update, sumSq func(w, lo, hi int)
}

// NewAdamW allocates the optimizer state for a model with the given tensors.
func NewAdamW(c recipe.AdamW, specs []arch.TensorSpec, pool *kernel.Pool) (*AdamW, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	o := &AdamW{Config: c, pool: pool, norm: make([]float64, normBlocks)}
	n := 0
	for _, t := range specs {
		o.segs = append(o.segs, segment{lo: t.Offset, hi: t.Offset + t.Size(), decay: t.IsMatrix()})
		n = max(n, t.Offset+t.Size())
	}
	o.M, o.V = make([]float32, n), make([]float32, n)
	o.update = o.updateRange
	o.sumSq = o.sumSqRange
	return o, nil
}

// normBlocks is the number of fixed blocks GradNorm sums separately before adding them in order, so that the
// norm is bit-for-bit reproducible whatever the number of workers.
const normBlocks = 32

// GradNorm returns the global L2 norm of grads, summed in float64.
func (o *AdamW) GradNorm(grads []float32) float64 {
	o.grads = grads
	o.pool.For(normBlocks, 1, o.sumSq)
	var s float64
	for _, v := range o.norm {
		s += v
	}
	return math.Sqrt(s)
}

// sumSqRange sums the squares of blocks [lo, hi) of o.grads.
func (o *AdamW) sumSqRange(_, lo, hi int) {
	n := len(o.grads)
	for b := lo; b < hi; b++ {
		var s float64
		for _, g := range o.grads[b*n/normBlocks : (b+1)*n/normBlocks] {
			s += float64(g) * float64(g)
		}
		o.norm[b] = s
	}
}

// ClipScale is the factor that brings a gradient of norm n down to maxNorm: PyTorch's clip_grad_norm_
// coefficient maxNorm/(n + 1e-6), clamped to 1 (1 also when maxNorm ≤ 0).
func ClipScale(n, maxNorm float64) float32 {
	if maxNorm <= 0 || n == 0 {
		return 1
	}
	c := maxNorm / (n + 1e-6)
	if c >= 1 {
		return 1
	}
	return float32(c)
}

// Update applies one AdamW step with learning rate lr to params, using grads multiplied by scale (the
// clipping factor):
//
//	g ← scale·g;  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
//	p ← p − lr·λ·p (decayed tensors only);  p ← p − lr · (m / (1−β1^t)) / (sqrt(v / (1−β2^t)) + ε)
//
// which is PyTorch's AdamW update.
func (o *AdamW) Update(params, grads []float32, lr float64, scale float32) {
	o.Step++
	o.params, o.grads, o.lr, o.scale = params, grads, lr, scale
	o.b1c = 1 - math.Pow(o.Config.Beta1, float64(o.Step))
	o.b2c = 1 - math.Pow(o.Config.Beta2, float64(o.Step))
	o.pool.For(len(params), 1<<14, o.update)
}

func (o *AdamW) updateRange(_, lo, hi int) {
	c := o.Config
	b1, b2 := float32(c.Beta1), float32(c.Beta2)
	omb1, omb2 := float32(1-c.Beta1), float32(1-c.Beta2) // 1 − β in float64, rounded once, as PyTorch passes it
	stepSize := float32(o.lr / o.b1c)
	bc2 := float32(math.Sqrt(o.b2c))
	eps := float32(c.Eps)
	for _, s := range o.segs {
		a, b := max(lo, s.lo), min(hi, s.hi)
		if a >= b {
			continue
		}
		decay := float32(1)
		if s.decay {
			decay = float32(1 - o.lr*c.WeightDecay)
		}
		// PyTorch: denom = sqrt(v)/sqrt(bias_correction2) + eps; p -= (lr/bias_correction1)·m/denom
		// (kernel.AdamW, with PyTorch's operation order; AVX-512 where the CPU has it, same bits).
		kernel.AdamW(o.params[a:b], o.grads[a:b], o.M[a:b], o.V[a:b], kernel.AdamWCoeffs{Scale: o.scale, Beta1: b1, OneMinusBeta1: omb1,
			Beta2: b2, OneMinusBeta2: omb2, Decay: decay, StepSize: stepSize, SqrtBC2: bc2, Eps: eps})
	}
}
