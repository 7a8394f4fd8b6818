package inputfile_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/smallinit/smallinit/anchor"
	"github.com/smallinit/smallinit/budget"
	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/fit"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/report"
	"github.com/smallinit/smallinit/safetensors"
	"github.com/smallinit/smallinit/summary"
	"github.com/smallinit/smallinit/sweep"
	"github.com/smallinit/smallinit/tokenizer"
	"github.com/smallinit/smallinit/train"
)

// reader is one reader of outside input: read opens the file at path, a file named name, or a directory
// holding it where the reader takes a directory (inDir).
type reader struct {
	name  string // the file name the reader expects
	inDir bool   // read takes the directory holding name
	read  func(path string) error
}

// readers lists every reader of a file a user hands smallinit. A new reader is one row.
var readers = []reader{
	{"config.json", true, func(dir string) error { _, _, err := model.ReadConfig(dir); return err }},
	{"tokenizer.json", false, func(p string) error { _, err := tokenizer.Load(p); return err }},
	{"run.toml", false, func(p string) error { _, err := train.Load(p, nil); return err }},
	{"grid.toml", false, func(p string) error { _, err := sweep.ParseGrid(p); return err }},
	{"results.json", false, func(p string) error { _, err := fit.ReadTable(p); return err }},
	{"train.tok", false, func(p string) error { _, err := data.ReadTokens(p, 0); return err }},
	{"model.safetensors", false, func(p string) error {
		f, err := safetensors.Open(p)
		if err == nil {
			f.Close()
		}
		return err
	}},
	{"model.safetensors.index.json", true, func(dir string) error {
		f, err := safetensors.OpenSharded(dir)
		if err == nil {
			f.Close()
		}
		return err
	}},
	{"stats.json", true, func(dir string) error { _, err := data.ReadStats(dir); return err }},
	{"corpus.txt", false, func(p string) error {
		r, err := data.OpenInput(p, data.InputOptions{})
		if err == nil {
			r.Close()
		}
		return err
	}},
	{"hellaswag.jsonl", false, func(p string) error {
		spec, err := eval.ParseTaskArg("hellaswag=" + p)
		if err != nil {
			return err
		}
		_, err = eval.RunTask(context.Background(), spec, nil, eval.Options{})
		return err
	}},
	{"compare.json", false, func(p string) error { _, err := report.ReadCompare(p); return err }},
	{"fit.json", false, func(p string) error { _, err := report.ReadLaw(p); return err }},
	{"coordcheck.json", false, func(p string) error { _, err := report.ReadCoordcheck(p); return err }},
	// The state and records of studies, sweeps and anchor diagrams, read again when they resume.
	{"plan.toml", false, func(p string) error { _, err := experiment.Load(p); return err }},
	{"sizing.json", false, func(p string) error { _, err := budget.ReadSizing(p); return err }},
	{"summary.json", false, func(p string) error { _, err := summary.Read(p); return err }},
	{"select.json", true, func(dir string) error { _, err := data.ReadSelectionStats(dir); return err }},
	{"plan.json", true, func(dir string) error { _, err := sweep.ReadPlan(dir); return err }},
	{"grid.json", true, func(dir string) error { _, err := anchor.ReadGrid(dir); return err }},
	{"results.jsonl", false, func(p string) error { _, err := anchor.ReadResults(p); return err }},
	// Files a run appends to: opened without blocking, refused unless regular.
	{"metrics.jsonl", false, func(p string) error {
		f, err := inputfile.OpenAppend(p)
		if err == nil {
			f.Close()
		}
		return err
	}},
}

// TestEveryReaderRefusesDevicesAndFIFOs hands every reader a symlink to /dev/zero (which a plain ReadFile
// reads until memory runs out) and a FIFO (whose open blocks until a writer appears); each must refuse it at
// once, naming the file and what it is.
func TestEveryReaderRefusesDevicesAndFIFOs(t *testing.T) {
	for _, r := range readers {
		for _, kind := range []string{"devzero", "fifo"} {
			t.Run(r.name+"/"+kind, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, r.name)
				want := "a character device"
				if kind == "devzero" {
					if err := os.Symlink("/dev/zero", path); err != nil {
						t.Fatal(err)
					}
				} else {
					if err := syscall.Mkfifo(path, 0o600); err != nil {
						t.Fatal(err)
					}
					want = "a FIFO"
				}
				arg := path
				if r.inDir {
					arg = dir
				}
				done := make(chan error, 1)
				go func() { done <- r.read(arg) }()
				select {
				case err := <-done:
					if err == nil || !errors.Is(err, inputfile.ErrNotRegular) || !strings.Contains(err.Error(), path) ||
						!strings.Contains(err.Error(), want) {
						t.Fatalf("reading %s (%s): %v, want an error naming the path and %q", r.name, kind, err, want)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("reading %s (%s) hangs", r.name, kind)
				}
			})
		}
	}
}
