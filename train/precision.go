package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/recipe"
)

// PrecisionAuto is train.precision's setting that measures instead of naming a precision: the eligible
// precisions this CPU runs natively are timed on the run's own model, batch and threads, and the fastest
// is taken (PrecisionFor). A CPU flag alone never decides.
const PrecisionAuto = "auto"

// PrecisionGainMin is how much faster than float32 another precision must be before "auto" takes it: below
// it the difference is within this machine's run-to-run noise (a few per cent on a shared 2-core machine),
// and float32, the reference arithmetic, is kept.
const PrecisionGainMin = 1.05

// PrecisionKind is one matmul precision "auto" can choose: the kernel precision (whose name is the
// train.precision value), the kernels that run it, and the parity record that made it eligible. A precision is
// eligible only once the bf16 parity protocol (scripts/bf16-parity.sh: validation loss, stable rank and sink
// rate inside float32's seed spread) has passed for its kernels; an AMX tile path is a precision of its own
// (TDPBF16PS rounds differently from VDPBF16PS, see kernel/tile.go) and joins this table, one row, when its
// kernel exists and its parity run has passed.
type PrecisionKind struct {
	Precision kernel.Precision
	Kernel    string
	Parity    string // the parity record (a docs/results file); f32 is the reference itself
	// Ceilings are the arithmetic ceilings a benchmark reads the model FLOP/s of this precision against: its
	// matmuls' unit, and float32 FMAs, which run the rest of the step (norms, softmax, the optimizer).
	Ceilings []kernel.Ceiling
}

// Name is the precision's train.precision value ("f32", "bf16").
func (k PrecisionKind) Name() string { return k.Precision.String() }

// Native says whether this CPU runs the precision's kernels in hardware.
func (k PrecisionKind) Native() bool { return k.Precision.Native() }

// PrecisionKinds is the table of precisions, float32 first: the one place a train.precision value is parsed
// (ParsePrecision).
func PrecisionKinds() []PrecisionKind {
	return []PrecisionKind{
		{Precision: kernel.F32, Kernel: "float32 FMA", Parity: "the reference", Ceilings: []kernel.Ceiling{kernel.CeilingFMA}},
		{Precision: kernel.BF16, Kernel: "VDPBF16PS (AVX512_BF16) or float32 FMAs on bf16 values (AVX2)", Parity: "docs/results/2026-12-01-bf16-parity.md",
			Ceilings: []kernel.Ceiling{kernel.CeilingFMA, kernel.CeilingBF16Dot}},
	}
}

// ParsePrecision is the kernel precision a train.precision value names: a row of PrecisionKinds, and "" for
// float32. "auto" is not a precision but a request to measure (ResolvePrecision), and is an error here.
func ParsePrecision(name string) (kernel.Precision, error) {
	if name == "" {
		return kernel.F32, nil
	}
	for _, k := range PrecisionKinds() {
		if k.Name() == name {
			return k.Precision, nil
		}
	}
	return kernel.F32, fmt.Errorf("precision %q: want %s", name, precisionNames())
}

// precisionNames lists the table's names for an error message: "f32", "bf16".
func precisionNames() string {
	var names []string
	for _, k := range PrecisionKinds() {
		names = append(names, fmt.Sprintf("%q", k.Name()))
	}
	return strings.Join(names, ", ")
}

// precisionErr is ParsePrecision's error alone, for a validation switch.
func precisionErr(name string) error {
	_, err := ParsePrecision(name)
	return err
}

// nativePrecision is ParsePrecision that also refuses a precision this CPU would run through its kernels'
// pure-Go twin, tens of times slower than float32.
func nativePrecision(name string) (kernel.Precision, error) {
	p, err := ParsePrecision(name)
	if err != nil {
		return p, err
	}
	if !p.Native() {
		for _, k := range PrecisionKinds() {
			if k.Precision == p {
				return p, fmt.Errorf("precision %s: this CPU does not run %s (kernels: %s, where only the pure-Go twin computes it, tens of times slower); use %q", p, k.Kernel, kernel.KernelPath(), kernel.F32.String())
			}
		}
	}
	return p, nil
}

