package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/kernel"
)

// SegmentsFile is the run directory's record of the sittings that trained it: one JSON line (Segment) per
// start or resume that had steps left, so that a run which moved between CPUs or kernel paths says which path
// computed which steps. Every SIMD kernel path gives a run the same bits in either precision; a float32 run's
// bits differ only on the pure-Go path (kernel.KernelEnv), which its segments show. A branch's record begins at
// its branch step; the trunk's says how the steps before it were computed.
const SegmentsFile = "segments.jsonl"

// Segment is one sitting of a run: from step Step (0 for the start, else the checkpoint it resumed) on, until
// the next line's Step or the run's end.
type Segment struct {
	Step       int    `json:"step"`
	KernelPath string `json:"kernel_path"` // kernel.KernelPath: "avx512", "avx512-nobf16", "avx2" or "generic"
	CPU        string `json:"cpu"`         // kernel.CPUModel
	Precision  string `json:"precision"`   // train.precision
	GEMM       string `json:"gemm"`        // the micro-kernel of its products (kernel.Precision.Kernel)
}

// recordSegment appends this sitting's Segment to the run's SegmentsFile, in one write.
func (r *runner) recordSegment() error {
	prec, err := ParsePrecision(r.c.Train.Precision)
	if err != nil {
		return err
	}
	b, err := json.Marshal(Segment{Step: r.st.Step, KernelPath: kernel.KernelPath(), CPU: kernel.CPUModel(),
		Precision: prec.String(), GEMM: prec.Kernel()})
	if err != nil {
		return err
	}
	f, err := inputfile.OpenAppend(filepath.Join(r.dir, SegmentsFile))
	if err != nil {
		return fmt.Errorf("segments: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("segments %s: %w", f.Name(), err)
	}
	return f.Close()
}

// ReadSegments reads the run directory dir's SegmentsFile (nil for a run trained before it was kept).
func ReadSegments(dir string) ([]Segment, error) {
	path := filepath.Join(dir, SegmentsFile)
	b, err := inputfile.ReadFile(path, inputfile.MaxConfig)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("segments: %w", err)
	}
	var out []Segment
	i := 0
	for line := range bytes.Lines(b) {
		if i++; len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var s Segment
		if err := json.Unmarshal(line, &s); err != nil {
			return nil, fmt.Errorf("segments %s line %d: %w", path, i, err)
		}
		out = append(out, s)
	}
	return out, nil
}
