package model

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
)

// benchPreset builds the named preset with random weights (std d_in^-1/2) on a 2-worker pool.
func benchPreset(b *testing.B, name string, batch int) (*Model, func()) {
	b.Helper()
	p, err := arch.LookupPreset(name)
	if err != nil {
		b.Fatal(err)
	}
	pool := kernel.NewPool(2)
	m, err := New(p.Config, batch, pool)
	if err != nil {
		b.Fatal(err)
	}
	fillRandom(m, 1, 0.5)
	return m, pool.Close
}

// BenchmarkGenerate: greedy generation with the KV-cache decoder on the tiny preset, a 16-token prompt then
// one token at a time to the full context; reports generated tokens/s.
func BenchmarkGenerate(b *testing.B) {
	m, done := benchPreset(b, "tiny", 1)
	defer done()
	dec := m.NewDecoder()
	prompt, _ := randomTokens(rand.New(rand.NewPCG(2, 2)), 16, m.Config.Vocab)
	gen := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dec.Reset()
		logits, err := dec.Append(prompt)
		for err == nil && dec.Len() < dec.Max() {
			best := 0
			for j, v := range logits {
				if v > logits[best] {
					best = j
				}
			}
			logits, err = dec.Append([]int32{int32(best)})
			gen++
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(gen)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkTrainStep: one Forward, ZeroGrads and Backward of the tiny preset at its batch; reports tokens/s.
func BenchmarkTrainStep(b *testing.B) {
	p, _ := arch.LookupPreset("tiny")
	m, done := benchPreset(b, "tiny", p.Batch)
	defer done()
	in, tg := randomTokens(rand.New(rand.NewPCG(3, 3)), p.Batch*m.Config.SeqLen, m.Config.Vocab)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.Forward(in, tg); err != nil {
			b.Fatal(err)
		}
		m.ZeroGrads()
		m.Backward()
	}
	b.ReportMetric(float64(b.N*len(in))/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkPrecision: Forward, ZeroGrads and Backward of each preset at its batch, alternating float32 and bf16
// matmuls step by step in one process (so that both see the same state of a shared machine); reports the
// median tokens/s of each and their ratio. Run with -benchtime=Nx: N steps of each precision.
func BenchmarkPrecision(b *testing.B) {
	for _, name := range []string{"tiny", "small", "medium"} {
		b.Run(name, func(b *testing.B) {
			p, _ := arch.LookupPreset(name)
			m, done := benchPreset(b, name, p.Batch)
			defer done()
			in, tg := randomTokens(rand.New(rand.NewPCG(3, 3)), p.Batch*m.Config.SeqLen, m.Config.Vocab)
			step := func(bf16 bool) float64 {
				m.SetPrecision(precisionOf(bf16))
				t0 := time.Now()
				if _, err := m.Forward(in, tg); err != nil {
					b.Fatal(err)
				}
				m.ZeroGrads()
				m.Backward()
				return time.Since(t0).Seconds()
			}
			step(false)
			step(true)
			var t32, t16 []float64
			for b.Loop() {
				t32 = append(t32, step(false))
				t16 = append(t16, step(true))
			}
			med := func(x []float64) float64 { sort.Float64s(x); return x[len(x)/2] }
			f, h := float64(len(in))/med(t32), float64(len(in))/med(t16)
			b.ReportMetric(f, "f32-tokens/s")
			b.ReportMetric(h, "bf16-tokens/s")
			b.ReportMetric(h/f, "bf16/f32")
		})
	}
}
