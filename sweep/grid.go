// Package sweep expands a grid of run configs into numbered runs, runs them (locally in parallel, or one per
// task of a Slurm job array or a Kubernetes Indexed Job on a shared directory), reports their state and
// collects their final metrics into one table for the scaling fits of package fit (docs/definitions.md §4 "Effective model
// size").
//
// A grid file is TOML with two top-level keys:
//
//	base = "run.toml"            # a run config file (relative to the grid file), or
//	[base]                       # the run config inline, in the same TOML as `smallinit train --config`
//	model.preset = "tiny"
//	data.train = "/data/train.tok"
//
//	[axes]                       # dotted config keys to lists of scalar values
//	"init.gamma" = [0.5, 0.75, 1, 1.25, 1.5]
//	"model.preset" = ["tiny", "small"]
//	seed = [0, 1, 2]
//
// Every combination of axis values is one run: the base config with the run's values applied as
// `--set key=value` overrides, resolved and validated by train.Load. Paths inside the config (data.train,
// data.val) are used as written, like `smallinit train` does: relative to the working directory of the process
// that runs the sweep, so cluster jobs should use absolute paths.
//
// # Order and ids
//
// The axes are ordered by key (byte order, not their order in the file) and the runs are their cartesian
// product with the last axis varying fastest, each axis's values in the order the file lists them. With the
// usual keys (init.*, model.*, seed) the seeds of one configuration are therefore adjacent. Run i's id is
//
//	<i, zero-padded to 3 digits>-<slug>-<hash>
//
// where slug is the run's values joined by "_" in axis order (characters other than letters, digits, '.', '+'
// and '-' dropped; cut to 40 bytes) and hash is the first 8 hex digits of the SHA-256 of the lines
// "key=value\n" in axis order. The id depends only on the axes' keys and values, not on the file's layout, the
// machine or the order of the axes in the file; the hash alone identifies a combination across sweeps.
package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train"
)

// Grid is a parsed grid file: the base run config and the axes to sweep.
type Grid struct {
	Path     string         // the grid file
	Text     []byte         // its contents, copied to DIR/grid.toml by Prepare
	BaseFile string         // the base run config file (resolved against the grid's directory), or "" for an inline base
	Base     []override.Set // the inline base as typed overrides (sorted by key), when BaseFile is ""
	Axes     []Axis         // sorted by key
}

// Axis is one swept config key and its values (int64, float64, string or bool), in the file's order.
type Axis struct {
	Key    string `json:"key"`
	Values []any  `json:"values"`
}

// ParseGrid reads and checks a grid file (see the package comment for its format). It does not resolve the
// runs' configs: Expand does.
func ParseGrid(path string) (*Grid, error) {
	text, err := inputfile.ReadFile(path, inputfile.MaxConfig)
	if err != nil {
		return nil, fmt.Errorf("grid: %w", err)
	}
	g, err := parseGrid(text, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("grid %s: %w", path, err)
	}
	g.Path = path
	return g, nil
}

// NewGrid is the grid of an inline base recipe and axes given as typed values (a study's sweep group): the
// grid its grid file would parse to, with no text in between. A key set twice in base takes its last value;
// the axes are checked as a grid file's are. Path and Text are empty (Text is what Prepare copies: a caller
// that runs the grid from a directory sets both to its grid file).
func NewGrid(base []override.Set, axes []Axis) (*Grid, error) {
	g := &Grid{}
	at := map[string]int{}
	for _, s := range base {
		if _, err := override.Value(s.Value); err != nil {
			return nil, fmt.Errorf("[base] %s: %w", s.Key, err)
		}
		if i, ok := at[s.Key]; ok {
			g.Base[i] = s
			continue
		}
		at[s.Key] = len(g.Base)
		g.Base = append(g.Base, s)
	}
	sort.SliceStable(g.Base, func(i, j int) bool { return g.Base[i].Key < g.Base[j].Key })
	flat := map[string]any{}
	for _, a := range axes {
		if _, dup := flat[a.Key]; dup {
			return nil, fmt.Errorf("axes %q: given twice", a.Key)
		}
		flat[a.Key] = a.Values
	}
	if err := g.setAxes(flat); err != nil {
		return nil, err
	}
	return g, nil
}

