// Package fulldisk runs a test's body as if the disk were full, so that writers can be checked to fail cleanly
// (an error naming the file, no partial output) without filling a real disk.
package fulldisk

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// env tells a re-executed test binary to run a full-disk test's body under a file-size limit.
const env = "SMALLINIT_FULLDISK_DIR"

// Run runs the test named name again in a child process whose writes past 64 kB fail (RLIMIT_FSIZE: the
// writes return EFBIG, "file too large", as they would return ENOSPC on a full disk; Go ignores SIGXFSZ), with
// a fresh directory. In the child it returns that directory and true: the caller runs the body. The limit is
// set in a child rather than in this process so that it cannot touch the test framework's own files.
func Run(t *testing.T, name string) (string, bool) {
	if dir := os.Getenv(env); dir != "" {
		lim := syscall.Rlimit{Cur: 64 << 10, Max: 64 << 10}
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
			t.Fatal(err)
		}
		return dir, true
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.v")
	cmd.Env = append(os.Environ(), env+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name) {
		t.Errorf("on a full disk: %v\n%s", err, out)
	}
	return dir, false
}

// NoTemps fails if dir holds a temporary file.
func NoTemps(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}
