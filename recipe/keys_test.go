package recipe

import (
	"reflect"
	"strings"
	"testing"
)

// tomlKeys lists the dotted keys of a struct type's toml tags, following nested and embedded structs.
func tomlKeys(t reflect.Type, prefix string, out map[string]bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if name == "-" {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			tomlKeys(ft, prefix, out)
			continue
		}
		if name == "" {
			continue
		}
		out[prefix+name] = true
		if ft.Kind() == reflect.Struct {
			tomlKeys(ft, prefix+name+".", out)
		}
	}
}

// TestConfigKeysExist: every key of the key table is a key of Config's TOML form, so that renaming a config
// key fails here instead of silently dropping its label or role from reports.
func TestConfigKeysExist(t *testing.T) {
	keys := map[string]bool{}
	tomlKeys(reflect.TypeOf(Config{}), "", keys)
	if !keys["model.hidden_size"] || !keys["init.gamma"] {
		t.Fatalf("the TOML key walk found no model.hidden_size or init.gamma: %v", keys)
	}
	seen := map[string]bool{}
	for _, k := range configKeys {
		if !keys[k.Key] {
			t.Errorf("key table: %q is not a config key", k.Key)
		}
		if seen[k.Key] {
			t.Errorf("key table: %q listed twice", k.Key)
		}
		seen[k.Key] = true
	}
}

// TestKeyMeanings: the roles and names that group runs into arms and label them.
func TestKeyMeanings(t *testing.T) {
	for _, c := range []struct {
		key, short string
		role       KeyRole
	}{
		{"init.gamma", "γ", KeyComputes}, {"model.norm_eps", "ε", KeyComputes}, {"seed", "seed", KeyBookkeeping},
		{"data.val", "data.val", KeyBookkeeping}, {"model.hidden_size", "d", KeySize}, {"train.batch_size", "B", KeySize},
		{"optimizer.beta2", "optimizer.beta2", KeyComputes},
	} {
		info, _ := Key(c.key)
		if got := ShortName(c.key); got != c.short || info.Role != c.role {
			t.Errorf("%s: short %q role %d, want %q %d", c.key, got, info.Role, c.short, c.role)
		}
	}
	if _, r := Key("init.gamma"); r != 0 {
		t.Errorf("init.gamma ranks %d, want first", r)
	}
	if _, r := Key("optimizer.beta2"); r != len(configKeys) {
		t.Errorf("an unlisted key ranks %d, want after every listed one (%d)", r, len(configKeys))
	}
}

func TestKeyConstantsExist(t *testing.T) {
	keys := map[string]bool{}
	tomlKeys(reflect.TypeOf(Config{}), "", keys)
	for _, k := range keyConstants {
		if !keys[k] {
			t.Errorf("key constant %q is not a key of Config", k)
		}
	}
}
