package rundir

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/internal/allocs"
)

// TestReadLinesRefusesALongLine: a line over the cap is an error naming the file and the line, read without
// holding more than the cap (the cap is small here; the runs' readers use maxLine).
func TestReadLinesRefusesALongLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), MetricsFile)
	os.WriteFile(path, []byte("{\"step\":1}\n"+strings.Repeat("x", 5000)+"\n"), 0o644)
	n := 0
	err := readLinesMax(path, 1000, func([]byte) error { n++; return nil })
	if err == nil || !strings.Contains(err.Error(), path+" line 2") || !strings.Contains(err.Error(), "longer than") || n != 1 {
		t.Errorf("%d lines, error %v; want 1 line and an error naming %s line 2", n, err, path)
	}
}

// TestOpenRunRefusesAFile: a run directory that is a file, or missing, is an error naming it.
func TestOpenRunRefusesAFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, nil, 0o644)
	if _, err := Open(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("Open of a file: %v", err)
	}
	if _, err := Open(p + "x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a missing path: %v, want fs.ErrNotExist", err)
	}
}

// TestSummariseThroughput: the throughput is the logged tokens over the time their intervals took; lines
// without a throughput or without new tokens add nothing, and no such line at all gives NaN.
func TestSummariseThroughput(t *testing.T) {
	v := 4.0
	cases := []struct {
		name string
		ms   []Metrics
		want float64
	}{
		{"none", nil, math.NaN()},
		{"validation line only", []Metrics{{Step: 0, ValLoss: &v}}, math.NaN()},
		// 100 tokens in 1 s, then 300 tokens in 1 s: 400 tokens in 2 s.
		{"two intervals", []Metrics{{Step: 0, ValLoss: &v}, {Step: 1, Tokens: 100, TokensPerS: 100}, {Step: 2, Tokens: 400, TokensPerS: 300}}, 200},
		{"repeated tokens add nothing", []Metrics{{Step: 1, Tokens: 100, TokensPerS: 100}, {Step: 1, Tokens: 100, TokensPerS: 5}}, 100},
	}
	for _, tc := range cases {
		got := Summarise(tc.ms).TokensPerS
		if !(got == tc.want || math.IsNaN(got) && math.IsNaN(tc.want)) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// FuzzRunMetrics reads arbitrary bytes as a run's metrics.jsonl (status and collect read it, possibly while it
// is being written). Errors must name the file; a summary must have no infinite losses (JSON has none); it
// may allocate at most 1 MB plus 64 bytes per byte of the file beyond the reader's buffer.
func FuzzRunMetrics(f *testing.F) {
	f.Add([]byte(`{"step":0,"tokens":0,"val_loss":4.1}` + "\n" + `{"step":2,"tokens":64,"loss":3.9,"lr":0.001,"grad_norm":1.2,"tokens_per_s":1000}` + "\n" + `{"step":4,"tok`))
	f.Add([]byte("{\"step\":1}\nnot json\n{\"step\":2}\n"))
	f.Add([]byte("\n\n{\"step\":-5,\"tokens\":-1,\"tokens_per_s\":1e308,\"val_loss\":1e308}\n"))
	f.Add([]byte(strings.Repeat("x", 100000)))
	dir := f.TempDir()
	path := filepath.Join(dir, MetricsFile)
	r, err := Open(dir)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var s Summary
		var err error
		n := allocs.Bytes(func() { s, err = r.Summary() })
		if limit := uint64(1<<20 + 64*len(b)); n > limit {
			t.Fatalf("Summary of %d bytes allocated %d bytes (limit %d)", len(b), n, limit)
		}
		if err != nil && !strings.Contains(err.Error(), path) {
			t.Fatalf("error does not name the file: %v", err)
		}
		for _, v := range []float64{s.TrainLoss, s.ValLoss, s.BestValLoss} {
			if math.IsInf(v, 0) {
				t.Fatalf("summary %+v", s)
			}
		}
	})
}
