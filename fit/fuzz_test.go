package fit

import (
	"encoding/json"
	"github.com/smallinit/smallinit/internal/allocs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadTable reads arbitrary bytes as a table of runs (CSV or JSON, chosen by the second argument) and
// analyses it with a treated arm and a few bootstrap resamples. Nothing may panic; reading errors must name the
// file; reading may allocate at most 1 MB plus 256 bytes per byte of the file; a report, when there is one,
// must encode as JSON (no NaN or infinity leaks into it).
func FuzzReadTable(f *testing.F) {
	csv := "init.gamma,seed,N,tokens,val_loss,state\n"
	for _, row := range []string{"0.5,0,1000,1e6,4.0", "0.5,1,1000,1e6,4.1", "0.5,0,2000,1e6,3.6", "0.5,0,4000,1e6,3.3",
		"0.5,0,8000,1e6,3.1", "1,0,1000,1e6,3.9", "1,0,2000,1e6,3.5", "1,1,8000,1e6,nan"} {
		csv += row + ",done\n"
	}
	f.Add([]byte(csv), false)
	f.Add([]byte(`{"axes":["init.gamma","seed"],"columns":["init.gamma","seed","N","tokens","val_loss"],"rows":[{"init.gamma":0.5,"seed":0,"N":1000,"tokens":1000000,"val_loss":4},{"init.gamma":1,"seed":0,"N":1000,"tokens":1000000,"val_loss":null}]}`), true)
	f.Add([]byte(`[{"N":"1e400","val_loss":"-inf"},{"N":-1,"val_loss":1},{"N":0,"val_loss":{"a":[1]}}]`), true)
	// CI's first finding: a report with +Inf in it (a law extrapolated far below the baseline's sizes).
	f.Add([]byte("init.gamma,N,val_loss\n0.5,1,12\n0.5,2,3.77\n0.5,4,2.31\n0.5,8,2.055\n0.5,16,2.0098\n1,1e-300,3\n1,1,1.7e308\n1,1,1.7e308\n"), false)
	f.Add([]byte("a,b\n1\n"), false)
	f.Add([]byte(""), false)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte, isJSON bool) {
		path := filepath.Join(dir, "table.csv")
		if isJSON {
			path = filepath.Join(dir, "table.json")
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var tab *Table
		var err error
		n := allocs.Bytes(func() { tab, err = ReadTable(path) })
		if limit := uint64(1<<20 + 256*len(b)); n > limit {
			t.Fatalf("ReadTable of %d bytes allocated %d bytes (limit %d)", len(b), n, limit)
		}
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		base, _ := ParseSelector("init.gamma=0.5")
		treated, _ := ParseSelector("init.gamma=1")
		rep, _ := Analyze(tab, Options{Baseline: base, Treated: treated, Bootstrap: 8})
		if rep != nil {
			if _, err := json.Marshal(rep); err != nil {
				t.Fatalf("report does not encode: %v", err)
			}
			var sb strings.Builder
			if err := rep.WriteText(&sb); err != nil {
				t.Fatal(err)
			}
		}
	})
}