func parseGrid(text []byte, dir string) (*Grid, error) {
	var doc map[string]any
	if err := override.CheckDepth(text); err != nil {
		return nil, err
	}
	if _, err := toml.Decode(string(text), &doc); err != nil {
		return nil, err
	}
	g := &Grid{Text: text}
	for k := range doc {
		if k != "base" && k != "axes" {
			return nil, fmt.Errorf("unknown top-level key %q (a grid has base and [axes])", k)
		}
	}
	switch b := doc["base"].(type) {
	case nil:
		// all defaults
	case string:
		g.BaseFile = b
		if !filepath.IsAbs(b) {
			g.BaseFile = filepath.Join(dir, b)
		}
		st, err := os.Stat(g.BaseFile)
		if err == nil {
			err = inputfile.Check(g.BaseFile, st, inputfile.MaxConfig)
		}
		if err != nil {
			return nil, fmt.Errorf("base: %w", err)
		}
	case map[string]any:
		flat := map[string]any{}
		if err := flatten("", b, flat, false); err != nil {
			return nil, fmt.Errorf("[base]: %w", err)
		}
		for _, k := range sortedKeys(flat) {
			if _, err := override.Value(flat[k]); err != nil {
				return nil, fmt.Errorf("[base] %s: %w", k, err)
			}
			g.Base = append(g.Base, override.Set{Key: k, Value: flat[k]})
		}
	default:
		return nil, fmt.Errorf("base: want a file name or a [base] table, have %T", b)
	}
	axes, ok := doc["axes"].(map[string]any)
	if !ok {
		if doc["axes"] == nil {
			return nil, errors.New("no [axes] table: nothing to sweep")
		}
		return nil, fmt.Errorf("axes: want a table of keys to lists, have %T", doc["axes"])
	}
	flat := map[string]any{}
	if err := flatten("", axes, flat, true); err != nil {
		return nil, fmt.Errorf("[axes]: %w", err)
	}
	if err := g.setAxes(flat); err != nil {
		return nil, err
	}
	return g, nil
}

// setAxes checks the axes, dotted key → list of values, and sets them sorted by key.
func (g *Grid) setAxes(flat map[string]any) error {
	if len(flat) == 0 {
		return errors.New("[axes] is empty: nothing to sweep")
	}
	for _, k := range sortedKeys(flat) {
		list, ok := flat[k].([]any)
		if !ok {
			return fmt.Errorf("axes %q: want a list of values, have %v", k, flat[k])
		}
		if len(list) == 0 {
			return fmt.Errorf("axes %q: empty list", k)
		}
		seen := map[string]bool{}
		for _, v := range list {
			switch x := v.(type) {
			case int64, string, bool:
			case float64:
				if math.IsNaN(x) || math.IsInf(x, 0) {
					return fmt.Errorf("axes %q: non-finite value %v", k, x)
				}
			default:
				return fmt.Errorf("axes %q: value %v is a %T; axis values are numbers, strings or booleans", k, v, v)
			}
			s := override.Format(v)
			if seen[s] {
				return fmt.Errorf("axes %q: value %s listed twice", k, s)
			}
			seen[s] = true
		}
		g.Axes = append(g.Axes, Axis{Key: k, Values: list})
	}
	return nil
}

