package train

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var updateDefaults = flag.Bool("update-defaults", false, "rewrite "+DefaultsFile+" from Defaults()")

// TestDefaultsFileUpToDate fails when the committed defaults the PyTorch trainer reads differ from Default(),
// the schedule kinds, the metrics keys or Schedule.LR, so that the Python trainer cannot drift from the Go one.
func TestDefaultsFileUpToDate(t *testing.T) {
	want, err := DefaultsJSON()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", DefaultsFile)
	if *updateDefaults {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with: go test ./train -run TestDefaultsFileUpToDate -update-defaults)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is out of date with recipe.Default(): regenerate with go test ./train -run TestDefaultsFileUpToDate -update-defaults", DefaultsFile)
	}
}

// TestDefaultsDocCoversTheConfig checks that the exported run defaults hold every section of a run config and
// the keys the metrics lines carry.
func TestDefaultsDocCoversTheConfig(t *testing.T) {
	doc, err := Defaults()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"seed", "model", "init", "optimizer", "schedule", "data", "train"} {
		if _, ok := doc.Run[s]; !ok {
			t.Errorf("run defaults lack %s", s)
		}
	}
	if len(doc.MetricKeys) != 8 || doc.MetricKeys[0] != "step" || doc.MetricKeys[7] != "tokens_per_s" {
		t.Errorf("metric keys %v", doc.MetricKeys)
	}
	for _, ex := range doc.LRExamples {
		if len(ex.LR) != ex.Schedule.Total {
			t.Errorf("%+v: %d learning rates", ex.Schedule, len(ex.LR))
		}
	}
}
