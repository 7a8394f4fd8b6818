package budget

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/internal/runlock"
	"github.com/smallinit/smallinit/train"
)

// SizingFile (in a study's output directory) records how a budget was sized, so that a plan run again (after
// an interrupt, or to add the demo's --probes) resumes the runs it named instead of sizing new ones from a
// fresh throughput probe, whose runs would have other step counts and so other directories. It records the
// engine, device and precision its probes were measured under (ProbeKey): under another it is refused, never
// reused.
const SizingFile = "sizing.json"

// SizingLock is the lock file under which one process sizes a budget for every process sharing its directory
// (Shared).
const SizingLock = "sizing.lock"

// Sizing is how a budget was sized: the steps per run its throughput probe gave. Files of builds before the
// plans (the demo's {"minutes", "steps"}) are read too.
type Sizing struct {
	Budget          string  `json:"budget,omitempty"`
	Minutes         float64 `json:"minutes,omitempty"`
	Seeds           int     `json:"seeds,omitempty"`
	Steps           int     `json:"steps"`
	ProbeTokensPerS float64 `json:"probe_tokens_per_s,omitempty"`
	// ProbeOverheadS is the overhead probe's fixed cost of one run in seconds (OverheadProbe; 0: not
	// measured, a sizing written before it existed).
	ProbeOverheadS float64 `json:"probe_overhead_s,omitempty"`
	// ProbeScoreTokensPerS is the scoring probe's forward tokens/s (OverheadProbe; 0: not measured, a sizing
	// written before it existed).
	ProbeScoreTokensPerS float64 `json:"probe_score_tokens_per_s,omitempty"`
	// ProbeKey is what the probes were measured under (empty in a sizing written before it was recorded).
	ProbeKey
}

// ProbeKey is what a sizing's probes hold for: the engine that trained them, the device it trained on
// (train.Engine's TrainsOn) and the precision of the base model's matmuls. Under another key the same budget
// is another number of steps (a GPU trains tens of times faster than this CPU, bf16 faster than f32), so a
// sizing is reused only under its own key (Sizing.Check).
type ProbeKey struct {
	Engine    string `json:"engine,omitempty"`
	Device    string `json:"device,omitempty"`
	Precision string `json:"precision,omitempty"`
}

// Differs says how the key k differs from the sizing's ("" when it is the sizing's own). A sizing that records
// no key was written by a build before the key was recorded, when only the Go engine's probes sized a budget:
// it is the Go engine's on an unknown device at an unknown precision.
func (s Sizing) Differs(k ProbeKey) string {
	r := s.ProbeKey
	if r == (ProbeKey{}) {
		if k.Engine == train.EngineGo {
			return ""
		}
		return fmt.Sprintf("it records no engine or device (a build before they were recorded, when only the Go engine's probe sized a budget); this one trains with engine %s on %s", k.Engine, k.Device)
	}
	var d []string
	for _, f := range []struct{ what, was, is string }{{"engine", r.Engine, k.Engine}, {"device", r.Device, k.Device}, {"precision", r.Precision, k.Precision}} {
		if f.was != f.is {
			d = append(d, fmt.Sprintf("%s %s, not %s", f.what, f.was, f.is))
		}
	}
	if len(d) == 0 {
		return ""
	}
	return "its probes were measured under " + strings.Join(d, "; ")
}

// Check refuses the sizing s at path for the key k when it was measured under another (Differs), naming what
// differs and the ways on: the recorded engine, device and precision resume its runs; --steps with its steps
// keeps them under this key; deleting it sizes the budget anew (and the runs sized by it are not resumed).
func (s Sizing) Check(path string, k ProbeKey) error {
	why := s.Differs(k)
	if why == "" {
		return nil
	}
	return fmt.Errorf("%s: a sizing of %s (%d steps per run) that this study cannot reuse: %s. Run again with the recorded engine, --device and precision to resume its runs; give --steps %d to train its runs here; or delete %s to size the budget on this engine and device (the runs sized by it are then not resumed)",
		path, s.SizedFor(), s.Steps, why, s.Steps, path)
}

// ReadSizing reads a sizing file, refusing one that cannot have been written by WriteSizing.
func ReadSizing(path string) (Sizing, error) {
	var s Sizing
	b, err := inputfile.ReadFile(path, inputfile.MaxConfig)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w (delete it to size the budget again)", path, err)
	}
	if s.Steps < 1 || s.Seeds < 0 || s.Seeds == 0 && s.Budget != "" || s.Steps > MaxSteps {
		return s, fmt.Errorf("%s: steps %d, seeds %d are not a sizing (delete it to size the budget again)", path, s.Steps, s.Seeds)
	}
	return s, nil
}

// WriteSizing writes s to path atomically, as indented JSON (the format ReadSizing reads and run directories
// of earlier builds hold).
func WriteSizing(path string, s Sizing) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return atomicfile.Write(path, append(b, '\n'))
}

// Matches reports whether the sizing was made for budget and a seed count of seeds (a sizing of the demo before
// the plans records no seeds and matches any).
func (s Sizing) Matches(budget time.Duration, seeds int) bool {
	return s.For(budget) && (s.Seeds == 0 || s.Seeds == seeds)
}

// For reports whether the sizing was made for budget (at any seed count).
func (s Sizing) For(budget time.Duration) bool { return s.SizedFor() == budget.String() }

// SizedFor is the budget the sizing was made for, as time.Duration prints it (a demo's file before the plans
// gives minutes).
func (s Sizing) SizedFor() string {
	if s.Budget == "" && s.Minutes > 0 {
		return ofMinutes(s.Minutes).String()
	}
	return s.Budget
}

// Shared returns the steps per run of the one sizing that every process sharing dir (job-array tasks,
// concurrent studies) uses: reuse's when it finds a sizing on record, else size's. Only the first process
// sizes: it takes dir's SizingLock, probes and writes sizing.json in size; the others wait for the lock (or
// for reuse to find the sizing) and then read what it wrote, so every run of the plan has the same steps.
// logf says that a process waits, and for whom.
func Shared(ctx context.Context, dir string, reuse func() (int, bool, error), size func() (int, error), logf func(string, ...any)) (int, error) {
	if n, ok, err := reuse(); ok || err != nil {
		return n, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	l, err := runlock.Wait(ctx, filepath.Join(dir, SizingLock), runlock.DefaultStaleAfter, time.Second, nil,
		func() bool { _, ok, _ := reuse(); return ok },
		func(holder string) { logf("waiting for the sizing of %s (%s)\n", dir, holder) })
	if err != nil {
		return 0, fmt.Errorf("sizing %s: %w", dir, err)
	}
	if l != nil {
		defer l.Release()
	}
	if n, ok, err := reuse(); ok || err != nil {
		return n, err
	}
	return size()
}