// flatten turns nested tables into dotted keys. With stopAtLists (the axes), a list is a leaf value.
func flatten(prefix string, m map[string]any, out map[string]any, stopAtLists bool) error {
	for k, v := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok {
			if err := flatten(key, sub, out, stopAtLists); err != nil {
				return err
			}
			continue
		}
		if _, dup := out[key]; dup {
			return fmt.Errorf("key %q given twice (once quoted, once dotted?)", key)
		}
		out[key] = v
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Run is one point of the grid.
type Run struct {
	Index  int            `json:"index"`
	ID     string         `json:"id"`
	Values map[string]any `json:"values"`   // axis key → value
	Sets   []string       `json:"sets"`     // the axis values as key=value overrides of the base config
	N      int64          `json:"N"`        // non-embedding parameters (arch.Config.NonEmbeddingParams)
	Params int64          `json:"n_params"` // all parameters (arch.Config.NumParams)
	Steps  int            `json:"steps"`    // optimizer steps of the run (recipe.Config.TotalSteps)
	Tokens int64          `json:"tokens"`   // training tokens of the run: steps · batch_size · T

	Config recipe.Config `json:"-"` // the resolved config (only when expanded from a grid, not read from plan.json)
}

// Expand resolves every run of the grid through train.Load, in the order of the package comment. The first
// run whose config does not load is an error naming the run, its values and the offending key.
func (g *Grid) Expand() (*Plan, error) {
	total := 1
	for _, a := range g.Axes {
		total *= len(a.Values)
		if total > MaxRuns {
			return nil, fmt.Errorf("grid %s: more than %d runs", g.Path, MaxRuns)
		}
	}
	p := &Plan{Version: planVersion, Axes: g.Axes, BaseFile: g.BaseFile}
	for _, s := range g.Base {
		p.Base = append(p.Base, s.String())
	}
	width := max(3, len(strconv.Itoa(total-1)))
	pick := make([]int, len(g.Axes))
	for i := range total {
		// pick[j] = the value of axis j in run i: the last axis varies fastest.
		rem := i
		for j := len(g.Axes) - 1; j >= 0; j-- {
			pick[j] = rem % len(g.Axes[j].Values)
			rem /= len(g.Axes[j].Values)
		}
		r := Run{Index: i, Values: map[string]any{}}
		var slug []string
		h := sha256.New()
		for j, a := range g.Axes {
			v := a.Values[pick[j]]
			r.Values[a.Key] = v
			tv, err := override.Value(v)
			if err != nil {
				return nil, fmt.Errorf("grid %s: axes %q: %w", g.Path, a.Key, err)
			}
			r.Sets = append(r.Sets, a.Key+"="+tv)
			fmt.Fprintf(h, "%s=%s\n", a.Key, override.Format(v))
			slug = append(slug, slugPart(override.Format(v)))
		}
		s := strings.Join(slug, "_")
		if len(s) > 40 {
			s = strings.TrimRight(s[:40], "_")
		}
		r.ID = fmt.Sprintf("%0*d-%s-%s", width, i, s, hex.EncodeToString(h.Sum(nil))[:8])
		var err error
		if r.Config, err = g.load(r); err != nil {
			return nil, fmt.Errorf("grid %s: run %s (%s): %w", g.Path, r.ID, r.describe(g.Axes), err)
		}
		mc := r.Config.Model.Config
		r.N, r.Params = mc.NonEmbeddingParams(), mc.NumParams()
		r.Steps = r.Config.TotalSteps()
		r.Tokens = int64(r.Steps) * int64(r.Config.Train.BatchSize) * int64(mc.SeqLen)
		p.Runs = append(p.Runs, r)
	}
	p.Fingerprint = fingerprint(p.Runs)
	return p, nil
}

// load resolves a run's config from typed values: the base file with the run's axis values, or the inline
// base's keys (those the axes do not set) followed by the axis values.
func (g *Grid) load(r Run) (recipe.Config, error) {
	sets := make([]override.Set, 0, len(g.Base)+len(g.Axes))
	if g.BaseFile == "" {
		for _, s := range g.Base {
			if r.Values[s.Key] == nil {
				sets = append(sets, s)
			}
		}
	}
	for _, a := range g.Axes {
		sets = append(sets, override.Set{Key: a.Key, Value: r.Values[a.Key]})
	}
	return train.LoadSets(g.BaseFile, sets)
}

// describe lists a run's axis values as key=value, in axis order.
func (r Run) describe(axes []Axis) string {
	parts := make([]string, len(axes))
	for i, a := range axes {
		parts[i] = a.Key + "=" + override.Format(r.Values[a.Key])
	}
	return strings.Join(parts, ", ")
}

// slugPart keeps the characters of s that are safe and readable in a directory name.
func slugPart(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c < 128 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '+' || c == '-') {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// fingerprint identifies an expansion: the SHA-256 of every run's id and resolved config. Two invocations
// agree on it exactly when they would run the same runs with the same configs, whatever the grid file's
// layout; it changes when a value, the base config, or a default of this build changes.
func fingerprint(runs []Run) string {
	h := sha256.New()
	for _, r := range runs {
		b, err := r.Config.Encode()
		if err != nil {
			b = []byte(err.Error())
		}
		fmt.Fprintf(h, "%s\n%d\n", r.ID, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
