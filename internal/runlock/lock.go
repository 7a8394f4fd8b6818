// Package runlock is the lock on a run directory that keeps two processes from training one run: `smallinit
// train` and `sweep run` both take it (a sweep task holds it for the run it trains), so two `train --out D` or
// two `train --resume D` at once cannot both write D.
package runlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/smallinit/smallinit/internal/inputfile"
)

// A run's lock is the file FileName in the run directory, created with O_CREATE|O_EXCL (atomic on local file systems
// and on NFSv3+), holding JSON {pid, host, token, started}. While it holds the lock, the process touches the
// file's mtime every Heartbeat (or StaleAfter/5 when that is shorter: tests). Another process treats the lock as
// stale, removes it and takes the run over (resuming from its checkpoint) when
//
//   - the holder is on the same host and its pid no longer exists (a crashed or killed local process), or
//   - the lock's mtime is older than StaleAfter, whatever the host: a holder on another host that was killed, or
//     whose node went away (a preempted Slurm task requeued on another node, a deleted Kubernetes pod). With
//     DefaultStaleAfter, three missed heartbeats, such a run is taken over after 30 s. Hosts' clocks must agree
//     to well within StaleAfter. The mtime is read from the opened file, so that an NFS client revalidates it.
//
// A live holder keeps its lock whatever StaleAfter its rivals judge by, as long as that is at least three
// heartbeats (the heartbeat does not depend on the holder's own StaleAfter beyond that).
//
// Removal renames the stale file to a unique name and checks that the renamed file is the one judged stale; if
// another process took the lock in between, the fresh lock is put back. A holder whose lock file disappears or
// changes owner stops its run at the next heartbeat. A process frozen (SIGSTOP) for longer than StaleAfter can
// still lose its lock while running: keep StaleAfter above any expected stall.

// FileName is the lock's file name in a run directory.
const FileName = "lock"

// Heartbeat is how often a holder touches its lock file.
const Heartbeat = 10 * time.Second

// DefaultStaleAfter is the heartbeat age after which a lock is taken to be abandoned: three missed heartbeats.
const DefaultStaleAfter = 3 * Heartbeat

// lockInfo is the lock file's content.
type lockInfo struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Token   string    `json:"token"`
	Started time.Time `json:"started"`
}

func (l lockInfo) String() string {
	return fmt.Sprintf("pid %d on %s since %s", l.PID, l.Host, l.Started.Format(time.RFC3339))
}

// BusyError is returned by Acquire when a live process holds the run.
type BusyError struct{ Holder string }

func (e *BusyError) Error() string { return "locked by " + e.Holder }

// Lock is a held lock.
type Lock struct {
	path string
	me   []byte
	stop chan struct{}
	done chan struct{}
}

// Acquire takes the lock at path, or returns a *BusyError naming the live holder; a stale lock (see above) is
// taken over. lost is called (once, from the heartbeat goroutine) if the lock is taken away while held.
func Acquire(path string, staleAfter time.Duration, lost func()) (*Lock, error) {
	host, _ := os.Hostname()
	tok := make([]byte, 8)
	rand.Read(tok)
	me, _ := json.Marshal(lockInfo{PID: os.Getpid(), Host: host, Token: hex.EncodeToString(tok), Started: time.Now().UTC().Truncate(time.Second)})
	for attempt := 0; ; attempt++ {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			_, err = f.Write(me)
			if err == nil {
				err = f.Sync()
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				os.Remove(path)
				return nil, fmt.Errorf("lock %s: %w", path, err)
			}
			l := &Lock{path: path, me: me, stop: make(chan struct{}), done: make(chan struct{})}
			go l.heartbeat(heartbeatEvery(staleAfter), lost)
			return l, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
			// Not a lock this package wrote (a FIFO would block the read that judges it): refuse, never wait.
			return nil, fmt.Errorf("lock %s: is %s, not a lock file: remove it", path, inputfile.Kind(st.Mode()))
		}
		old, info, stale := Inspect(path, host, staleAfter)
		if !stale || attempt > 0 {
			return nil, &BusyError{Holder: info}
		}
		if err := removeStale(path, old); err != nil {
			return nil, err
		}
	}
}