// PrecisionTiming is one candidate's measurement.
type PrecisionTiming struct {
	Precision  string  `json:"precision"`
	TokensPerS float64 `json:"tokens_per_s"`     // median of the rounds, whole training steps
	Kernel     string  `json:"kernel,omitempty"` // the micro-kernel that ran it (kernel.Precision.Kernel)
}

// PrecisionChoice is one "auto" measurement and its choice, recorded in PrecisionFile.
type PrecisionChoice struct {
	CPU        string            `json:"cpu"` // kernel.CPUModel
	Params     int64             `json:"n_params"`
	Batch      int               `json:"batch"`
	SeqLen     int               `json:"seq_len"`
	Threads    int               `json:"threads"` // train.threads (0: all cores)
	Candidates []PrecisionTiming `json:"candidates"`
	Precision  string            `json:"precision"` // the choice
}

// String is the measurement and the choice in one line, for logs and plans. A candidate that was not timed (the
// only eligible one: nothing to choose between) is said to be so, never printed as 0 tokens/s.
func (p PrecisionChoice) String() string {
	var parts []string
	for _, t := range p.Candidates {
		if t.TokensPerS <= 0 {
			continue
		}
		k := ""
		if t.Kernel != "" {
			k = " [" + t.Kernel + "]"
		}
		parts = append(parts, fmt.Sprintf("%s%s %.0f tokens/s", t.Precision, k, t.TokensPerS))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("precision auto: %s on %s (the only eligible precision on this CPU; not timed)", p.Precision, p.CPU)
	}
	why := "the only eligible precision on this CPU"
	if len(p.Candidates) > 1 {
		why = fmt.Sprintf("the fastest; another precision needs %.2fx float32", PrecisionGainMin)
	}
	return fmt.Sprintf("precision auto: %s on %s: %s (%s)", strings.Join(parts, ", "), p.CPU, p.Precision, why)
}

// matches reports whether the record was measured for this CPU, model size, batch, threads and candidates.
func (p PrecisionChoice) matches(q PrecisionChoice) bool {
	names := func(c PrecisionChoice) []string {
		var s []string
		for _, t := range c.Candidates {
			s = append(s, t.Precision)
		}
		return s
	}
	return p.CPU == q.CPU && p.Params == q.Params && p.Batch == q.Batch && p.SeqLen == q.SeqLen && p.Threads == q.Threads &&
		slices.Equal(names(p), names(q)) && slices.Contains(names(p), p.Precision)
}

// eligiblePrecisions are the precisions "auto" may take on this CPU: native kernels and a parity record.
func eligiblePrecisions() []string {
	var s []string
	for _, k := range PrecisionKinds() {
		if k.Native() && k.Parity != "" {
			s = append(s, k.Name())
		}
	}
	return s
}

// ProbePrecision times every eligible precision on model c at batch sequences per step on threads threads
// (0: all cores): rounds alternations of one Benchmark each (steps timed steps after one warm-up), medians,
// so that every candidate sees the same machine. With one candidate nothing is timed.
func ProbePrecision(c arch.Config, batch, threads, steps, rounds int) (PrecisionChoice, error) {
	p := PrecisionChoice{CPU: kernel.CPUModel(), Params: c.NumParams(), Batch: batch, SeqLen: c.SeqLen, Threads: threads}
	names := eligiblePrecisions()
	for _, n := range names {
		prec, _ := ParsePrecision(n)
		p.Candidates = append(p.Candidates, PrecisionTiming{Precision: n, Kernel: prec.Kernel()})
	}
	p.Precision = names[0]
	if len(names) == 1 {
		return p, nil
	}
	if steps < 1 || rounds < 1 {
		return p, fmt.Errorf("precision probe: steps %d and rounds %d must be positive", steps, rounds)
	}
	runs := make([][]float64, len(names))
	for range rounds {
		for i, n := range names {
			r, err := Benchmark(c, BenchOptions{Batch: batch, Steps: steps, Warmup: 1, Threads: threads, Precision: n})
			if err != nil {
				return p, fmt.Errorf("precision probe: %w", err)
			}
			runs[i] = append(runs[i], r.TokensPerS)
		}
	}
	for i := range names {
		p.Candidates[i].TokensPerS = median(runs[i])
	}
	p.Precision = choosePrecision(p.Candidates)
	return p, nil
}

