package train

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sync"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/recipe"
)

// PackingGainMin is the aggregate speed-up packing must show before a sweep packs its runs: below it the
// measurement is within this machine's run-to-run noise (a few per cent on a shared 2-core machine) and one
// run at a time on all cores is kept, which also finishes each run soonest.
const PackingGainMin = 1.05

// Packing is one job-packing measurement: the aggregate training tokens/s of one run on all cores against
// Cores runs at once on one thread each, on the same model, batch and precision.
type Packing struct {
	Cores     int     `json:"cores"`
	One       float64 `json:"one_run_tokens_per_s"`     // one run, Cores threads
	Packed    float64 `json:"packed_runs_tokens_per_s"` // Cores runs × 1 thread, summed
	Gain      float64 `json:"gain"`                     // Packed / One
	Jobs      int     `json:"jobs"`                     // the choice: Cores when Gain ≥ PackingGainMin, else 1
	Precision string  `json:"precision"`
	Params    int64   `json:"n_params"` // parameters of the probed model
}

// String is the measurement and the choice in one line, for logs.
func (p Packing) String() string {
	return fmt.Sprintf("packing probe: 1 run × %d threads %.0f tokens/s, %d runs × 1 thread %.0f tokens/s (gain %.2f, packing needs %.2f): %d jobs × %d threads",
		p.Cores, p.One, p.Cores, p.Packed, p.Gain, PackingGainMin, p.Jobs, max(1, p.Cores/p.Jobs))
}

// ProbePacking measures Packing for model c at batch sequences per step: rounds alternations of one
// Benchmark on cores threads and cores concurrent Benchmarks on one thread each (each steps timed steps
// after one warm-up), medians of the rounds, so that both arrangements see the same machine. cores < 2 needs
// no measurement and returns Jobs 1.
func ProbePacking(c arch.Config, batch int, precision string, cores, steps, rounds int) (Packing, error) {
	p := Packing{Cores: cores, Jobs: 1, Precision: precision, Params: c.NumParams()}
	if cores < 2 {
		return p, nil
	}
	if steps < 1 || rounds < 1 {
		return p, fmt.Errorf("packing probe: steps %d and rounds %d must be positive", steps, rounds)
	}
	o := BenchOptions{Batch: batch, Steps: steps, Warmup: 1, Precision: precision}
	var one, packed []float64
	for range rounds {
		o.Threads = cores
		r, err := Benchmark(c, o)
		if err != nil {
			return p, fmt.Errorf("packing probe: %w", err)
		}
		one = append(one, r.TokensPerS)

		o.Threads = 1
		res := make([]BenchResult, cores)
		errs := make([]error, cores)
		var wg sync.WaitGroup
		for i := range cores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[i], errs[i] = Benchmark(c, o)
			}()
		}
		wg.Wait()
		sum := 0.0
		for i := range cores {
			if errs[i] != nil {
				return p, fmt.Errorf("packing probe: %w", errs[i])
			}
			sum += res[i].TokensPerS
		}
		packed = append(packed, sum)
	}
	p.One, p.Packed = median(one), median(packed)
	p.Gain = p.Packed / p.One
	if p.Gain >= PackingGainMin {
		p.Jobs = cores
	}
	return p, nil
}

// PackingFile is the name of the packing record in a sweep directory or a plan's output directory.
const PackingFile = "packing.json"

// PackingFor is the packing choice for runs of config c on cores cores: the record at path when it was
// measured for this many cores, this model size and this precision, else a ProbePacking (3 timed steps, 2
// rounds) on c's model, batch and precision, recorded at path (atomically) so that a resumed sweep or plan
// keeps its choice; a precision of auto is resolved first (ResolvePrecision, recorded beside path). Both the measurement and the choice are logged. A record that cannot be read or parsed
// is an error naming the file.
func PackingFor(path string, c recipe.Config, cores int, log io.Writer) (Packing, error) {
	logf := func(format string, a ...any) {
		if log != nil {
			fmt.Fprintf(log, format, a...)
		}
	}
	var pk Packing
	// train.precision = "auto" is resolved first (recorded beside the packing record, PrecisionFile), so the
	// probe times the precision the runs will train in.
	c, err := ResolvePrecision(c, filepath.Dir(path), log)
	if err != nil {
		return pk, fmt.Errorf("packing probe: %w", err)
	}
	prec := cmp.Or(c.Train.Precision, "f32")
	b, err := inputfile.ReadFile(path, inputfile.MaxConfig)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &pk); err != nil {
			return pk, fmt.Errorf("packing record %s: %w (delete it to measure again)", path, err)
		}
		if pk.Cores == cores && pk.Jobs >= 1 && pk.Params == c.Model.NumParams() && pk.Precision == prec {
			logf("%s (recorded in %s)\n", pk, path)
			return pk, nil
		}
	case !errors.Is(err, fs.ErrNotExist):
		return pk, fmt.Errorf("packing record: %w", err)
	}
	logf("packing probe: %d-parameter model, batch %d, %s...\n", c.Model.NumParams(), c.Train.BatchSize, prec)
	pk, err = ProbePacking(c.Model.Config, c.Train.BatchSize, prec, cores, 3, 2)
	if err != nil {
		return pk, err
	}
	b, err = json.MarshalIndent(pk, "", "  ")
	if err != nil {
		return pk, err
	}
	if err := atomicfile.Write(path, append(b, '\n')); err != nil {
		return pk, fmt.Errorf("packing record: %w", err)
	}
	logf("%s\n", pk)
	return pk, nil
}
