package gammainit

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/smallinit/smallinit/recipe"
)

// Record is the one record of how a model was initialised, written and read by this type only, in two places:
//
//   - a run's init.json: every field (the optimizer the run started with and, per matrix, the intended and
//     drawn std of Apply);
//   - a model's config.json, as smallinit_init: the recipe and seed only (Optimizer nil, Tensors empty), from a
//     training run's saved models and from scale.Init.
//
// The Python side (python/smallinit_torch) writes and reads the same JSON: {"recipe", "seed", "tensors"},
// with "optimizer" from its trainer. The fields are in the order of their keys, as the maps the first writers
// encoded, so files written before and after this type are byte-identical.
//
// It lives here rather than in train so that readers below train (the audit) parse it with the same type.
type Record struct {
	Optimizer *recipe.AdamW `json:"optimizer,omitempty"`
	Recipe    recipe.Init   `json:"recipe"`
	Seed      uint64        `json:"seed"`
	Tensors   []TensorStd   `json:"tensors,omitempty"`
}

// ParseRecord reads an init record (init.json, or a config.json's smallinit_init). A record without a recipe,
// or whose recipe Validate refuses, is an error: a reader can trust the recipe it gets.
func ParseRecord(b []byte) (Record, error) {
	var l struct {
		Record
		Recipe *recipe.Init `json:"recipe"` // shadows Record.Recipe, to tell a missing recipe
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return Record{}, fmt.Errorf("init record: %w", err)
	}
	if l.Recipe == nil {
		return Record{}, errors.New(`init record: no "recipe"`)
	}
	if err := l.Recipe.Validate(); err != nil {
		return Record{}, fmt.Errorf("init record: recipe: %w", err)
	}
	l.Record.Recipe = *l.Recipe
	return l.Record, nil
}