// heartbeatEvery is how often a holder judged by staleAfter touches its lock: every Heartbeat, or five times per
// staleAfter when that is shorter, so that a rival judging by DefaultStaleAfter sees three heartbeats at least.
func heartbeatEvery(staleAfter time.Duration) time.Duration {
	return max(min(Heartbeat, staleAfter/5), time.Millisecond)
}

// Inspect reads a lock file and decides whether it is stale (see the comment at the top of the file); host is
// this machine's name.
func Inspect(path, host string, staleAfter time.Duration) (content []byte, holder string, stale bool) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, "a process that just released it", errors.Is(err, fs.ErrNotExist)
	}
	var b []byte
	if f, err := inputfile.Open(path, maxLockFile); err == nil {
		if fst, err := f.Stat(); err == nil {
			st = fst // after the open: an NFS client revalidates a file's attributes when it opens it
		}
		b, _ = io.ReadAll(io.LimitReader(f, maxLockFile))
		f.Close()
	}
	var li lockInfo
	if json.Unmarshal(b, &li) == nil {
		holder = li.String()
	} else {
		// Empty (a holder between creating and writing it, or one killed then) or not written by this package:
		// name the file, the rule that frees it and the way out, since no holder can be named.
		holder = fmt.Sprintf("an unreadable lock %s (%s), which counts as abandoned once its mtime is %s old: wait, or remove it if no process trains this run",
			path, unreadableWhy(b), staleAfter)
	}
	age := time.Since(st.ModTime())
	if age > staleAfter {
		return b, holder + fmt.Sprintf(" (no heartbeat for %s)", age.Round(time.Second)), true
	}
	if li.Host == host && li.PID > 0 && li.PID != os.Getpid() && !processAlive(li.PID) {
		return b, holder + " (process gone)", true
	}
	return b, holder, false
}

// unreadableWhy says what is wrong with a lock file's content b that is not a lock.
func unreadableWhy(b []byte) string {
	if len(b) == 0 {
		return "empty"
	}
	return fmt.Sprintf("%d bytes that are not a lock's JSON", len(b))
}

// maxLockFile caps a lock file read: the JSON Acquire writes is under 200 bytes.
const maxLockFile = 4096

// removeStale removes the stale lock whose content was judged, restoring a fresh lock taken in the meantime.
func removeStale(path string, judged []byte) error {
	tok := make([]byte, 6)
	rand.Read(tok)
	aside := path + ".stale-" + hex.EncodeToString(tok)
	if err := os.Rename(path, aside); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // someone else removed it first
		}
		return fmt.Errorf("remove stale lock %s: %w", path, err)
	}
	b, err := inputfile.ReadFile(aside, maxLockFile)
	if err == nil && string(b) != string(judged) {
		os.Link(aside, path) // we moved a fresh lock: put it back (fails harmlessly if a third process holds it)
	}
	os.Remove(aside)
	return nil
}

// heartbeat touches the lock until release, and calls lost if the file stops being ours.
func (l *Lock) heartbeat(every time.Duration, lost func()) {
	defer close(l.done)
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			b, err := inputfile.ReadFile(l.path, maxLockFile) // a FIFO put in its place is refused, not waited on
			if err != nil || string(b) != string(l.me) {
				if lost != nil {
					lost()
				}
				return
			}
			now := time.Now()
			os.Chtimes(l.path, now, now)
		}
	}
}

// Release stops the heartbeat and removes the lock if it is still ours.
func (l *Lock) Release() {
	close(l.stop)
	<-l.done
	if b, err := inputfile.ReadFile(l.path, maxLockFile); err == nil && string(b) == string(l.me) {
		os.Remove(l.path)
	}
}

// Wait is Acquire retried every poll until it succeeds, isDone reports the run finished (nil lock, nil error),
// or ctx ends. It is how a scheduler task waits for a run that another task still holds.
func Wait(ctx context.Context, path string, staleAfter, poll time.Duration, lost func(), isDone func() bool, waiting func(holder string)) (*Lock, error) {
	told := false
	for {
		l, err := Acquire(path, staleAfter, lost)
		var busy *BusyError
		if !errors.As(err, &busy) {
			return l, err
		}
		if isDone() {
			return nil, nil
		}
		if !told && waiting != nil {
			waiting(busy.Holder)
			told = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(poll):
		}
	}
}
