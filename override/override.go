// Package override is the one override language of run configs, plans, grids and every command's --set: dotted
// TOML keys with TOML values ("model.norm_eps=1e-12", "model.qk_norm=true", "model.attn_gate=elementwise"),
// parsed once into typed values. A bare word that is not a TOML value is a string, so `--set
// model.attn_gate=none` needs no quotes. A key without a dot that is not a top-level key of the destination
// names a key of its default section (Qualify: "norm_eps" is "model.norm_eps" in a run config). Whoever holds an
// override holds its typed value: nothing downstream re-decides quoting from text.
package override

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// Set is one override: a dotted config key and its value as TOML decodes it (int64, float64, string, bool,
// or a list or table of those).
type Set struct {
	Key   string
	Value any
}

// Parse reads "key=value": value in TOML syntax, or a bare word taken as a string. The error names the text.
func Parse(kv string) (Set, error) {
	k, v, ok := strings.Cut(kv, "=")
	k, v = strings.TrimSpace(k), strings.TrimSpace(v)
	if !ok || k == "" {
		return Set{}, fmt.Errorf("override %q: want key=value", kv)
	}
	if err := CheckDepth([]byte("v = " + v)); err != nil {
		return Set{}, fmt.Errorf("override %q: %w", k, err)
	}
	var doc map[string]any
	if _, err := toml.Decode("v = "+v, &doc); err != nil {
		return Set{Key: k, Value: v}, nil // a bare word: a string
	}
	return Set{Key: k, Value: doc["v"]}, nil
}

// Qualify gives each key without a dot its section: a key that is a top-level key of dst (a struct, or a pointer
// to one, with toml tags; "seed" of a run config) stays as it is, any other is a key of section (so "norm_eps"
// becomes "model.norm_eps"). Dotted keys are kept. This is the one rule by which every command's --set reads a
// short key.
func Qualify(sets []Set, dst any, section string) []Set {
	t := reflect.TypeOf(dst)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	top := map[string]bool{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ",")
		if name == "" {
			name = t.Field(i).Name
		}
		top[name] = true
	}
	out := make([]Set, len(sets))
	for i, s := range sets {
		if !strings.Contains(s.Key, ".") && !top[s.Key] {
			s.Key = section + "." + s.Key
		}
		out[i] = s
	}
	return out
}

// ParseAll parses each of kvs (see Parse).
func ParseAll(kvs []string) ([]Set, error) {
	out := make([]Set, 0, len(kvs))
	for _, kv := range kvs {
		s, err := Parse(kv)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// String is "key=value" with the value in TOML syntax: what Parse reads back to the same Set.
func (s Set) String() string {
	v, err := Value(s.Value)
	if err != nil {
		return s.Key + "=" + fmt.Sprint(s.Value)
	}
	return s.Key + "=" + v
}

// Value writes v as a TOML value.
func Value(v any) (string, error) {
	if x, ok := v.(int); ok {
		v = int64(x)
	}
	if x, ok := v.(float64); ok && (math.IsNaN(x) || math.IsInf(x, 0)) {
		return "", fmt.Errorf("value %v is not finite", x)
	}
	var b strings.Builder
	if err := toml.NewEncoder(&b).Encode(map[string]any{"v": v}); err != nil {
		return "", err
	}
	s, ok := strings.CutPrefix(strings.TrimSpace(b.String()), "v = ")
	if !ok {
		return "", fmt.Errorf("value %v cannot be written as a key=value override", v)
	}
	return s, nil
}

// Format is the canonical text of a scalar value, used in run ids, hashes, labels and tables: integers in
// decimal, floats in Go's shortest 'g' form (so 1 and 1.0 read the same), strings as they are.
func Format(v any) string {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

// Equal reports whether two values are the same value: numbers by value whatever their TOML type (1 = 1.0),
// others by their canonical text.
func Equal(a, b any) bool {
	fa, aNum := number(a)
	fb, bNum := number(b)
	if aNum && bNum {
		return fa == fb
	}
	if aNum != bNum {
		return false
	}
	return Format(a) == Format(b)
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// Document writes sets as a TOML document of dotted keys, one per line, in their order; a later set of a key
// replaces an earlier one.
func Document(sets []Set) (string, error) {
	var b strings.Builder
	seen := map[string]int{}
	var lines []string
	for _, s := range sets {
		v, err := Value(s.Value)
		if err != nil {
			return "", fmt.Errorf("%s: %w", s.Key, err)
		}
		line := fmt.Sprintf("%s = %s\n", s.Key, v)
		if i, ok := seen[s.Key]; ok {
			lines[i] = line
			continue
		}
		seen[s.Key] = len(lines)
		lines = append(lines, line)
	}
	for _, l := range lines {
		b.WriteString(l)
	}
	return b.String(), nil
}

// ErrUnknownKey is wrapped by Apply's error for a key its destination has no field for.
var ErrUnknownKey = errors.New("unknown key")

// Flatten turns a decoded TOML table into dotted keys and their values (lists are values).
func Flatten(m map[string]any) []Set {
	var out []Set
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if sub, ok := v.(map[string]any); ok {
			for k, vv := range sub {
				if prefix != "" {
					k = prefix + "." + k
				}
				walk(k, vv)
			}
			return
		}
		out = append(out, Set{Key: prefix, Value: v})
	}
	walk("", m)
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
