package kernel

// Shape is one GEMM problem: C (M×N) = op(A) (M×K) · op(B) (K×N), with the
// transposition flags of Pool.Gemm.
type Shape struct {
	Name           string
	TransA, TransB bool
	M, N, K        int
}

// Flops returns the floating-point operation count of the shape (2·M·N·K).
func (s Shape) Flops() float64 { return 2 * float64(s.M) * float64(s.N) * float64(s.K) }

// BenchShapes returns the six GEMM shapes of a training step (4096 tokens
// per batch; forward A·Bᵀ products and their backward A·B and Aᵀ·B
// counterparts) that BenchmarkGemm and the CLI's `bench --kernels` measure.
// Names are M×K×N followed by the layout: NT is A·Bᵀ, NN is A·B, TN is Aᵀ·B.
func BenchShapes() []Shape {
	return []Shape{
		{Name: "4096x256x768_NT", TransB: true, M: 4096, K: 256, N: 768},
		{Name: "4096x768x256_NN", M: 4096, K: 768, N: 256},
		{Name: "768x4096x256_TN", TransA: true, M: 768, K: 4096, N: 256},
		{Name: "4096x256x4096_NT", TransB: true, M: 4096, K: 256, N: 4096},
		{Name: "4096x512x1408_NT", TransB: true, M: 4096, K: 512, N: 1408},
		{Name: "4096x1408x512_NN", M: 4096, K: 1408, N: 512},
	}
}
