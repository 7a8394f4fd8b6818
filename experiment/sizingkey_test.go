package experiment

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smallinit/smallinit/budget"
	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/train"
)

// TestSizingKeyedByEngineAndDevice: a sizing on record for the budget is reused only under the engine, device
// and precision its probes were measured under; under another it is refused, naming what differs, the
// recorded steps (--steps N keeps them) and the file to delete, and the file is left as it was. A sizing
// written before the key was recorded is the Go engine's. Another budget is sized anew under the new key.
func TestSizingKeyedByEngineAndDevice(t *testing.T) {
	gpu := &probingEngine{tps: 4000, name: train.EngineTorch, device: "cuda: NVIDIA H100 80GB HBM3"}
	here := train.GoEngine{}.TrainsOn()
	for _, tc := range []struct {
		name    string
		file    string
		engine  train.Engine
		want    []string // in the refusal; nil: reused
		wantLog string
	}{
		{name: "same key", engine: nil,
			file: `{"budget":"5m0s","seeds":1,"steps":1234,"engine":"go","device":"` + here + `","precision":"f32"}`},
		{name: "another engine", engine: nil,
			file: `{"budget":"5m0s","seeds":1,"steps":1234,"engine":"torch","device":"cuda: NVIDIA H100 80GB HBM3","precision":"f32"}`,
			want: []string{"engine torch, not go", "device cuda: NVIDIA H100 80GB HBM3, not " + here, "--steps 1234", "delete"}},
		{name: "the Go engine on another CPU", engine: nil,
			file: `{"budget":"5m0s","seeds":1,"steps":1234,"engine":"go","device":"cpu: Some Other CPU (avx2)","precision":"f32"}`,
			want: []string{"device cpu: Some Other CPU (avx2), not " + here, "--steps 1234"}},
		{name: "another precision", engine: nil,
			file: `{"budget":"5m0s","seeds":1,"steps":1234,"engine":"go","device":"` + here + `","precision":"bf16"}`,
			want: []string{"precision bf16, not f32"}},
		{name: "a GPU sizing read on the GPU", engine: gpu,
			file: `{"budget":"5m0s","seeds":1,"steps":1234,"engine":"torch","device":"cuda: NVIDIA H100 80GB HBM3","precision":"f32"}`},
		{name: "a CPU sizing read on the GPU", engine: gpu,
			file: `{"budget":"5m0s","seeds":1,"steps":1234,"engine":"go","device":"` + here + `","precision":"f32"}`,
			want: []string{"engine go, not torch", "device " + here + ", not cuda: NVIDIA H100 80GB HBM3"}},
		{name: "no key on record, the Go engine", engine: nil, file: `{"budget":"5m0s","seeds":1,"steps":1234}`},
		{name: "no key on record, another engine", engine: gpu, file: `{"minutes": 5, "steps": 1234}`,
			want: []string{"records no engine or device", "engine torch on cuda: NVIDIA H100 80GB HBM3", "a sizing of 5m0s", "--steps 1234"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			path := filepath.Join(out, budget.SizingFile)
			if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			p := demoPlan(t)
			var log strings.Builder
			o := Options{Out: out, Budget: 5 * time.Minute, Seeds: []uint64{0}, Log: &log, Engine: tc.engine}
			res := &Outcome{Plan: p, Out: out, DataDir: filepath.Join(out, DataDir), Seeds: o.Seeds, Stats: &data.Stats{VocabSize: 256}}
			steps, err := size(context.Background(), p, res, &o, false)
			if tc.want == nil {
				if err != nil || steps != 1234 || !strings.Contains(log.String(), "reusing the sizing") {
					t.Errorf("%d steps, %v, log %q; want the recorded 1234 reused", steps, err, log.String())
				}
				return
			}
			if err == nil {
				t.Fatalf("%d steps, log %q; want the sizing refused", steps, log.String())
			}
			for _, w := range append(tc.want, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q does not say %q", err, w)
				}
			}
			if b, _ := os.ReadFile(path); string(b) != tc.file {
				t.Errorf("sizing file rewritten: %s", b)
			}
			// print-plan's description refuses it the same way.
			if _, err := Describe(p, Options{Out: out, Budget: 5 * time.Minute, Seeds: []uint64{0}, Engine: tc.engine}, 1e9); err == nil || !strings.Contains(err.Error(), tc.want[0]) {
				t.Errorf("Describe: %v, want the sizing refused (%q)", err, tc.want[0])
			}
		})
	}
}

// TestSizingProbesWithThePlansEngine: a budget sized under an engine that is not the Go engine takes its
// throughput from that engine's own probe and trains the overhead probe's run through that engine (not the
// Go trainer), and sizing.json records the engine, device and precision; run again, it is reused.
func TestSizingProbesWithThePlansEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: the overhead probe trains a run")
	}
	out := t.TempDir()
	// The engine's throughput is set far above what the probe's run reaches on any CPU, so that the overhead
	// (the run's wall time less its steps at that throughput) is measured whatever the machine's load; at 4000
	// tokens/s a quiet machine trained the probe's 20 steps faster than that and the overhead came out 0.
	eng := &probingEngine{tps: 4e9, name: "other", device: "npu: Test Accelerator"}
	p := demoPlan(t)
	var log strings.Builder
	o := Options{Out: out, Budget: 600 * time.Millisecond, Seeds: []uint64{0}, Log: &log, Engine: eng}
	res := &Outcome{Plan: p, Out: out, DataDir: filepath.Join(out, DataDir), Seeds: o.Seeds, Stats: &data.Stats{VocabSize: 256}}
	if _, err := size(context.Background(), p, res, &o, false); err != nil {
		t.Fatal(err)
	}
	if len(eng.trained) != 1 || !strings.Contains(eng.trained[0], "smallinit-overhead-") {
		t.Errorf("the engine trained %q; want the overhead probe's one run", eng.trained)
	}
	s, err := budget.ReadSizing(filepath.Join(out, budget.SizingFile))
	if err != nil || s.ProbeKey != (budget.ProbeKey{Engine: "other", Device: "npu: Test Accelerator", Precision: "f32"}) || s.ProbeTokensPerS != 4e9 || !(s.ProbeOverheadS > 0) {
		t.Errorf("sizing %+v, %v; want the engine's key, its 4e9 tokens/s and a measured overhead", s, err)
	}
	if !strings.Contains(log.String(), "throughput probe (engine other on npu: Test Accelerator, precision f32): 4000000000 tokens/s") {
		t.Errorf("log %q does not name the engine and device of the probe", log.String())
	}
	log.Reset()
	if _, err := size(context.Background(), p, res, &o, false); err != nil || !strings.Contains(log.String(), "reusing the sizing") || len(eng.trained) != 1 {
		t.Errorf("again: %v, log %q, %d runs trained; want the sizing reused, nothing probed", err, log.String(), len(eng.trained))
	}
}
