package main

import (
	"fmt"
	"io"
	"os"

	"github.com/smallinit/smallinit/reproduce"
)

// contrastCmd is `smallinit contrast OUT... --a SEL --b SEL`: one paired comparison of two arms whose runs may lie
// in different study output directories (reproduce.ContrastArms), e.g. issue 44's family D against the
// verdict's width-128 arms.
type contrastCmd struct {
	Outs    []string `arg:"" type:"existingdir" name:"out" help:"Study output directories whose finished runs are read; they must hold one corpus (by the sha256 sums of their stats.json)."`
	A       string   `required:"" placeholder:"KEY=VALUE,..." help:"Arm A: the config values its runs hold (e.g. group=main,init.gamma=0.5); the pseudo-key group is the plan group (OUT/GROUP/RUN)."`
	B       string   `required:"" placeholder:"KEY=VALUE,..." help:"Arm B, chosen as --a. Printed: L(A) − L(B), positive where B is lower."`
	Vary    []string `placeholder:"KEY" help:"Config keys the arms may differ in (repeat the flag or separate them by commas); a difference in any other is refused, naming it (default: any, each printed)."`
	Alpha   float64  `default:"0.05" help:"Level of the t-intervals and tests (unadjusted: a secondary)."`
	Delta   float64  `default:"0" help:"Smallest effect of interest in nats for the two one-sided tests (0: none)."`
	Partial bool     `help:"Read a study that has not ended (no summary.json) from its finished runs, each scored here on the whole validation split as the study's summary would (cached in each run as validation_score.json)."`
	Record  string   `type:"path" placeholder:"FILE" help:"Also write the contrast (arms, runs, differences, readings) as JSON to FILE (atomically)."`
}

// Run prints the contrast and, with --record, writes it.
func (c *contrastCmd) Run() error { return c.run(os.Stdout) }

func (c *contrastCmd) run(w io.Writer) error {
	if !(c.Alpha > 0 && c.Alpha < 1) {
		return fmt.Errorf("--alpha %g: want a level in (0, 1)", c.Alpha)
	}
	if !(c.Delta >= 0 && c.Delta < 10) {
		return fmt.Errorf("--delta %g: want 0 (none) or an effect in nats below 10", c.Delta)
	}
	a, err := reproduce.ParseSelector(c.A)
	if err != nil {
		return fmt.Errorf("--a: %w", err)
	}
	b, err := reproduce.ParseSelector(c.B)
	if err != nil {
		return fmt.Errorf("--b: %w", err)
	}
	runs, _, err := reproduce.ReadStudyRuns(c.Outs, c.Partial, os.Stderr)
	if err != nil {
		return err
	}
	ct, err := reproduce.ContrastArms(runs, a, b, c.Vary, c.Alpha, c.Delta)
	if err != nil {
		return err
	}
	ct.WriteText(w)
	return writeRecord(w, c.Record, ct)
}
