package diag

import (
	"fmt"
	"os"
	"regexp"
	"testing"
)

// TestMaxProbeWindowsMatchesPyTorch: the PyTorch side's analyze bounds --probes by MAX_PROBE_WINDOWS, which must
// be MaxProbeWindows, so that both analyze commands refuse the same counts (one bound, stated in Go and held
// here rather than copied by hand).
func TestMaxProbeWindowsMatchesPyTorch(t *testing.T) {
	const file = "../python/smallinit_torch/diagnostics.py"
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^MAX_PROBE_WINDOWS = (\d+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s states no MAX_PROBE_WINDOWS", file)
	}
	if got := string(m[1]); got != fmt.Sprint(MaxProbeWindows) {
		t.Errorf("%s: MAX_PROBE_WINDOWS = %s, diag.MaxProbeWindows = %d", file, got, MaxProbeWindows)
	}
}
