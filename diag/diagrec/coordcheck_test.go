package diagrec

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// TestCoordcheckReadsLandedFileAndReencodesIt: a coordinate check printed by the code as landed (testdata/README.md)
// decodes into Coordcheck with every field set, and encoding it again gives the same bytes.
func TestCoordcheckReadsLandedFileAndReencodesIt(t *testing.T) {
	b, err := os.ReadFile("testdata/coordcheck-landed.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields() // a key the type lacks would be dropped by a reader
	var c Coordcheck
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	if c.Gamma != 1 || c.Predicted == nil || *c.Predicted != 0 || len(c.Points) != 2*2*2 || len(c.Fits) != 2*2 {
		t.Fatalf("decoded γ %g, predicted %v, %d points, %d fits; want 1, 0, 8, 4", c.Gamma, c.Predicted, len(c.Points), len(c.Fits))
	}
	if p := c.Points[len(c.Points)-1]; p.Width != 64 || p.Step != 1 || p.Layer != 1 || p.HiddenRMS <= 0 || p.AttnRatio <= 0 || p.FFNRatio <= 0 {
		t.Errorf("last point %+v: want width 64, step 1, layer 1, positive values", p)
	}
	if f := c.Fits[0]; f.AttnExp == 0 || f.FFNExp == 0 || f.HiddenEx == 0 {
		t.Errorf("first fit %+v: an exponent was not read", f)
	}
	var out bytes.Buffer
	if err := json.NewEncoder(&out).Encode(c); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), b) {
		t.Errorf("re-encoded coordinate check differs from the landed file:\n%s\n%s", out.Bytes(), b)
	}
}
