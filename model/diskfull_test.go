//go:build linux

package model

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/smallinit/smallinit/kernel"
)

// fullDiskEnv tells a re-executed test binary to run a full-disk test's body under a file-size limit.
const fullDiskEnv = "SMALLINIT_FULLDISK_DIR"

// onFullDisk runs the test named name again in a child process whose writes past 64 kB fail (RLIMIT_FSIZE:
// the writes return EFBIG, "file too large", as they would return ENOSPC on a full disk; Go ignores SIGXFSZ),
// with the directory dir. In the child it returns dir and true: the caller runs the body. The limit is set in
// a child rather than in this process so that it cannot touch the test framework's own files.
func onFullDisk(t *testing.T, name string) (string, bool) {
	if dir := os.Getenv(fullDiskEnv); dir != "" {
		lim := syscall.Rlimit{Cur: 64 << 10, Max: 64 << 10}
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
			t.Fatal(err)
		}
		return dir, true
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.v")
	cmd.Env = append(os.Environ(), fullDiskEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name) {
		t.Errorf("on a full disk: %v\n%s", err, out)
	}
	return dir, false
}

// noTemps fails if dir holds a temporary file.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

// TestWritersOnFullDisk: WriteFileAtomic and Save on a full disk fail with an error naming the file, leave
// the previous files untouched and no temporary file behind.
func TestWritersOnFullDisk(t *testing.T) {
	dir, child := onFullDisk(t, "TestWritersOnFullDisk")
	if !child {
		return
	}
	p := filepath.Join(dir, "x.json")
	if err := WriteFileAtomic(p, []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(p, make([]byte, 1<<20)); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "file too large") {
		t.Errorf("WriteFileAtomic on a full disk: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("%s changed by a failed write", p)
	}
	noTemps(t, dir)

	pool := kernel.NewPool(1)
	defer pool.Close()
	small, big := testConfig(NormRMS, GateNone, 1e-5, false), testConfig(NormRMS, GateNone, 1e-5, false)
	small.FFNKind, big.Vocab = FFNDense, 4096
	mdir := filepath.Join(dir, "model")
	for i, c := range []Config{small, big} {
		m, err := New(c, 1, pool)
		if err != nil {
			t.Fatal(err)
		}
		err = m.Save(mdir, nil)
		if i == 0 && err != nil {
			t.Fatal(err)
		}
		if i == 1 && (err == nil || !strings.Contains(err.Error(), "file too large")) {
			t.Errorf("Save of a %d-parameter model on a full disk: %v", c.NumParams(), err)
		}
	}
	if c, _, err := ReadConfig(mdir); err != nil || c != small {
		t.Errorf("the saved model's config after a failed Save: %+v %v", c, err)
	}
	noTemps(t, mdir)
}
