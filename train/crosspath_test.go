package train

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/kernel"
)

// segmentChildEnv runs one segment of a run in a child process (TestMain): "DIR:STOP" starts DIR/child.toml's
// run in DIR/run and interrupts it after step STOP; "DIR:0" resumes DIR/run. The kernel path is the child's
// kernel.KernelEnv.
const segmentChildEnv = "SMALLINIT_TEST_SEGMENT_CHILD"

// runSegmentChild is the child side of segmentChildEnv.
func runSegmentChild(spec string) error {
	i := strings.LastIndex(spec, ":")
	dir, stop := spec[:i], spec[i+1:]
	n, err := strconv.Atoi(stop)
	if err != nil {
		return err
	}
	run := filepath.Join(dir, "run")
	if n == 0 {
		_, err := Resume(context.Background(), run, Options{})
		return err
	}
	c, err := Load(filepath.Join(dir, "child.toml"), nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err = Start(ctx, c, run, Options{AfterStep: func(s int) {
		if s == n {
			cancel()
		}
	}})
	if !errors.Is(err, ErrInterrupted) {
		return fmt.Errorf("interrupted run returned %v", err)
	}
	return nil
}

// segment runs one segment in a child forced to the kernel path.
func segment(t *testing.T, dir, path string, stop int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s:%d", segmentChildEnv, dir, stop), kernel.KernelEnv+"="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("segment on %s (stop %d): %v\n%s", path, stop, err, out)
	}
}

// TestRunMovesBetweenKernelPaths: a run interrupted after step 3 with the kernel path forced to one ISA and
// resumed (from the checkpoint written at the interruption) on another ends with the bytes of an uninterrupted
// run on this CPU's best path, and its segments.jsonl names both paths. Each precision moves between every
// path that runs it natively: bf16 between the SIMD paths (its GEMMs on VDPBF16PS and on float32 FMAs are one
// twin's; the pure-Go path does not train bf16), float32 between all of them, the pure-Go one included (the
// AVX2 kernels compute the AVX-512 kernels' bits, kernel.TestAVX2MatchesAVX512, and the pure-Go twins define
// them, kernel.TestGenericKernelsMatchSIMD and TestGenericGemmMatchesSIMD).
func TestRunMovesBetweenKernelPaths(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: trains a run per ordered pair of kernel paths in child processes")
	}
	for _, prec := range []kernel.Precision{kernel.BF16, kernel.F32} {
		var paths []string
		for _, p := range kernel.KernelPaths() {
			if prec.NativeOn(p) {
				paths = append(paths, p)
			}
		}
		movesBetween(t, prec, paths)
	}
}

// TestRunMovesToPureGoWithWideRows is TestRunMovesBetweenKernelPaths's float32 run between the best path and
// the pure-Go one on a model whose rows run every phase of the vector kernels' loops: d = 88 and one head of
// 88 (the norms' and attention's dot products take a 64-element block, a 16-element block and a masked
// tail), SwiGLU rows of d_ff = 256. (The model of TestRunMovesBetweenKernelPaths, d = 32 in heads of 16, has
// no row of 64.)
func TestRunMovesToPureGoWithWideRows(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: trains runs on the pure-Go path in child processes")
	}
	movesBetween(t, kernel.F32, []string{kernel.KernelPaths()[0], "generic"}, "model.hidden_size=88", "model.num_attention_heads=1")
}

// movesBetween trains a 6-step run in precision prec (smallRun with extra settings) on this CPU's best path,
// and for every ordered pair of paths a run interrupted after step 3 on the first and resumed on the second,
// and requires the bytes of the uninterrupted run and a segments.jsonl that names both paths.
func movesBetween(t *testing.T, prec kernel.Precision, paths []string, extra ...string) {
	t.Helper()
	if len(paths) < 2 || paths[0] == paths[1] {
		t.Logf("%s: this CPU runs it on the kernel path(s) %v: nothing to move between", prec, paths)
		return
	}
	root := t.TempDir()
	c := smallRun(t, root, 6, append([]string{"train.precision=" + prec.String()}, extra...)...)
	straight := filepath.Join(root, "straight")
	if _, err := Start(context.Background(), c, straight, Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, from := range paths {
		for _, to := range paths {
			if from == to {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s-to-%s", prec, from, to), func(t *testing.T) {
				dir := t.TempDir()
				if err := os.WriteFile(filepath.Join(dir, "child.toml"), b, 0o644); err != nil {
					t.Fatal(err)
				}
				segment(t, dir, from, 3)
				segment(t, dir, to, 0)
				sameRun(t, straight, filepath.Join(dir, "run"))
				segs, err := ReadSegments(filepath.Join(dir, "run"))
				if err != nil {
					t.Fatal(err)
				}
				if len(segs) != 2 || segs[0].Step != 0 || segs[0].KernelPath != from || segs[1].Step != 3 || segs[1].KernelPath != to ||
					segs[1].Precision != prec.String() || segs[1].GEMM == "" {
					t.Errorf("segments %+v, want %s from step 0 and %s from step 3", segs, from, to)
				}
			})
		}
	}
}
