package data

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Mix is the stated mix of a corpus built from archives: caps on sources or languages, and minimum shares of
// languages, both in training tokens. It is a plan key and a command-line flag (`--min-share`, `--cap`).
// Documents over a cap are dropped in the order of their text's hash (so what is kept is a uniform sample of
// the group, the same on every run), and validation documents of a capped group are kept or dropped by the
// same hash threshold, so the validation split has the mix of the training split.
type Mix struct {
	// MinShare maps a language to the least share of training tokens it keeps: the other languages are capped,
	// in proportion to their tokens, until it has that share. DefaultMix keeps English at a fifth.
	MinShare map[string]float64 `json:"min_share,omitempty" toml:"min_share"`
	// Caps maps a source ("sotu", "chinese-poetry/songshi") or a language ("zh") to the most training tokens
	// it keeps. Caps are applied before the shares.
	Caps map[string]int64 `json:"caps,omitempty" toml:"caps"`
}

// DefaultMix keeps English at a fifth or more of the training tokens: without it, the known packages give
// about 85% Chinese.
func DefaultMix() Mix { return Mix{MinShare: map[string]float64{"en": 0.2}} }

// Validate checks the shares (in [0, 1), summing below 1) and the caps (positive).
func (m Mix) Validate() error {
	var sum float64
	for _, l := range sortedKeys(m.MinShare) {
		s := m.MinShare[l]
		if !(s >= 0 && s < 1) {
			return fmt.Errorf("mix: minimum share of %s %g: must be in [0, 1)", l, s)
		}
		sum += s
	}
	if sum >= 1 {
		return fmt.Errorf("mix: minimum shares sum to %g: must be below 1", sum)
	}
	for _, k := range sortedKeys(m.Caps) {
		if m.Caps[k] <= 0 {
			return fmt.Errorf("mix: cap of %s %d: must be positive", k, m.Caps[k])
		}
	}
	return nil
}

// checkMixKeys refuses a mix key that names nothing the archives hold: a --min-share language, or a --cap
// source or language, that no group is of (a typo such as "sout" for "sotu" would otherwise cap nothing),
// listing the languages and sources there are. The default shares (DefaultMix, what the command passes
// without --min-share) are not a user's word and may name a language the archives lack.
func checkMixKeys(groups []archGroup, mix Mix) error {
	langs, sources := map[string]bool{}, map[string]bool{}
	for _, g := range groups {
		langs[g.lang], sources[g.source] = true, true
	}
	for _, l := range sortedKeys(mix.MinShare) {
		if !langs[l] && !maps.Equal(mix.MinShare, DefaultMix().MinShare) {
			return fmt.Errorf("--min-share %s=%g: no document is in language %q (the languages: %s)", l, mix.MinShare[l], l, strings.Join(sortedKeys(langs), ", "))
		}
	}
	for _, k := range sortedKeys(mix.Caps) {
		if !langs[k] && !sources[k] {
			return fmt.Errorf("--cap %s=%d: %q is neither a source nor a language of the archives (sources: %s; languages: %s)",
				k, mix.Caps[k], k, strings.Join(sortedKeys(sources), ", "), strings.Join(sortedKeys(langs), ", "))
		}
	}
	return nil
}

// applyMix marks the documents the mix drops (docCapped): first the caps, then the minimum shares, each over
// the training documents in rank order; validation documents follow their group's rank threshold.
func applyMix(docs []archDoc, groups []archGroup, mix Mix) {
	// cap keeps the training documents of the groups in sel, in rank order, while they fit in budget tokens,
	// and drops the rest (and the validation documents above the same rank).
	capGroups := func(sel func(g archGroup) bool, budget int64) {
		var idx []int
		for i := range docs {
			if docs[i].state == docKept && sel(groups[docs[i].group]) {
				idx = append(idx, i)
			}
		}
		slices.SortFunc(idx, func(a, b int) int { return cmp.Or(cmp.Compare(docs[a].rank, docs[b].rank), cmp.Compare(a, b)) })
		var used int64
		full := false
		for _, i := range idx {
			d := &docs[i]
			if !full && !d.val {
				if used+int64(len(d.toks)) > budget {
					full = true
				} else {
					used += int64(len(d.toks))
				}
			}
			if full {
				d.state = docCapped
			}
		}
	}
	trainTokens := func(sel func(g archGroup) bool) int64 {
		var n int64
		for i := range docs {
			if docs[i].state == docKept && !docs[i].val && sel(groups[docs[i].group]) {
				n += int64(len(docs[i].toks))
			}
		}
		return n
	}
	for _, k := range sortedKeys(mix.Caps) {
		sel := func(g archGroup) bool { return g.source == k || g.lang == k }
		if trainTokens(sel) > mix.Caps[k] {
			capGroups(sel, mix.Caps[k])
		}
	}
	for _, l := range sortedKeys(mix.MinShare) {
		s := mix.MinShare[l]
		mine := trainTokens(func(g archGroup) bool { return g.lang == l })
		others := trainTokens(func(g archGroup) bool { return g.lang != l })
		if mine == 0 || float64(mine) >= s*float64(mine+others) {
			continue
		}
		budget := int64(float64(mine) * (1 - s) / s) // others ≤ mine·(1−s)/s  ⇔  mine ≥ s·(mine+others)
		langs := map[string]bool{}
		for _, g := range groups {
			if g.lang != l {
				langs[g.lang] = true
			}
		}
		for _, o := range sortedKeys(langs) {
			n := trainTokens(func(g archGroup) bool { return g.lang == o })
			capGroups(func(g archGroup) bool { return g.lang == o }, int64(float64(budget)*float64(n)/float64(others)))
		}
	}
}
