package model

import "github.com/smallinit/smallinit/kernel"

// SetPrecision chooses the precision of every matrix product of Forward, Backward and the decoder: the
// products run through the pool's GEMM in p (kernel.Pool.In). With kernel.BF16 both operands are rounded to
// bfloat16 (nearest even) and the products summed in float32; the bf16 copy of the weights is made as each
// product packs its operands, so it always matches the float32 master weights the optimizer just updated.
// kernel.F32 (the default) keeps them float32, the results bit for bit what they were. Parameters,
// gradients, norms, softmax, the loss and everything outside the products stay float32 in every precision.
func (m *Model) SetPrecision(p kernel.Precision) {
	m.prec = p
	m.mm = m.pool.In(p)
}

// Precision reports the setting of SetPrecision.
func (m *Model) Precision() kernel.Precision { return m.prec }

// gemm is the model's one entry to the pool's GEMM, in the precision chosen by SetPrecision.
func (m *Model) gemm(transA, transB bool, rows, cols, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool) {
	m.mm.Gemm(transA, transB, rows, cols, k, a, lda, b, ldb, c, ldc, accumulate)
}

// gemmOn is gemm on worker w only (kernel.Gemmer.GemmOn), for the per-head products inside a For body.
func (m *Model) gemmOn(w int, transA, transB bool, rows, cols, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool) {
	m.mm.GemmOn(w, transA, transB, rows, cols, k, a, lda, b, ldb, c, ldc, accumulate)
}
