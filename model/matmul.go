package model

// SetBF16Matmuls chooses the precision of every matrix product of Forward, Backward and the decoder: with on,
// they run through kernel.Pool.GemmBF16 (both operands rounded to bfloat16, nearest even, products summed in
// float32; the bf16 copy of the weights is made as each product packs its operands, so it always matches the
// float32 master weights the optimizer just updated); off (the default) keeps them float32 and the results bit
// for bit what they were. Parameters, gradients, norms, softmax, the loss and everything outside the products
// stay float32 either way.
func (m *Model) SetBF16Matmuls(on bool) { m.bf16 = on }

// BF16Matmuls reports the setting of SetBF16Matmuls.
func (m *Model) BF16Matmuls() bool { return m.bf16 }

// gemm is the model's one entry to kernel.Pool.Gemm (float32) or GemmBF16, chosen by SetBF16Matmuls.
func (m *Model) gemm(transA, transB bool, rows, cols, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool) {
	if m.bf16 {
		m.pool.GemmBF16(transA, transB, rows, cols, k, a, lda, b, ldb, c, ldc, accumulate)
		return
	}
	m.pool.Gemm(transA, transB, rows, cols, k, a, lda, b, ldb, c, ldc, accumulate)
}

// gemmOn is gemm on worker w only (kernel.Pool.GemmOn or GemmOnBF16), for the per-head products inside a For body.
func (m *Model) gemmOn(w int, transA, transB bool, rows, cols, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool) {
	if m.bf16 {
		m.pool.GemmOnBF16(w, transA, transB, rows, cols, k, a, lda, b, ldb, c, ldc, accumulate)
		return
	}
	m.pool.GemmOn(w, transA, transB, rows, cols, k, a, lda, b, ldb, c, ldc, accumulate)
}
