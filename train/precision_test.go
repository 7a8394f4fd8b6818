package train

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/recipe"
)

// TestChoosePrecisionNeedsTheGain: float32 is kept unless another precision is at least PrecisionGainMin
// faster; among those that are, the fastest wins.
func TestChoosePrecisionNeedsTheGain(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    []PrecisionTiming
		want string
	}{
		{"only f32", []PrecisionTiming{{Precision: "f32", TokensPerS: 100}}, "f32"},
		{"bf16 inside the noise", []PrecisionTiming{{Precision: "f32", TokensPerS: 100}, {Precision: "bf16", TokensPerS: 104}}, "f32"},
		{"bf16 slower", []PrecisionTiming{{Precision: "f32", TokensPerS: 100}, {Precision: "bf16", TokensPerS: 72}}, "f32"},
		{"bf16 faster", []PrecisionTiming{{Precision: "f32", TokensPerS: 100}, {Precision: "bf16", TokensPerS: 160}}, "bf16"},
		{"the fastest of two", []PrecisionTiming{{Precision: "f32", TokensPerS: 100}, {Precision: "bf16", TokensPerS: 150}, {Precision: "x", TokensPerS: 200}}, "x"},
	} {
		if got := choosePrecision(tc.c); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestPrecisionKindsEligibility: float32 is first and always eligible; every other row names the parity
// record that made it eligible, and that record exists in the repository.
func TestPrecisionKindsEligibility(t *testing.T) {
	kinds := PrecisionKinds()
	if kinds[0].Name() != "f32" || !kinds[0].Native() || eligiblePrecisions()[0] != "f32" {
		t.Fatalf("float32 must be the first, always eligible precision: %+v", kinds[0])
	}
	for _, k := range kinds[1:] {
		if k.Parity == "" {
			continue // not eligible: no parity run yet
		}
		if _, err := os.Stat(filepath.Join("..", k.Parity)); err != nil {
			t.Errorf("%s: parity record: %v", k.Name(), err)
		}
	}
	if slices.Contains(eligiblePrecisions(), "bf16") != kernel.BF16.Native() {
		t.Errorf("bf16 eligible = %v with a bf16 kernel (AVX512_BF16 or AVX2) = %v", !kernel.BF16.Native(), kernel.BF16.Native())
	}
}

// precisionTestConfig is a model small enough to probe in a test.
func precisionTestConfig(t *testing.T) recipe.Config {
	c, err := Load("", []string{"model.vocab_size=64", "model.hidden_size=16", "model.num_hidden_layers=1",
		"model.num_attention_heads=2", "model.max_position_embeddings=16", "train.batch_size=2", "train.threads=1",
		"train.precision=auto", "data.train=unused.tok"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPrecisionForRecordsAndReuses: the first call measures and records; a second call with the same CPU,
// model size, batch, threads and candidates reuses the record as written (its figures are not the probe's);
// a record for another model size is measured again; a record that does not parse is an error naming it.
func TestPrecisionForRecordsAndReuses(t *testing.T) {
	c := precisionTestConfig(t)
	path := filepath.Join(t.TempDir(), "sub", PrecisionFile)
	first, err := PrecisionFor(path, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(eligiblePrecisions(), first.Precision) || first.CPU != kernel.CPUModel() || first.Params != c.Model.NumParams() {
		t.Fatalf("first measurement %+v", first)
	}
	if len(first.Candidates) > 1 {
		for _, cand := range first.Candidates {
			if !(cand.TokensPerS > 0) {
				t.Fatalf("candidate %s not timed: %+v", cand.Precision, first)
			}
		}
	}
	// Each candidate names the micro-kernel that ran it, and the logged line says so.
	for _, cand := range first.Candidates {
		p, _ := ParsePrecision(cand.Precision)
		if cand.Kernel != p.Kernel() || !strings.Contains(first.String(), cand.Kernel) {
			t.Errorf("candidate %s: kernel %q, want %q named in %q", cand.Precision, cand.Kernel, p.Kernel(), first.String())
		}
	}
	// A record with made-up figures for the same key is reused as written.
	rec := first
	rec.Candidates = slices.Clone(first.Candidates)
	for i := range rec.Candidates {
		rec.Candidates[i].TokensPerS = float64(1000 + i)
	}
	rec.Precision = rec.Candidates[len(rec.Candidates)-1].Precision
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := PrecisionFor(path, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Precision != rec.Precision || again.Candidates[0].TokensPerS != 1000 {
		t.Errorf("the matching record was not reused: got %+v, recorded %+v", again, rec)
	}
	// Another model size: measured again (the made-up figures are replaced).
	rec.Params++
	b, _ = json.Marshal(rec)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	other, err := PrecisionFor(path, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if other.Params != c.Model.NumParams() || len(other.Candidates) > 1 && other.Candidates[0].TokensPerS == 1000 {
		t.Errorf("a record for another model size was reused: %+v", other)
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := PrecisionFor(path, c, nil); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a broken record: error %v, want one naming %s", err, path)
	}
}

// TestResolvePrecision: "auto" becomes an eligible precision (recorded in the directory), which the config
// then names; an explicit precision is returned untouched and nothing is written.
func TestResolvePrecision(t *testing.T) {
	c := precisionTestConfig(t)
	dir := t.TempDir()
	got, err := ResolvePrecision(c, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(eligiblePrecisions(), got.Train.Precision) {
		t.Errorf("auto resolved to %q", got.Train.Precision)
	}
	if _, err := os.Stat(filepath.Join(dir, PrecisionFile)); err != nil {
		t.Errorf("no record: %v", err)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("resolved config: %v", err)
	}
	c.Train.Precision = "f32"
	dir2 := t.TempDir()
	if got, err := ResolvePrecision(c, dir2, nil); err != nil || got.Train.Precision != "f32" {
		t.Errorf("f32: %q, %v", got.Train.Precision, err)
	}
	if _, err := os.Stat(filepath.Join(dir2, PrecisionFile)); !os.IsNotExist(err) {
		t.Errorf("f32 wrote a record (%v)", err)
	}
}

// TestPeekPrecisionWritesNothing: a plan printed before it runs measures without recording.
func TestPeekPrecisionWritesNothing(t *testing.T) {
	c := precisionTestConfig(t)
	path := filepath.Join(t.TempDir(), PrecisionFile)
	pc, err := PeekPrecision(path, c, nil)
	if err != nil || !slices.Contains(eligiblePrecisions(), pc.Precision) {
		t.Fatalf("%+v, %v", pc, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("PeekPrecision wrote %s (%v)", path, err)
	}
}

// TestParsePrecisionReadsTheTable: every row's name parses to its kernel precision, "" is float32, and "auto"
// (a request to measure) and unknown names are errors naming the value.
func TestParsePrecisionReadsTheTable(t *testing.T) {
	tests := []struct {
		in      string
		want    kernel.Precision
		wantErr bool
	}{
		{"", kernel.F32, false},
		{"f32", kernel.F32, false},
		{"bf16", kernel.BF16, false},
		{PrecisionAuto, kernel.F32, true},
		{"fp8", kernel.F32, true},
		{"BF16", kernel.F32, true},
	}
	for _, tc := range tests {
		got, err := ParsePrecision(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParsePrecision(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.in)) {
			t.Errorf("ParsePrecision(%q): error %q does not name the value", tc.in, err)
		}
	}
	for _, k := range PrecisionKinds() {
		if p, err := ParsePrecision(k.Name()); err != nil || p != k.Precision {
			t.Errorf("row %s parses to %v, %v", k.Name(), p, err)
		}
	}
}

// TestBenchmarkRunsInTheParsedPrecision: Benchmark names the precision it ran (f32 for "") and refuses, naming
// the value, a precision that is not in the table.
func TestBenchmarkRunsInTheParsedPrecision(t *testing.T) {
	c := arch.Config{Vocab: 64, Dim: 32, FFN: 64, Layers: 1, Heads: 2, SeqLen: 8, NormEps: 1e-5,
		Norm: arch.NormRMS, AttnGate: arch.GateNone, RopeTheta: 10000, FFNKind: arch.FFNDense}
	r, err := Benchmark(c, BenchOptions{Batch: 2, Steps: 1, Warmup: 0, Threads: 1})
	if err != nil || r.Precision != "f32" {
		t.Fatalf("Benchmark with no precision: %q, %v; want f32", r.Precision, err)
	}
	if _, err := Benchmark(c, BenchOptions{Batch: 2, Steps: 1, Threads: 1, Precision: "fp8"}); err == nil || !strings.Contains(err.Error(), `"fp8"`) {
		t.Errorf("Benchmark with precision fp8: %v, want an error naming it", err)
	}
}

// TestPrecisionChoiceStringNeverPrintsZero: an untimed candidate (the only eligible precision, e.g. f32 on an
// AVX2-only CPU) is said to be untimed, never printed as "f32 0 tokens/s"; timed candidates keep their rates.
func TestPrecisionChoiceStringNeverPrintsZero(t *testing.T) {
	for _, tc := range []struct {
		name      string
		c         PrecisionChoice
		want, not []string
	}{
		{"untimed only candidate", PrecisionChoice{CPU: "AMD EPYC (avx2)", Precision: "f32", Candidates: []PrecisionTiming{{Precision: "f32"}}},
			[]string{"precision auto: f32 on AMD EPYC (avx2)", "not timed"}, []string{"0 tokens/s"}},
		{"timed pair", PrecisionChoice{CPU: "Zen 5", Precision: "bf16", Candidates: []PrecisionTiming{{Precision: "f32", TokensPerS: 920}, {Precision: "bf16", TokensPerS: 994}}},
			[]string{"f32 920 tokens/s, bf16 994 tokens/s on Zen 5: bf16", "the fastest"}, []string{"not timed"}},
	} {
		got := tc.c.String()
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tc.name, got, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(got, n) {
				t.Errorf("%s: %q contains %q", tc.name, got, n)
			}
		}
	}
}

// TestBenchmarkLogLines: without Progress (a pipe) every step is its own line and no "\r" is written; with it one
// status line is rewritten and ended once.
func TestBenchmarkLogLines(t *testing.T) {
	c := arch.Config{Vocab: 64, Dim: 32, FFN: 64, Layers: 1, Heads: 2, SeqLen: 8, NormEps: 1e-5,
		Norm: arch.NormRMS, AttnGate: arch.GateNone, RopeTheta: 10000, FFNKind: arch.FFNDense}
	for _, progress := range []bool{false, true} {
		var log strings.Builder
		if _, err := Benchmark(c, BenchOptions{Batch: 2, Steps: 2, Warmup: 1, Threads: 1, Log: &log, Progress: progress}); err != nil {
			t.Fatal(err)
		}
		got := log.String()
		lines, crs := strings.Count(got, "\n"), strings.Count(got, "\r")
		if !progress && (lines != 3 || crs != 0) || progress && (lines != 1 || crs != 3) {
			t.Errorf("progress %v: %d lines, %d carriage returns:\n%q", progress, lines, crs, got)
		}
	}
}
