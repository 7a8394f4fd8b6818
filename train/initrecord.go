package train

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/optim"
)

// InitRecord is the one record of how a model was initialised, in two places:
//
//   - a run's init.json: every field (the optimizer the run started with and, per matrix, the intended and
//     drawn std of gammainit.Apply);
//   - a saved model's config.json, as smallinit_init: the recipe and seed only (Optimizer nil, Tensors empty).
//
// The Python side (python/smallinit_torch) writes and reads the same JSON: {"recipe", "seed", "tensors"},
// with "optimizer" from its trainer. The fields are in the order of their keys, as the map the first writers
// encoded, so files written before and after this type are byte-identical.
type InitRecord struct {
	Optimizer *optim.AdamWConfig    `json:"optimizer,omitempty"`
	Recipe    gammainit.Recipe      `json:"recipe"`
	Seed      uint64                `json:"seed"`
	Tensors   []gammainit.TensorStd `json:"tensors,omitempty"`
}

// ModelInitRecord is what a model saved from a run of c records as smallinit_init: its recipe and seed.
func ModelInitRecord(c Config) InitRecord { return InitRecord{Recipe: c.Init, Seed: c.Seed} }

// ParseInitRecord reads an init record (init.json, or a config.json's smallinit_init). A record without a
// recipe, or whose recipe gammainit would refuse, is an error: a reader can trust the recipe it gets.
func ParseInitRecord(b []byte) (InitRecord, error) {
	var l struct {
		InitRecord
		Recipe *gammainit.Recipe `json:"recipe"` // shadows InitRecord.Recipe, to tell a missing recipe
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return InitRecord{}, fmt.Errorf("init record: %w", err)
	}
	if l.Recipe == nil {
		return InitRecord{}, errors.New(`init record: no "recipe"`)
	}
	if err := l.Recipe.Validate(); err != nil {
		return InitRecord{}, fmt.Errorf("init record: recipe: %w", err)
	}
	l.InitRecord.Recipe = *l.Recipe
	return l.InitRecord, nil
}
