package anchor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteSetsWritesEverySetAndItsCount writes the mix task's sets and checks that each evaluation set is a
// JSON-lines file with one line per example, that train.tok exists, and that the manifest's counts are the sets'.
func TestWriteSetsWritesEverySetAndItsCount(t *testing.T) {
	sets, err := MakeSets(TaskMix, 3, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	counts, err := WriteSets(dir, TaskMix, 3, sets)
	if err != nil {
		t.Fatal(err)
	}
	for name, ex := range sets {
		if counts[name] != len(ex) || len(ex) == 0 {
			t.Errorf("%s: count %d, %d examples", name, counts[name], len(ex))
		}
		if name == "train" {
			if _, err := os.Stat(filepath.Join(dir, "train.tok")); err != nil {
				t.Error(err)
			}
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "\n"); n != len(ex) {
			t.Errorf("%s.jsonl: %d lines, want %d", name, n, len(ex))
		}
	}
	var man struct {
		Task   string         `json:"task"`
		Vocab  int            `json:"vocab_size"`
		Counts map[string]int `json:"counts"`
	}
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	if man.Task != TaskMix || man.Vocab != MixVocab || len(man.Counts) != len(sets) {
		t.Errorf("manifest %+v", man)
	}
	if _, err := MakeSets("nope", 1, 1, 1); err == nil {
		t.Error("unknown task: no error")
	}
	if _, err := MakeSets(TaskComposite, 1, 0, 1); err == nil {
		t.Error("0 composite examples: no error")
	}
}

// TestReadGridReadsWhatRunWrites checks the grid file round trip.
func TestReadGridReadsWhatRunWrites(t *testing.T) {
	dir := t.TempDir()
	g := tinyGrid() // a grid Run accepts: ReadGrid refuses one that fails Validate
	g.Gammas, g.Depths, g.Jobs = []float64{0.5, 1}, []int{2}, 2
	b, _ := json.Marshal(g)
	if err := os.WriteFile(filepath.Join(dir, GridFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadGrid(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Gammas) != 2 || got.Depths[0] != 2 || got.Jobs != 2 {
		t.Errorf("got %+v", got)
	}
	if _, err := ReadGrid(t.TempDir()); err == nil {
		t.Error("no grid file: no error")
	}
}
