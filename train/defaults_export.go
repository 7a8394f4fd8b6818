package train

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train/rundir"
)

// DefaultsFile is where the repository keeps the trainer's defaults for the PyTorch trainer, relative to its
// root. The Python side reads this file instead of keeping its own copy of recipe.Default(); a test in this package
// fails when the committed file differs from what DefaultsJSON writes.
const DefaultsFile = "python/smallinit_torch/train_defaults.json"

// DefaultsDoc is the JSON document of DefaultsFile: the run config's defaults under its TOML keys, the schedule
// kinds, the metrics.jsonl keys in their order, and learning rates of recipe.Schedule.LR that a second
// implementation of the schedule must reproduce.
type DefaultsDoc struct {
	About string         `json:"about"`
	Run   map[string]any `json:"run"`
	// Types gives each run key's kind ("int", "float", "bool", "string", "list", "table"), section by section
	// ("" for the top-level keys), since JSON cannot tell 1 from 1.0.
	Types         map[string]map[string]string `json:"types"`
	Presets       map[string]map[string]any    `json:"presets"`
	ScheduleKinds []string                     `json:"schedule_kinds"`
	MetricKeys    []string                     `json:"metric_keys"`
	LRExamples    []LRExample                  `json:"lr_examples"`
}

// LRExample is one schedule and the learning rate recipe.Schedule.LR gives at each of its steps.
type LRExample struct {
	Schedule recipe.Schedule `json:"schedule"`
	LR       []float64       `json:"lr"`
}

// scheduleKinds lists every kind recipe.Schedule.Validate accepts.
var scheduleKinds = []string{recipe.ScheduleCosine, recipe.ScheduleWSD, recipe.ScheduleConstant}

// Defaults returns the document DefaultsJSON encodes.
func Defaults() (DefaultsDoc, error) {
	run := nest(override.Struct(recipe.Default()))
	doc := DefaultsDoc{
		About: "Written by Go's train package (train/defaults_export.go) from recipe.Default(); do not edit: " +
			"regenerate with go test ./train -run TestDefaultsFileUpToDate -update-defaults",
		Run: run, Types: map[string]map[string]string{}, ScheduleKinds: scheduleKinds, MetricKeys: metricKeys(),
	}
	keyTypes(reflect.TypeOf(recipe.Config{}), "", doc.Types)
	doc.Presets = map[string]map[string]any{}
	// Every preset Go's trainer accepts (arch.LookupPreset): the small ones and the study's scales.
	for _, p := range append(arch.Presets(), arch.ScalePresets()...) {
		c := recipe.Default()
		c.Model = recipe.ModelConfig{Preset: p.Name, Config: p.Config}
		m, _ := nest(override.Struct(c))["model"].(map[string]any)
		doc.Presets[p.Name] = m
	}
	for _, s := range []recipe.Schedule{
		{Kind: recipe.ScheduleCosine, PeakLR: 1e-2, Warmup: 3, MinRatio: 0.1, Total: 12},
		{Kind: recipe.ScheduleCosine, PeakLR: 3e-3, Warmup: 0, MinRatio: 0, Total: 2},
		{Kind: recipe.ScheduleWSD, PeakLR: 1e-2, Warmup: 2, MinRatio: 0.1, DecaySteps: 4, Total: 12},
		{Kind: recipe.ScheduleWSD, PeakLR: 1e-2, Warmup: 2, MinRatio: 0.1, DecaySteps: 0, Total: 6},
		{Kind: recipe.ScheduleConstant, PeakLR: 5e-3, Warmup: 4, MinRatio: 0.1, Total: 8},
	} {
		if err := s.Validate(); err != nil {
			return DefaultsDoc{}, err
		}
		ex := LRExample{Schedule: s}
		for step := 0; step < s.Total; step++ {
			ex.LR = append(ex.LR, s.LR(step))
		}
		doc.LRExamples = append(doc.LRExamples, ex)
	}
	return doc, nil
}

// nest turns dotted keys into the nested tables of their TOML form (what decoding config.toml into a map gives).
func nest(sets []override.Set) map[string]any {
	out := map[string]any{}
	for _, s := range sets {
		parts := strings.Split(s.Key, ".")
		m := out
		for _, p := range parts[:len(parts)-1] {
			sub, ok := m[p].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[p] = sub
			}
			m = sub
		}
		m[parts[len(parts)-1]] = s.Value
	}
	return out
}

// keyTypes records the kind of every TOML key of struct type t under section (embedded structs flattened,
// struct-valued keys recursed into as their own section).
func keyTypes(t reflect.Type, section string, out map[string]map[string]string) {
	if out[section] == nil {
		out[section] = map[string]string{}
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if f.Anonymous && name == "" {
			keyTypes(f.Type, section, out)
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		kind := ""
		switch f.Type.Kind() {
		case reflect.Int, reflect.Int64, reflect.Uint64:
			kind = "int"
		case reflect.Float64:
			kind = "float"
		case reflect.Bool:
			kind = "bool"
		case reflect.String:
			kind = "string"
		case reflect.Slice:
			kind = "list"
		case reflect.Map:
			kind = "table"
		case reflect.Struct:
			if section == "" {
				keyTypes(f.Type, name, out)
				continue
			}
			kind = "table"
		}
		out[section][name] = kind
	}
}

// metricKeys returns the JSON keys of rundir.Metrics, in the order a metrics.jsonl line carries them.
func metricKeys() []string {
	t := reflect.TypeOf(rundir.Metrics{})
	keys := make([]string, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		keys = append(keys, name)
	}
	return keys
}

// DefaultsJSON returns DefaultsFile's content: Defaults as indented JSON with a final newline.
func DefaultsJSON() ([]byte, error) {
	doc, err := Defaults()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetIndent("", "  ")
	if err := e.Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
