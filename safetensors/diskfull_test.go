//go:build linux

package safetensors

import (
	"github.com/smallinit/smallinit/internal/fulldisk"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriterOnFullDisk: a Writer on a full disk fails at Close with an error naming the file, leaves the
// previous file untouched and no temporary file behind.
func TestWriterOnFullDisk(t *testing.T) {
	dir, child := fulldisk.Run(t, "TestWriterOnFullDisk")
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
	fulldisk.NoTemps(t, dir)
}
