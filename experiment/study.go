package experiment

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// studyTables are the tables of a plan file that the study design on top of the plan reads (package
// reproduce: [primaries]'s hypotheses, δ, priors and power, and [anchor]), kept as Parse decoded them so that
// the file is parsed once and every key is read by one owner: experiment takes [primaries]'s horizon keys
// (Horizon), the design the rest (Plan.DecodeStudy).
type studyTables struct {
	md     toml.MetaData
	tables map[string]toml.Primitive // by table name, only the tables the file has
	tiers  []toml.Primitive          // every [[tier]], in order: the keys experiment does not read are the design's
}

// The plan-file tables Parse hands on to the study design undecoded (bar [primaries]'s horizon keys, which are
// experiment's).
const (
	TablePrimaries = "primaries"
	TableAnchor    = "anchor"
)

// DecodeStudy decodes the plan file's study table named table (TablePrimaries or TableAnchor) into v, a pointer to the
// design's TOML layout of it. It reports whether the file has the table; a key of the table that neither v
// nor experiment reads is an error naming it, as Parse's own unknown keys are.
func (p *Plan) DecodeStudy(table string, v any) (bool, error) {
	prim, ok := p.study.tables[table]
	if !ok {
		return false, nil
	}
	if err := p.study.md.PrimitiveDecode(prim, v); err != nil {
		return true, fmt.Errorf("%s: %w", table, err)
	}
	var unknown []string
	for _, k := range p.study.md.Undecoded() {
		if len(k) > 1 && k[0] == table {
			unknown = append(unknown, k.String())
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return true, fmt.Errorf("unknown key %s", strings.Join(unknown, ", "))
	}
	return true, nil
}

// DecodeStudyTiers decodes the study design's keys of every [[tier]] of the plan file (those experiment does not
// read, such as reproduce's anchor_steps) into v, a pointer to a slice of the design's TOML layout of a tier:
// one element per tier, in the order of Plan.Tiers. A key of a tier that neither v nor experiment reads is an
// error naming it, as Parse's own unknown keys are.
func (p *Plan) DecodeStudyTiers(v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Slice {
		return fmt.Errorf("DecodeStudyTiers: want a pointer to a slice, have %T", v)
	}
	s := reflect.MakeSlice(rv.Elem().Type(), len(p.study.tiers), len(p.study.tiers))
	for i, prim := range p.study.tiers {
		if err := p.study.md.PrimitiveDecode(prim, s.Index(i).Addr().Interface()); err != nil {
			return fmt.Errorf("tier %d: %w", i+1, err)
		}
	}
	rv.Elem().Set(s)
	var unknown []string
	for _, k := range p.study.md.Undecoded() {
		if studyTierKey(k) {
			unknown = append(unknown, k.String())
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		design := strings.Join(tomlKeys(rv.Elem().Type().Elem()), ", ")
		return fmt.Errorf("unknown key %s (a [[tier]] takes %s, and the study design's %s)", strings.Join(unknown, ", "),
			strings.Join(tomlKeys(reflect.TypeFor[tierFile]()), ", "), cmp.Or(design, "none"))
	}
	return nil
}

// tomlKeys are the TOML keys of a struct type's fields (their toml tags), in field order.
func tomlKeys(t reflect.Type) []string {
	var keys []string
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	for i := range t.NumField() {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ","); k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	return keys
}

// HasStudy reports whether the plan file has the study table named table.
func (p *Plan) HasStudy(table string) bool {
	_, ok := p.study.tables[table]
	return ok
}
