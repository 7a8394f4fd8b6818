package data

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// MaxValDocs bounds a language's least number of validation documents (ArchiveOptions.ValDocs).
const MaxValDocs = 1_000_000

// stratifyValidation holds out at least want[lang] validation documents of each language, stratified by
// source: a source (group) with n_g of its language's n_L kept documents holds out at least ⌈want·n_g/n_L⌉,
// its documents taken in validationKey order (those ValFraction already holds out are the smallest keys, so
// they stay held out). Duplicates and held-out repeats are not counted: it runs after deduplication.
func stratifyValidation(docs []archDoc, groups []archGroup, want map[string]int) error {
	if len(want) == 0 {
		return nil
	}
	byGroup := make([][]int, len(groups))
	perLang := map[string]int{}
	for i := range docs {
		if docs[i].state != docKept {
			continue
		}
		g := docs[i].group
		byGroup[g] = append(byGroup[g], i)
		perLang[groups[g].lang]++
	}
	for _, l := range sortedKeys(want) {
		if perLang[l] == 0 {
			return fmt.Errorf("validation documents %s=%d: no document is in language %q (the languages: %s)",
				l, want[l], l, strings.Join(sortedKeys(perLang), ", "))
		}
		if want[l] > perLang[l]/2 {
			return fmt.Errorf("validation documents %s=%d: more than half of the language's %d documents", l, want[l], perLang[l])
		}
	}
	for g, idx := range byGroup {
		l := groups[g].lang
		w, ok := want[l]
		if !ok || len(idx) == 0 {
			continue
		}
		n := (w*len(idx) + perLang[l] - 1) / perLang[l] // ⌈w·n_g/n_L⌉
		slices.SortFunc(idx, func(a, b int) int { return cmp.Or(cmp.Compare(docs[a].vkey, docs[b].vkey), cmp.Compare(a, b)) })
		for _, i := range idx[:n] {
			docs[i].val = true
		}
	}
	return nil
}

// checkValidationDocs refuses a build whose mix left a language fewer validation documents than want asks
// (the mix drops a capped language's validation documents with its training documents).
func checkValidationDocs(docs []archDoc, groups []archGroup, want map[string]int) error {
	if len(want) == 0 {
		return nil
	}
	have := map[string]int{}
	for i := range docs {
		if docs[i].state == docKept && docs[i].val {
			have[groups[docs[i].group].lang]++
		}
	}
	for _, l := range sortedKeys(want) {
		if have[l] < want[l] {
			return fmt.Errorf("validation documents %s=%d: the mix leaves %d (a cap or a share dropped the rest); ask for more, or cap less", l, want[l], have[l])
		}
	}
	return nil
}
