package stats

import (
	"math"
	"sort"
)

// Holm returns Holm's step-down adjusted p-values (Holm 1979): with the m p-values sorted ascending,
// p̃_(i) = max_{j ≤ i} min(1, (m − j + 1)·p_(j)). Rejecting every hypothesis with p̃ ≤ α controls the
// family-wise error rate at α for any dependence between the tests, and rejects at least what Bonferroni
// rejects. A NaN p-value (a comparison without a noise estimate) is treated as 1: never rejected.
func Holm(p []float64) []float64 {
	m := len(p)
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	val := func(i int) float64 {
		if math.IsNaN(p[i]) {
			return 1
		}
		return p[i]
	}
	sort.SliceStable(idx, func(a, b int) bool { return val(idx[a]) < val(idx[b]) })
	adj := make([]float64, m)
	run := 0.0
	for j, i := range idx {
		run = math.Max(run, math.Min(1, float64(m-j)*val(i)))
		adj[i] = run
	}
	return adj
}

// Bonferroni returns min(1, m·p) for each of the m p-values (NaN: 1). Its level α/m per comparison is also the
// level at which a claim's intervals and minimum detectable effects are stated when Holm decides it, since
// Holm's first step tests at α/m.
func Bonferroni(p []float64) []float64 {
	adj := make([]float64, len(p))
	for i, v := range p {
		if math.IsNaN(v) {
			v = 1
		}
		adj[i] = math.Min(1, float64(len(p))*v)
	}
	return adj
}
