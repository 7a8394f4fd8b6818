package gammainit

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/smallinit/smallinit/recipe"
)

var updateTable = flag.Bool("update-table", false, "rewrite "+TableFile+" from Table()")

// TestTableFileUpToDate fails when the committed table the PyTorch package reads differs from what this package
// writes, so that the Python implementation of the rule cannot drift from the Go one (regenerate with
// go test ./gammainit -run TestTableFileUpToDate -update-table).
func TestTableFileUpToDate(t *testing.T) {
	want, err := TableJSON()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", TableFile)
	if *updateTable {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with: go test ./gammainit -run TestTableFileUpToDate -update-table)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is out of date with gammainit: regenerate with go test ./gammainit -run TestTableFileUpToDate -update-table", TableFile)
	}
}

// TestTableCoversEveryClass checks that the table names every class a recipe may override, records d_in's axis
// for every matrix, and that its examples use every rule.
func TestTableCoversEveryClass(t *testing.T) {
	doc, err := Table()
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string]bool{}
	for _, tt := range doc.Tensors {
		classes[tt.Class] = true
		if (tt.Init == "normal") != (tt.DInAxis != nil) {
			t.Errorf("%s: init %s with d_in axis %v", tt.Name, tt.Init, tt.DInAxis)
		}
		if tt.DInAxis != nil && *tt.DInAxis != 1 {
			t.Errorf("%s: d_in axis %d, the engine stores [d_out, d_in]", tt.Name, *tt.DInAxis)
		}
	}
	for _, c := range recipe.ClassNames() {
		if !classes[c] {
			t.Errorf("class %s: no tensor in the table", c)
		}
	}
	rules := map[string]bool{}
	for _, e := range doc.Examples {
		rules[e.Recipe.Rule] = true
		for _, o := range e.Recipe.Classes {
			rules[o.Rule] = true
		}
		var cfg map[string]any
		if err := json.Unmarshal(e.Config, &cfg); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range doc.Rules {
		if !rules[r.Name] {
			t.Errorf("rule %s: in no example", r.Name)
		}
	}
	if len(doc.DepthScaled) != 2 {
		t.Errorf("depth-scaled classes %v, want o and ffn_down", doc.DepthScaled)
	}
}
