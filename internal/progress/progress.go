// Package progress shows the progress of a job counted in bytes for the commands: a progress bar on a
// terminal, else a plain line at an interval.
package progress

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Bytes is the progress of a job of total bytes. Update has the signature of the Progress callbacks of
// packages scale and data, which call it from one goroutine at a time.
type Bytes struct {
	Log   io.Writer
	TTY   bool          // draw a bar (a terminal) rather than lines
	Desc  string        // the bar's description and the lines' prefix
	Min   int64         // jobs smaller than this show nothing
	Every time.Duration // interval of the plain lines
	Unit  float64       // bytes per unit of the lines (1e9 or 1<<20)
	Name  string        // the unit's name ("GB", "MB")
	Verb  string        // after the total in the lines ("" or " read")
	Last  bool          // also write a line when the job completes
	Count bool          // the bar shows the byte count

	bar         *progressbar.ProgressBar
	start, last time.Time
}

// Update shows done of total bytes.
func (p *Bytes) Update(done, total int64) {
	if total < p.Min {
		return
	}
	now := time.Now()
	if p.start.IsZero() {
		p.start, p.last = now, now
	}
	if p.TTY {
		if p.bar == nil {
			opts := []progressbar.Option{progressbar.OptionSetWriter(p.Log), progressbar.OptionSetDescription(p.Desc),
				progressbar.OptionShowBytes(true), progressbar.OptionSetWidth(30), progressbar.OptionSetPredictTime(true),
				progressbar.OptionThrottle(100 * time.Millisecond), progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.Log) })}
			if p.Count {
				opts = append(opts, progressbar.OptionShowCount())
			}
			p.bar = progressbar.NewOptions64(total, opts...)
		}
		p.bar.Set64(done)
		return
	}
	if now.Sub(p.last) >= p.Every || p.Last && done == total {
		p.last = now
		prec := 2
		if p.Unit < 1e9 {
			prec = 1
		}
		fmt.Fprintf(p.Log, "%s: %.*f of %.*f %s%s (%.0f%%), %.0fs\n", p.Desc, prec, float64(done)/p.Unit, prec, float64(total)/p.Unit,
			p.Name, p.Verb, 100*float64(done)/float64(total), now.Sub(p.start).Seconds())
	}
}

// Finish ends an unfinished bar's line (after an error), so that the next message starts a line.
func (p *Bytes) Finish() {
	if p.bar != nil && !p.bar.IsFinished() {
		fmt.Fprintln(p.Log)
	}
}
