//go:build linux

package safetensors

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
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

// TestWriterOnFullDisk: a Writer on a full disk fails at Close with an error naming the file, leaves the
// previous file untouched and no temporary file behind.
func TestWriterOnFullDisk(t *testing.T) {
	dir, child := onFullDisk(t, "TestWriterOnFullDisk")
	if !child {
		return
	}
	target := filepath.Join(dir, "m.safetensors")
	w := Create(target, nil)
	if err := w.AddFloat32("x", []int{1}, []float32{1}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(target)
	w = Create(target, map[string]string{"format": "pt"})
	if err := w.AddFloat32("big", []int{1 << 16}, make([]float32, 1<<16)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), target) || !strings.Contains(err.Error(), "file too large") {
		t.Errorf("Close on a full disk: %v", err)
	}
	if now, _ := os.ReadFile(target); string(now) != string(old) {
		t.Errorf("%s changed by a failed write", target)
	}
	noTemps(t, dir)
}
