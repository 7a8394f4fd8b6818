package inputfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostile makes, in a temporary directory, a symlink to /dev/zero, a FIFO, a directory and a regular file of
// 100 bytes, and returns their paths by name.
func hostile(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	p := map[string]string{
		"devzero": filepath.Join(dir, "zero.json"),
		"fifo":    filepath.Join(dir, "fifo.json"),
		"dir":     filepath.Join(dir, "dir.json"),
		"regular": filepath.Join(dir, "regular.json"),
	}
	if err := os.Symlink("/dev/zero", p["devzero"]); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p["fifo"], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p["dir"], 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p["regular"], make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadFileRefusesWhatIsNotARegularFileOfSaneSize(t *testing.T) {
	p := hostile(t)
	cases := []struct {
		path  string
		limit int64
		want  error  // nil: read succeeds
		words string // in the message
	}{
		{p["devzero"], MaxConfig, ErrNotRegular, "a character device"},
		{p["fifo"], MaxConfig, ErrNotRegular, "a FIFO"},
		{p["dir"], NoLimit, ErrNotRegular, "a directory"},
		{p["regular"], 99, ErrTooLarge, "100 B, more than the 99 B"},
		{p["regular"], 100, nil, ""},
		{p["regular"], NoLimit, nil, ""},
	}
	for _, c := range cases {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(c.path, c.limit); done <- err }()
		var err error
		select {
		case err = <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadFile(%s) hangs", c.path)
		}
		if c.want == nil {
			if err != nil {
				t.Errorf("ReadFile(%s, %d): %v", c.path, c.limit, err)
			}
			continue
		}
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.words) {
			t.Errorf("ReadFile(%s, %d) = %v, want %v naming the path and %q", c.path, c.limit, err, c.want, c.words)
		}
	}
}

func TestQuoteCutsLongData(t *testing.T) {
	long := strings.Repeat("é", 1000) // 2000 bytes
	q := Quote(long)
	if len(q) > MaxQuote+40 || !strings.Contains(q, "(2000 bytes in all)") {
		t.Fatalf("Quote of 2000 bytes = %s", q)
	}
	if Quote("abc") != `"abc"` {
		t.Fatalf("Quote(abc) = %s", Quote("abc"))
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1 KiB", 16 << 20: "16 MiB", 3435973837: "3.2 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %s, want %s", n, got, want)
		}
	}
}

// TestOpenAppendRefusesWhatIsNotARegularFile: OpenAppend appends to a regular file and creates a missing one; a
// FIFO (without a reader, whose blocking open would wait for one, or with one), /dev/zero and a directory are
// refused at once, naming the path and what it is.
func TestOpenAppendRefusesWhatIsNotARegularFile(t *testing.T) {
	p := hostile(t)
	p["missing"] = filepath.Join(filepath.Dir(p["regular"]), "new.jsonl")
	withReader := filepath.Join(filepath.Dir(p["fifo"]), "read.fifo")
	if err := syscall.Mkfifo(withReader, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(withReader, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p["fifo with a reader"] = withReader
	for _, tc := range []struct {
		name, want string // want: "" when accepted
		size       int64  // after appending 3 bytes
	}{
		{"regular", "", 103},
		{"missing", "", 3},
		{"fifo", "a FIFO", 0},
		{"fifo with a reader", "a FIFO", 0},
		{"devzero", "a character device", 0},
		{"dir", "is a directory", 0},
	} {
		done := make(chan error, 1)
		go func() {
			f, err := OpenAppend(p[tc.name])
			if err == nil {
				_, err = f.Write([]byte("abc"))
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if tc.want == "" {
				st, serr := os.Stat(p[tc.name])
				if err != nil || serr != nil || st.Size() != tc.size {
					t.Errorf("%s: %v, %v; want %d bytes after the append", tc.name, err, serr, tc.size)
				}
			} else if err == nil || !strings.Contains(err.Error(), p[tc.name]) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want an error naming the path and %q", tc.name, err, tc.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: OpenAppend blocked", tc.name)
		}
	}
}
