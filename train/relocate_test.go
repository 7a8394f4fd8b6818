package train

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/internal/filesum"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train/rundir"
)

// TestMovedRunResumesExactly: a run interrupted after a checkpoint, whose directory is then moved together
// with its data (a study's --out renamed), resumes under StartOrResume with the data's new paths and ends
// bit-identical to a straight run, its config.toml rewritten to the new paths; a copied directory (the old data
// still there, same bytes) resumes too, and so does a checkpoint of an earlier build (absolute data paths in its
// fingerprint). An edited key that computes, data under other names, or other bytes under the old name are
// refused with ErrConfigDiffers, and the refusal says whether only the data paths differ.
func TestMovedRunResumesExactly(t *testing.T) {
	root := t.TempDir()
	c := smallRun(t, root, 7, "train.threads=1")
	straight := filepath.Join(root, "straight")
	if _, err := Start(context.Background(), c, straight, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		copy   bool                                                  // cp -r instead of mv
		legacy bool                                                  // the checkpoint records the fingerprint of earlier builds
		edit   func(t *testing.T, old, new string, c *recipe.Config) // after the move: the config asked for, or the old files
		refuse string                                                // "": resumes exactly; else a part of the error
	}{
		{name: "moved"},
		{name: "copied", copy: true},
		{name: "checkpoint of an earlier build", legacy: true},
		{name: "edited lr", edit: func(_ *testing.T, _, _ string, c *recipe.Config) { c.Schedule.PeakLR *= 2 }, refuse: "edited by hand"},
		{name: "edited steps", edit: func(_ *testing.T, _, _ string, c *recipe.Config) { c.Train.Steps = 5 }, refuse: "edited by hand"},
		{name: "other data file", edit: func(_ *testing.T, _, new string, c *recipe.Config) {
			c.Data.Val = filepath.Join(new, "data", "val2.tok")
		}, refuse: "only in its data paths"},
		{name: "copied with other bytes", copy: true, edit: func(t *testing.T, old, _ string, _ *recipe.Config) {
			writeTokens(t, filepath.Join(old, "data"), "val.tok", 600, 64, 3)
		}, refuse: "still exists and differs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			old := filepath.Join(base, "study")
			oc := moveConfig(t, c, old)
			dir := filepath.Join(old, "runs", "r")
			ctx, cancel := context.WithCancel(context.Background())
			if _, err := Start(ctx, oc, dir, Options{AfterStep: func(s int) {
				if s == 3 {
					cancel()
				}
			}}); !errors.Is(err, ErrInterrupted) {
				t.Fatalf("first attempt: %v, want an interrupted run", err)
			}
			if tc.legacy {
				setCheckpointFingerprint(t, dir, oc)
			}
			moved := filepath.Join(base, "moved")
			if tc.copy {
				if out, err := exec.Command("cp", "-r", old, moved).CombinedOutput(); err != nil {
					t.Fatalf("cp: %v %s", err, out)
				}
			} else if err := os.Rename(old, moved); err != nil {
				t.Fatal(err)
			}
			nc := oc
			nc.Data.Train, nc.Data.Val = filepath.Join(moved, "data", "train.tok"), filepath.Join(moved, "data", "val.tok")
			if tc.edit != nil {
				tc.edit(t, old, moved, &nc)
			}
			ndir := filepath.Join(moved, "runs", "r")
			before, _ := os.ReadFile(filepath.Join(ndir, rundir.ConfigFile))
			res, err := StartOrResume(context.Background(), nc, ndir, Options{})
			if tc.refuse != "" {
				after, _ := os.ReadFile(filepath.Join(ndir, rundir.ConfigFile))
				if !errors.Is(err, ErrConfigDiffers) || !strings.Contains(err.Error(), tc.refuse) || string(before) != string(after) {
					t.Errorf("resume: %v (config.toml changed: %v), want ErrConfigDiffers saying %q", err, string(before) != string(after), tc.refuse)
				}
				return
			}
			if err != nil || !res.Resumed || res.Steps != 7 {
				t.Fatalf("resume: %+v, %v; want the moved run resumed to step 7", res, err)
			}
			sameRun(t, straight, ndir)
			if have, err := Load(filepath.Join(ndir, rundir.ConfigFile), nil); err != nil || have.Data != nc.Data {
				t.Errorf("config.toml after the move: data %+v, %v; want %+v", have.Data, err, nc.Data)
			}
		})
	}
}

// moveConfig is c with its data copied under root/data, as a study lays them out.
func moveConfig(t *testing.T, c recipe.Config, root string) recipe.Config {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*string{&c.Data.Train, &c.Data.Val} {
		b, err := os.ReadFile(*p)
		if err != nil {
			t.Fatal(err)
		}
		*p = filepath.Join(root, "data", filepath.Base(*p))
		if err := os.WriteFile(*p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// setCheckpointFingerprint rewrites the config fingerprint of every checkpoint of the run in dir to the one
// earlier builds recorded (legacyFingerprint of c).
func setCheckpointFingerprint(t *testing.T, dir string, c recipe.Config) {
	t.Helper()
	fp, err := legacyFingerprint(c)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := listCheckpoints(dir)
	if err != nil || len(steps) == 0 {
		t.Fatalf("checkpoints: %v, %v", steps, err)
	}
	for _, s := range steps {
		path := filepath.Join(dir, checkpointsDir, checkpointName(s), stateFile)
		b, _ := os.ReadFile(path)
		var st State
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		st.Config = fp
		b, _ = json.Marshal(st)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		// An earlier build wrote no manifest.
		if err := os.Remove(filepath.Join(filepath.Dir(path), filesum.ManifestFile)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMovedPath: a data path recorded for a run names the file want names now when it is want's path below the
// directory want shares with the run, under another root; it returns that old root.
func TestMovedPath(t *testing.T) {
	for _, tc := range []struct {
		name, have, want, dir string
		root                  string // "": refused
	}{
		{"renamed study", "/gone/s/data/train.tok", "/x/s2/data/train.tok", "/x/s2/runs/a", "/gone/s"},
		{"relative old path", "s/data/train.tok", "/x/s2/data/train.tok", "/x/s2/runs/a", "s"},
		{"other file name", "/gone/s/data/other.tok", "/x/s2/data/train.tok", "/x/s2/runs/a", ""},
		{"other subdirectory", "/gone/s/probes-data/train.tok", "/x/s2/data/train.tok", "/x/s2/runs/a", ""},
		{"data outside the run's tree", "/gone/train.tok", "/data/train.tok", "/runs/a", ""},
		{"partial name match", "/gone/xdata/train.tok", "/x/s2/data/train.tok", "/x/s2/runs/a", ""},
	} {
		root, err := MovedPath(tc.have, tc.want, tc.dir)
		if tc.root == "" && err == nil || tc.root != "" && (err != nil || root != tc.root) {
			t.Errorf("%s: root %q, %v; want %q", tc.name, root, err, tc.root)
		}
	}
}
