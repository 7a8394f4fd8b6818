package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/train"
)

// TestPresetsResolveAlikeEverywhere: every preset name (in any case), with and without the overrides that
// move d_ff, gives the same model config and batch through train's model.preset (train.Load), init's --preset
// and bench's --preset (configFromPreset, the preset's Batch being bench's default): one table, one d_ff rule.
func TestPresetsResolveAlikeEverywhere(t *testing.T) {
	overrides := [][]string{nil, {"hidden_size=192"}, {"hidden_size=192", "intermediate_size=640"}, {"intermediate_size=640"}}
	for _, name := range arch.PresetNames() {
		for _, spelled := range []string{name, strings.ToUpper(name)} {
			for _, sets := range overrides {
				var dotted []string
				for _, kv := range sets {
					dotted = append(dotted, "model."+kv)
				}
				tc, err := train.Load("", append([]string{"model.preset=" + spelled, "data.train=train.tok"}, dotted...))
				if err != nil {
					t.Errorf("train %s %v: %v", spelled, sets, err)
					continue
				}
				ic, p, err := configFromPreset(spelled, sets)
				if err != nil {
					t.Errorf("init/bench %s %v: %v", spelled, sets, err)
					continue
				}
				if !reflect.DeepEqual(tc.Model.Config, ic) {
					t.Errorf("%s %v: train resolves\n%+v\ninit/bench resolve\n%+v", spelled, sets, tc.Model.Config, ic)
				}
				if tc.Train.BatchSize != p.Batch || tc.Model.Preset != p.Name || p.Name != name {
					t.Errorf("%s %v: train batch %d preset %q, init/bench batch %d preset %q", spelled, sets, tc.Train.BatchSize, tc.Model.Preset, p.Batch, p.Name)
				}
				want := p.Config.FFN
				switch {
				case strings.Contains(strings.Join(sets, " "), "intermediate_size"):
					want = 640
				case len(sets) > 0:
					want = arch.DefaultFFN(192)
				}
				if ic.FFN != want {
					t.Errorf("%s %v: d_ff %d, want %d", spelled, sets, ic.FFN, want)
				}
			}
		}
	}
}
