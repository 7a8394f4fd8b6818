package experiment

import (
	"fmt"
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

// HasStudy reports whether the plan file has the study table named table.
func (p *Plan) HasStudy(table string) bool {
	_, ok := p.study.tables[table]
	return ok
}
