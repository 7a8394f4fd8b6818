package reproduce

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/train/rundir"
)

// AmendmentPattern names the amendments of a plan in its output directory, beside the plan as printed
// (experiment.PlanFile): one file per amendment, written when it is made (docs/definitions.md §7, "The plan as
// registered"). claims.json quotes each whole with its time.
const AmendmentPattern = "plan-amendment*.txt"

// amendmentHeader begins an amendment's first line, followed by its UTC time in amendmentLayout and " UTC".
const (
	amendmentHeader = "Amendment of "
	amendmentLayout = "2006-01-02 15:04"
)

// Amendment is one change to the plan after it was printed: its file in the output directory, the UTC time its
// first line states and its text whole.
type Amendment struct {
	File string    `json:"file"`
	Time time.Time `json:"time"`
	Text string    `json:"text"`
}

// parseAmendment reads the amendment of file name from its contents b: the first line must begin
// "Amendment of YYYY-MM-DD HH:MM UTC".
func parseAmendment(name string, b []byte) (Amendment, error) {
	first, _, _ := bytes.Cut(b, []byte("\n"))
	rest, ok := strings.CutPrefix(string(first), amendmentHeader)
	stamp, _, utc := strings.Cut(rest, " UTC")
	if !ok || !utc {
		return Amendment{}, fmt.Errorf("amendment %s: its first line %.60q does not begin %q", name, first, amendmentHeader+"YYYY-MM-DD HH:MM UTC")
	}
	t, err := time.Parse(amendmentLayout, stamp)
	if err != nil {
		return Amendment{}, fmt.Errorf("amendment %s: time %q: want YYYY-MM-DD HH:MM (UTC)", name, stamp)
	}
	return Amendment{File: name, Time: t.UTC(), Text: string(b)}, nil
}

// readAmendments reads every amendment in the output directory out, in order of time (nil when there is none).
func readAmendments(out string) ([]Amendment, error) {
	paths, err := filepath.Glob(filepath.Join(out, AmendmentPattern))
	if err != nil {
		return nil, err
	}
	var as []Amendment
	for _, p := range paths {
		b, err := inputfile.ReadFile(p, inputfile.MaxConfig)
		if err != nil {
			return nil, err
		}
		a, err := parseAmendment(filepath.Base(p), b)
		if err != nil {
			return nil, err
		}
		as = append(as, a)
	}
	slices.SortStableFunc(as, func(a, b Amendment) int { return a.Time.Compare(b.Time) })
	return as, nil
}

// RunTime is when one run trained, read from its directory's file times (UTC, to the second): Started is the
// modification time of init.json, which a run writes when it draws its weights (a cooldown branch when it is set
// up from its trunk's snapshot; a run restarted from nothing rewrites it), Finished that of final/config.json,
// written last when training ends and left alone when a finished run is read back. A run directory copied
// without its times (cp without -p, git) states the copy's; a file it lacks leaves the time out.
type RunTime struct {
	Dir      string     `json:"dir"`
	Started  *time.Time `json:"started,omitempty"`
	Finished *time.Time `json:"finished,omitempty"`
}

// runTimeOf reads the run directory dir's RunTime.
func runTimeOf(dir string) (RunTime, error) {
	rt := RunTime{Dir: dir}
	for _, f := range []struct {
		path string
		at   **time.Time
	}{
		{filepath.Join(dir, rundir.InitFile), &rt.Started},
		{filepath.Join(dir, rundir.FinalDir, arch.ConfigFile), &rt.Finished},
	} {
		fi, err := os.Stat(f.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return RunTime{}, fmt.Errorf("run times: %w", err)
		}
		t := fi.ModTime().UTC().Truncate(time.Second)
		*f.at = &t
	}
	return rt, nil
}

// runTimes reads the RunTime of every directory of dirs, in that order.
func runTimes(dirs []string) ([]RunTime, error) {
	out := make([]RunTime, 0, len(dirs))
	for _, d := range dirs {
		rt, err := runTimeOf(d)
		if err != nil {
			return nil, err
		}
		out = append(out, rt)
	}
	return out, nil
}
