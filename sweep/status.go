package sweep

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/internal/runlock"
	"github.com/smallinit/smallinit/train"
	"github.com/smallinit/smallinit/train/rundir"
)

// State is a run's state as seen from the sweep directory.
type State string

// States of a run, checked in this order.
const (
	StateDone    State = "done"    // final/config.json exists
	StateRunning State = "running" // its lock is held and not stale
	StateFailed  State = "failed"  // error.txt exists (its last attempt failed)
	StatePending State = "pending" // none of the above: not started, or stopped at a checkpoint
)

// RunStatus is one run's state and progress.
type RunStatus struct {
	Run   Run
	State State
	Step  int    // last step in metrics.jsonl (0 when it has none)
	Note  string // the lock's holder, the error's first line, or a resumable checkpoint
}

// Status reads the state of every run of the sweep in dir. Locks older than staleAfter (0: DefaultStaleAfter)
// or held by a dead process on this host count as stale: their runs are pending (or failed), not running.
func Status(dir string, staleAfter time.Duration) (*Plan, []RunStatus, error) {
	p, err := ReadPlan(dir)
	if err != nil {
		return nil, nil, err
	}
	if staleAfter <= 0 {
		staleAfter = runlock.DefaultStaleAfter
	}
	host, _ := os.Hostname()
	out := make([]RunStatus, len(p.Runs))
	for i, r := range p.Runs {
		rd := RunDir(dir, r)
		st := RunStatus{Run: r, State: StatePending}
		m, metricsErr := readMetrics(rd) // what could be read, and an error for what could not
		st.Step = m.Step
		_, lockErr := os.Stat(filepath.Join(rd, runlock.FileName))
		errText, errErr := inputfile.ReadFile(filepath.Join(rd, ErrorFile), inputfile.MaxConfig)
		if errErr != nil && !errors.Is(errErr, fs.ErrNotExist) {
			errText, errErr = []byte(errErr.Error()), nil // a FIFO or a huge file in its place: shown, not read
		}
		switch {
		case isDone(rd):
			st.State = StateDone
		case lockErr == nil:
			_, holder, stale := runlock.Inspect(filepath.Join(rd, runlock.FileName), host, staleAfter)
			if stale {
				st.Note = "stale lock: " + holder
				if errErr == nil {
					st.State = StateFailed
				}
			} else {
				st.State, st.Note = StateRunning, holder
			}
		case errErr == nil:
			st.State = StateFailed
			st.Note, _, _ = strings.Cut(strings.TrimSpace(string(errText)), "\n")
		default:
			if _, err := os.Stat(filepath.Join(rd, rundir.ConfigFile)); err == nil {
				st.Note = fmt.Sprintf("stopped at step %d; resumes from its checkpoint", st.Step)
			}
		}
		if metricsErr != nil && !errors.Is(metricsErr, fs.ErrNotExist) {
			// Lines that could not be read are said beside whatever else the note says, not dropped unseen.
			st.Note = strings.TrimPrefix(st.Note+"; metrics unreadable: "+metricsErr.Error(), "; ")
		}
		out[i] = st
	}
	return p, out, nil
}

// WriteStatus prints one line per run (index, id, state, step/steps, note) and a summary line.
func WriteStatus(w io.Writer, sts []RunStatus) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "index\tid\tstate\tstep\tnote")
	count := map[State]int{}
	for _, s := range sts {
		count[s.State]++
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d/%d\t%s\n", s.Run.Index, s.Run.ID, s.State, s.Step, s.Run.Steps, s.Note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d runs: %d done, %d running, %d failed, %d pending\n", len(sts),
		count[StateDone], count[StateRunning], count[StateFailed], count[StatePending])
	return err
}

// readMetrics summarises the metrics.jsonl of the run directory rd (train.Run.Summary).
func readMetrics(rd string) (rundir.Summary, error) {
	r, err := train.OpenRun(rd)
	if err != nil {
		return rundir.Summarise(nil), err
	}
	return r.Summary()
}