// choosePrecision is the fastest candidate, float32 (the first) unless another beats it by PrecisionGainMin.
func choosePrecision(c []PrecisionTiming) string {
	best := c[0]
	for _, t := range c[1:] {
		if t.TokensPerS >= PrecisionGainMin*c[0].TokensPerS && t.TokensPerS > best.TokensPerS {
			best = t
		}
	}
	return best.Precision
}

// PrecisionFile is the name of the precision record in a run directory or a plan's output directory.
const PrecisionFile = "precision.json"

// PrecisionFor is the "auto" choice for runs of config c: the record at path when it was measured on this CPU
// for this model size, batch, threads and candidates, else a ProbePrecision (3 timed steps, 2 rounds) on c's
// model, batch and threads, recorded at path (atomically) so that a resumed run or plan keeps its choice. Both
// the measurement and the choice are logged. A record that cannot be read or parsed is an error naming the
// file.
func PrecisionFor(path string, c recipe.Config, log io.Writer) (PrecisionChoice, error) {
	return precisionFor(path, c, log, true)
}

// PeekPrecision is PrecisionFor that writes nothing: the matching record at path if there is one, else a
// fresh measurement left unrecorded (for printing a plan before it runs).
func PeekPrecision(path string, c recipe.Config, log io.Writer) (PrecisionChoice, error) {
	return precisionFor(path, c, log, false)
}

func precisionFor(path string, c recipe.Config, log io.Writer, record bool) (PrecisionChoice, error) {
	logf := func(format string, a ...any) {
		if log != nil {
			fmt.Fprintf(log, format, a...)
		}
	}
	want := PrecisionChoice{CPU: kernel.CPUModel(), Params: c.Model.NumParams(), Batch: c.Train.BatchSize, SeqLen: c.Model.SeqLen,
		Threads: c.Train.Threads}
	for _, n := range eligiblePrecisions() {
		want.Candidates = append(want.Candidates, PrecisionTiming{Precision: n})
	}
	b, err := inputfile.ReadFile(path, inputfile.MaxConfig)
	switch {
	case err == nil:
		var pc PrecisionChoice
		if err := json.Unmarshal(b, &pc); err != nil {
			return pc, fmt.Errorf("precision record %s: %w (delete it to measure again)", path, err)
		}
		if pc.matches(want) {
			logf("%s (recorded in %s)\n", pc, path)
			return pc, nil
		}
	case !errors.Is(err, fs.ErrNotExist):
		return PrecisionChoice{}, fmt.Errorf("precision record: %w", err)
	}
	if len(want.Candidates) > 1 {
		logf("precision probe: %d-parameter model, batch %d, timing %s...\n", want.Params, want.Batch, strings.Join(eligiblePrecisions(), " and "))
	}
	pc, err := ProbePrecision(c.Model.Config, c.Train.BatchSize, c.Train.Threads, 3, 2)
	if err != nil {
		return pc, err
	}
	if !record {
		logf("%s\n", pc)
		return pc, nil
	}
	if b, err = json.MarshalIndent(pc, "", "  "); err != nil {
		return pc, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return pc, fmt.Errorf("precision record: %w", err)
	}
	if err := atomicfile.Write(path, append(b, '\n')); err != nil {
		return pc, fmt.Errorf("precision record: %w", err)
	}
	logf("%s\n", pc)
	return pc, nil
}

// ResolvePrecision returns c with train.precision = "auto" replaced by PrecisionFor's choice, recorded in
// dir's PrecisionFile; any other precision is returned as it is. A run's config.toml therefore always names
// the precision it trains in, and a resumed run keeps it whatever the machine.
func ResolvePrecision(c recipe.Config, dir string, log io.Writer) (recipe.Config, error) {
	if c.Train.Precision != PrecisionAuto {
		return c, nil
	}
	pc, err := PrecisionFor(filepath.Join(dir, PrecisionFile), c, log)
	if err != nil {
		return c, err
	}
	c.Train.Precision = pc.Precision
	return c, nil
}
