package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestCountPlainLinesHaveRateAndEstimate: off a terminal a job counted in records prints a line at each
// interval with the count, the share, the rate since the start and the time left at that rate; nothing at 0 or
// within the interval.
func TestCountPlainLinesHaveRateAndEstimate(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	p := &Count{Log: &buf, Desc: "gsm8k", Unit: "records", Every: 10 * time.Second, now: func() time.Time { return clock }}
	p.Update(0, 200)
	clock = clock.Add(5 * time.Second)
	p.Update(4, 200) // within the interval: no line
	clock = clock.Add(15 * time.Second)
	p.Update(40, 200)
	clock = clock.Add(20 * time.Second)
	p.Update(80, 200)
	want := "gsm8k: 40 of 200 records (20%), 2 records/s, 20s, about 80s left\n" +
		"gsm8k: 80 of 200 records (40%), 2 records/s, 40s, about 60s left\n"
	if buf.String() != want {
		t.Errorf("lines:\n%s\nwant:\n%s", buf.String(), want)
	}
}

// TestCountBarShowsRecords: on a terminal the bar counts records, with their rate, not bytes.
func TestCountBarShowsRecords(t *testing.T) {
	var buf bytes.Buffer
	p := &Count{Log: &buf, TTY: true, Desc: "hellaswag", Unit: "records"}
	p.Update(0, 200)
	time.Sleep(150 * time.Millisecond) // past the bar's throttle
	p.Update(64, 200)
	s := buf.String()
	if !strings.Contains(s, "hellaswag") || !strings.Contains(s, "64/200") || !strings.Contains(s, "records/s") || strings.Contains(s, "B/s") {
		t.Errorf("bar: %q", s)
	}
	p.Finish()
}
