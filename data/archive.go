package data

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync/atomic"

	"github.com/smallinit/smallinit/internal/inputfile"
)

// MaxMember is the largest archive member PrepareArchives reads: 64 MiB, as MaxDocument. A member is read
// whole (a JSON file is parsed at once), so this bounds memory; a header that claims more is refused before
// anything of the member is read. The largest member of the known packages is 3.5 MB.
const MaxMember = MaxDocument

// MaxMembers bounds the members of one archive (chinese-poetry, the largest known package, holds 2,000).
const MaxMembers = 100_000

// archiveReader streams the members of an npm package tarball (a gzip-compressed tar) without unpacking it.
// It refuses what a package never holds and what could cost unbounded memory or escape a directory: links,
// devices, FIFOs, names that climb out of the package (an absolute name or a ".." element), members named
// twice, members over MaxMember, more than MaxMembers members, and gzip streams that expand past MaxExpansion.
// Every error names the archive and, where there is one, the member.
type archiveReader struct {
	path  string
	f     *os.File
	read  atomic.Int64 // compressed bytes read, for progress and the expansion guard
	gz    *gzip.Reader
	tr    *tar.Reader
	seen  map[string]bool
	count int
	cur   string // the member Next returned last
}

// archiveMember is one regular file of an archive: its name inside the package (the npm "package/" prefix
// removed) and its size as the header states it.
type archiveMember struct {
	Name string
	Size int64
}

// openArchive opens the .tgz at path. A FIFO, a device or a directory is refused before it is opened.
func openArchive(path string) (*archiveReader, error) {
	f, err := inputfile.Open(path, inputfile.NoLimit)
	if err != nil {
		return nil, fmt.Errorf("archive %s: %w", path, err)
	}
	a := &archiveReader{path: path, f: f, seen: map[string]bool{}}
	gz, err := gzip.NewReader(bufio.NewReaderSize(countingReader{r: f, n: &a.read}, 1<<16))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("archive %s: not a gzip-compressed tarball: %w", path, err)
	}
	gz.Multistream(false)
	a.gz = gz
	a.tr = tar.NewReader(&expansionGuard{r: gz, path: path, compressed: &a.read})
	return a, nil
}

// Offset is how many compressed bytes have been read so far, for progress reports.
func (a *archiveReader) Offset() int64 { return a.read.Load() }

// Close closes the archive file.
func (a *archiveReader) Close() error { return a.f.Close() }

// Next returns the next regular member, skipping directory entries, or io.EOF after the last. The member's
// bytes are read with ReadMember.
func (a *archiveReader) Next() (archiveMember, error) {
	for {
		h, err := a.tr.Next()
		if err == io.EOF {
			return archiveMember{}, io.EOF
		}
		if err != nil {
			return archiveMember{}, a.errAfter(err)
		}
		a.count++
		if a.count > MaxMembers {
			return archiveMember{}, fmt.Errorf("archive %s: more than %d members: not a package this program reads", a.path, MaxMembers)
		}
		name, err := memberName(h.Name, h.Typeflag == tar.TypeDir)
		if err != nil {
			return archiveMember{}, fmt.Errorf("archive %s: member %q: %w", a.path, h.Name, err)
		}
		switch h.Typeflag {
		case tar.TypeReg, tar.TypeRegA: // TypeRegA is the pre-POSIX spelling of a regular file
		case tar.TypeDir:
			continue
		case tar.TypeSymlink:
			return archiveMember{}, fmt.Errorf("archive %s: member %s: a symbolic link (to %q): packages hold regular files only", a.path, h.Name, h.Linkname)
		case tar.TypeLink:
			return archiveMember{}, fmt.Errorf("archive %s: member %s: a hard link (to %q): packages hold regular files only", a.path, h.Name, h.Linkname)
		default:
			return archiveMember{}, fmt.Errorf("archive %s: member %s: type %q is not a regular file: packages hold regular files only", a.path, h.Name, h.Typeflag)
		}
		if h.Size < 0 || h.Size > MaxMember {
			return archiveMember{}, fmt.Errorf("archive %s: member %s: claims %s, over the %s a member may be", a.path, h.Name, inputfile.Bytes(h.Size), inputfile.Bytes(MaxMember))
		}
		if a.seen[name] {
			return archiveMember{}, fmt.Errorf("archive %s: member %s: given twice", a.path, h.Name)
		}
		a.seen[name] = true
		a.cur = h.Name
		return archiveMember{Name: name, Size: h.Size}, nil
	}
}

// ReadMember reads the whole of the member Next returned last (its size was checked by Next). The buffer grows
// with the bytes that arrive, so a header that claims more than the archive holds costs no more memory than
// what it does hold.
func (a *archiveReader) ReadMember(m archiveMember) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(a.tr, m.Size))
	if err == nil && int64(len(b)) < m.Size {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, fmt.Errorf("archive %s: member %s: %w", a.path, a.cur, a.truncated(err))
	}
	return b, nil
}

// errAfter explains an error between members: a truncated archive names the last member read.
func (a *archiveReader) errAfter(err error) error {
	where := "at the start"
	if a.cur != "" {
		where = "after member " + a.cur
	}
	return fmt.Errorf("archive %s: %s: %w", a.path, where, a.truncated(err))
}

// truncated rewords an unexpected end of the compressed stream.
func (a *archiveReader) truncated(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("the archive ends early (truncated download?): %w", err)
	}
	return err
}

// memberName returns a member's name inside the package: the tar name without its top directory (npm packs
// every file under "package/"). A name that is absolute, climbs with "..", or has no top directory is refused,
// so no member can name anything outside the package, whatever a caller later does with the name. The top
// directory's own entry (dir) is allowed and named "".
func memberName(name string, dir bool) (string, error) {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") || strings.ContainsRune(name, 0) {
		return "", errors.New("not a relative slash-separated name")
	}
	for _, e := range strings.Split(name, "/") {
		if e == ".." {
			return "", errors.New(`a name with ".." could point outside the package`)
		}
	}
	clean := path.Clean(name)
	i := strings.IndexByte(clean, '/')
	if i < 0 {
		if dir && clean != "." {
			return "", nil
		}
		return "", errors.New("outside the package's top directory")
	}
	return clean[i+1:], nil
}
