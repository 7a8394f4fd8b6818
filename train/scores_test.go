package train

import (
	"os"
	"testing"
)

// TestScoreCacheRoundTrips: a score written through the run comes back equal; a missing, cut or wrongly typed
// cache reads as absent (to be scored again), never as a zero score.
func TestScoreCacheRoundTrips(t *testing.T) {
	type score struct {
		Loss   float64 `json:"loss"`
		Tokens int     `json:"tokens"`
	}
	r, err := OpenRun(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var got score
	if r.ReadScore(SelectionScore, &got) {
		t.Fatal("a run without a cache read one")
	}
	want := score{Loss: 3.25, Tokens: 4096}
	if err := r.WriteScore(SelectionScore, want); err != nil {
		t.Fatal(err)
	}
	if !r.ReadScore(SelectionScore, &got) || got != want {
		t.Errorf("read back %+v, want %+v", got, want)
	}
	if r.ReadScore(VerdictScore, &got) {
		t.Error("the verdict cache read the selection cache's file")
	}
	for name, body := range map[string]string{"cut": `{"loss": 3.2`, "wrong type": `{"loss": "low"}`} {
		if err := os.WriteFile(r.Path(string(VerdictScore)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if r.ReadScore(VerdictScore, &got) {
			t.Errorf("%s cache %q read as a score", name, body)
		}
	}
}
