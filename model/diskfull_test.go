//go:build linux

package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/internal/fulldisk"

	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/kernel"
)

// TestWritersOnFullDisk: atomicfile.Write and Save on a full disk fail with an error naming the file, leave
// the previous files untouched and no temporary file behind.
func TestWritersOnFullDisk(t *testing.T) {
	dir, child := fulldisk.Run(t, "TestWritersOnFullDisk")
	if !child {
		return
	}
	p := filepath.Join(dir, "x.json")
	if err := atomicfile.Write(p, []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(p, make([]byte, 1<<20)); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "file too large") {
		t.Errorf("atomicfile.Write on a full disk: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("%s changed by a failed write", p)
	}
	fulldisk.NoTemps(t, dir)

	pool := kernel.NewPool(1)
	defer pool.Close()
	small, big := testConfig(arch.NormRMS, arch.GateNone, 1e-5, false), testConfig(arch.NormRMS, arch.GateNone, 1e-5, false)
	small.FFNKind, big.Vocab = arch.FFNDense, 4096
	mdir := filepath.Join(dir, "model")
	for i, c := range []arch.Config{small, big} {
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
	fulldisk.NoTemps(t, mdir)
}
