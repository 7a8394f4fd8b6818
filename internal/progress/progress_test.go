package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// dataBytes is the progress of smallinit data prepare.
func dataBytes(buf *bytes.Buffer, tty bool) *Bytes {
	return &Bytes{Log: buf, TTY: tty, Desc: "encoding", Min: 32 << 20, Every: 10 * time.Second, Unit: 1 << 20, Name: "MB",
		Verb: " read", Last: true, Count: true}
}

// TestBytes: without a terminal, progress is plain lines (the last at 100%); small inputs show none; on
// a terminal a byte progress bar is drawn.
func TestBytes(t *testing.T) {
	var buf bytes.Buffer
	p := dataBytes(&buf, false)
	p.Update(1<<20, 8<<20)
	if buf.Len() != 0 {
		t.Errorf("progress on a small input: %q", buf.String())
	}
	p.Update(10<<20, 100<<20)
	p.Update(20<<20, 100<<20)
	p.Update(100<<20, 100<<20)
	p.Finish()
	if s := buf.String(); !strings.Contains(s, "100.0 of 100.0 MB read (100%)") || strings.Contains(s, "20.0 of") {
		t.Errorf("plain progress lines:\n%s", s)
	}
	buf.Reset()
	p = dataBytes(&buf, true)
	p.Update(50<<20, 100<<20)
	p.Update(100<<20, 100<<20)
	p.Finish()
	if s := buf.String(); !strings.Contains(s, "encoding") || !strings.Contains(s, "100%") {
		t.Errorf("progress bar: %q", s)
	}
}
