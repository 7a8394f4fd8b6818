package experiment

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/kernel"
)

// pinnedChildEnv marks the child process of TestPinnedPrecisionRefusedOnTwin, which runs with the kernel path
// forced to the pure-Go twin.
const pinnedChildEnv = "SMALLINIT_TEST_PINNED_PRECISION_CHILD"

// TestPinnedPrecisionRefusedOnTwin: a plan that pins bf16 (issue 44's verdict plans) is refused before anything
// is sized or trained on a kernel path that runs bf16 only through the pure-Go twin, and the refusal names the
// plan, the key, the precision, the kernel path and what to do; on a path with a bf16 kernel it is accepted as it
// is. The child runs with kernel.KernelEnv = "generic", which every CPU runs.
func TestPinnedPrecisionRefusedOnTwin(t *testing.T) {
	p, err := Builtin("verdict-20tpp")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := &Outcome{Plan: p, Out: dir, Stats: &data.Stats{Source: "embedded", VocabSize: 4096}}
	q, err := resolvePrecision(p, out, &Options{Out: dir}, false)
	if os.Getenv(pinnedChildEnv) == "" {
		if kernel.BF16.Native() && (err != nil || q != p) {
			t.Errorf("kernel path %s runs bf16 natively, yet the pinned plan was not accepted as it is: %v", kernel.KernelPath(), err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestPinnedPrecisionRefusedOnTwin$", "-test.v")
		cmd.Env = append(os.Environ(), pinnedChildEnv+"=1", kernel.KernelEnv+"=generic")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the child on the pure-Go path: %v\n%s", err, b)
		}
		return
	}
	if kernel.KernelPath() != "generic" {
		t.Fatalf("the child runs kernel path %s, want generic", kernel.KernelPath())
	}
	if err == nil {
		t.Fatal("a plan pinning bf16 was accepted on the pure-Go path")
	}
	for _, want := range []string{"plan verdict-20tpp", "train.precision = bf16", "kernel path generic", "AVX2", `"f32"`, "new --out"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
}
