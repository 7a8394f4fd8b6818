package progress

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Count is the progress of a job counted in items (records scored, windows read): on a terminal a bar with the
// count, the rate in items per second and an estimate of the time left; otherwise a plain line at an interval,
// so that a log (stderr piped to a file) shows a long job moving. Update must be called once with done = 0
// when the job starts, so that the rate counts from then.
type Count struct {
	Log   io.Writer
	TTY   bool          // draw a bar (a terminal) rather than lines
	Desc  string        // the bar's description and the lines' prefix
	Unit  string        // the items' name, plural ("records")
	Every time.Duration // interval of the plain lines (0: 10 s)

	bar         *progressbar.ProgressBar
	start, last time.Time
	now         func() time.Time // the clock (nil: time.Now); tests set it
}

// Update shows done of total items; total 0 is unknown (a count without a bar or an estimate).
func (p *Count) Update(done, total int64) {
	now := p.clock()
	if p.start.IsZero() {
		p.start, p.last = now, now
	}
	if p.TTY {
		if p.bar == nil {
			max := total
			if max <= 0 {
				max = -1 // a spinner with the count
			}
			p.bar = progressbar.NewOptions64(max, progressbar.OptionSetWriter(p.Log), progressbar.OptionSetDescription(p.Desc),
				progressbar.OptionSetWidth(30), progressbar.OptionShowCount(), progressbar.OptionShowIts(),
				progressbar.OptionSetItsString(p.Unit), progressbar.OptionSetPredictTime(true),
				progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
		}
		p.bar.Set64(done)
		return
	}
	every := p.Every
	if every <= 0 {
		every = 10 * time.Second
	}
	if now.Sub(p.last) < every || done == 0 {
		return
	}
	p.last = now
	fmt.Fprintln(p.Log, p.line(done, total, now.Sub(p.start)))
}

// line is the plain progress line: "hellaswag: 128 of 200 records (64%), 3.2 records/s, 40s, about 23s left".
func (p *Count) line(done, total int64, el time.Duration) string {
	rate := float64(done) / el.Seconds()
	s := fmt.Sprintf("%s: %d", p.Desc, done)
	if total > 0 {
		s += fmt.Sprintf(" of %d", total)
	}
	s += " " + p.Unit
	if total > 0 {
		s += fmt.Sprintf(" (%.0f%%)", 100*float64(done)/float64(total))
	}
	s += fmt.Sprintf(", %.3g %s/s, %.0fs", rate, p.Unit, el.Seconds())
	if total > done && rate > 0 {
		s += fmt.Sprintf(", about %.0fs left", float64(total-done)/rate)
	}
	return s
}

// Finish clears the bar, so that the next message starts a clean line.
func (p *Count) Finish() {
	if p.bar != nil && !p.bar.IsFinished() {
		p.bar.Finish()
	}
}

func (p *Count) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}
