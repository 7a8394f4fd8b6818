package eval

import (
	"strings"
	"testing"
)

// TestLMReportNoZeroInterval: an lm task prints its loss and bits per byte with a standard error, never the 95%
// interval [0.0000, 0.0000] of a metric whose interval was left at zero.
func TestLMReportNoZeroInterval(t *testing.T) {
	s := TextScore{Tokens: 1000, Bytes: 3000, Windows: 8, LossMean: 7.23, LossStdErr: 0.05}
	r := &TaskResult{Task: "lambada", Kind: KindLM, File: "x.txt", Docs: s.Windows, Metrics: s.metrics()}
	var b strings.Builder
	r.WriteText(&b)
	out := b.String()
	if strings.Contains(out, "[0.0000, 0.0000]") || strings.Contains(out, "95% interval") {
		t.Errorf("lm report prints an interval:\n%s", out)
	}
	if !strings.Contains(out, "7.2300") || !strings.Contains(out, "± 0.0500") {
		t.Errorf("lm report lacks the loss with its standard error:\n%s", out)
	}
}
