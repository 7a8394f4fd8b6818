package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"

	"github.com/smallinit/smallinit/internal/inputfile"
)

// Input formats, named by the file extension that selects them. Compressed variants are gzip streams of the
// uncompressed format.
const (
	FormatText      = "txt"      // plain text; documents per InputOptions.DocSep
	FormatTextGzip  = "txt.gz"   // gzip-compressed plain text
	FormatJSONL     = "jsonl"    // JSON lines: one object per line, the text in a string field
	FormatJSONLGzip = "jsonl.gz" // gzip-compressed JSON lines
	FormatParquet   = "parquet"  // Parquet (the format of Hugging Face datasets): the text in a string column
)

// formats lists the supported formats, longest extension first so that ".txt.gz" wins over ".gz".
var formats = []string{FormatJSONLGzip, FormatTextGzip, FormatParquet, FormatJSONL, FormatText}

// Document separators for plain-text inputs (InputOptions.DocSep).
const (
	// DocSepFile makes a whole .txt file one document, verbatim. The file is held in memory while it is read.
	DocSepFile = "file"
	// DocSepBlank cuts a .txt file into documents at blank lines: a document is a maximal run of lines that are
	// not blank (a blank line is empty or whitespace only), verbatim, without its final line break. The blank
	// lines themselves belong to no document.
	DocSepBlank = "blank"
	// DocSepLine makes every line of a .txt file that is not blank one document, without its line break.
	DocSepLine = "line"
)

// DefaultTextColumn is the JSON field or Parquet column that holds a document's text unless
// InputOptions.TextColumn says otherwise: "text", as in most Hugging Face datasets.
const DefaultTextColumn = "text"

// SupportedExtensions returns the file extensions that PrepareFiles and OpenInput read, for messages such as
// "unknown extension, want one of ...".
// ErrNoColumn is wrapped by the error for a JSON-lines or Parquet file without the text column asked for.
var ErrNoColumn = errors.New("no column")

func SupportedExtensions() []string {
	return []string{"." + FormatText, "." + FormatTextGzip, "." + FormatJSONL, "." + FormatJSONLGzip, "." + FormatParquet}
}

// FormatOf returns the input format of a file name from its extension (case-insensitive), or an error naming the
// supported extensions.
func FormatOf(path string) (string, error) {
	name := strings.ToLower(filepath.Base(path))
	for _, f := range formats {
		if strings.HasSuffix(name, "."+f) && len(name) > len(f)+1 {
			return f, nil
		}
	}
	return "", fmt.Errorf("input %s: unknown file type (supported: %s)", path, strings.Join(SupportedExtensions(), ", "))
}

// InputFile is one file to read, found by ExpandInputs.
type InputFile struct {
	// Path is the file's path: an input as given, or a directory input joined with the file's path inside it.
	Path string
	// Key names the file for the validation split: the base name of a file given directly, or the slash-separated
	// path relative to the directory it was found in. It does not depend on where the corpus lives, so the
	// split is the same on every machine; a file has the same key given directly or inside its directory.
	Key string
	// Format is the file's format, one of the Format constants.
	Format string
	// Size is the file's size on disk in bytes (compressed, for gzip files), for progress reports.
	Size int64
}

// ExpandInputs turns the inputs of `smallinit data prepare --in` into the list of files to read: a file stands
// for itself, a directory for every file below it (recursively, sorted by path, skipping hidden files and
// directories, whose names start with "."). A file with an unsupported extension is an error, whether given
// directly or found in a directory, so that nothing is silently left out; so are a directory with no files,
// and a file given twice.
func ExpandInputs(paths []string) ([]InputFile, error) {
	if len(paths) == 0 {
		return nil, errors.New("no inputs")
	}
	var files []InputFile
	seen := map[string]string{}
	add := func(path, key string) error {
		format, err := FormatOf(path)
		if err != nil {
			return err
		}
		st, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("input: %w", err)
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("input %s: not a regular file", path)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return fmt.Errorf("input %s: %w", path, err)
		}
		if prev, dup := seen[abs]; dup {
			return fmt.Errorf("input %s: the same file as %s, given twice", path, prev)
		}
		seen[abs] = path
		files = append(files, InputFile{Path: path, Key: key, Format: format, Size: st.Size()})
		return nil
	}
	for _, arg := range paths {
		st, err := os.Stat(arg)
		if err != nil {
			return nil, fmt.Errorf("input: %w", err)
		}
		if !st.IsDir() {
			if err := add(arg, filepath.Base(arg)); err != nil {
				return nil, err
			}
			continue
		}
		var found []string // slash-separated paths relative to arg
		err = filepath.WalkDir(arg, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return fmt.Errorf("input %s: %w", p, err)
			}
			if p == arg {
				return nil
			}
			if strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				return nil
			}
			rel, err := filepath.Rel(arg, p)
			if err != nil {
				return fmt.Errorf("input %s: %w", p, err)
			}
			found = append(found, filepath.ToSlash(rel))
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("input %s: the directory holds no files (supported: %s)", arg, strings.Join(SupportedExtensions(), ", "))
		}
		sort.Strings(found)
		for _, rel := range found {
			if err := add(filepath.Join(arg, filepath.FromSlash(rel)), rel); err != nil {
				return nil, err
			}
		}
	}
	return files, nil
}

// formatOptions are the options of PrepareOptions that apply to some input formats only, as `smallinit data
// prepare` names them: a row's option does nothing to an input of another format, so PrepareFiles refuses it
// set when no input has one of its formats (checkFormatOptions). A new per-format option is a row here.
var formatOptions = []struct {
	flag    string
	formats []string
	given   func(PrepareOptions) (value string, ok bool) // the option's value, and whether it is set (not the default)
}{
	{"--doc-sep", []string{FormatText, FormatTextGzip}, func(o PrepareOptions) (string, bool) {
		return o.DocSep, o.DocSep != "" && o.DocSep != DocSepFile
	}},
	{"--text-column", []string{FormatJSONL, FormatJSONLGzip, FormatParquet}, func(o PrepareOptions) (string, bool) {
		return o.TextColumn, o.TextColumn != "" && o.TextColumn != DefaultTextColumn
	}},
}

// checkFormatOptions refuses an option of formatOptions that is set while no input file has one of its
// formats, naming the option, its value, the formats it reads and the inputs given.
func checkFormatOptions(files []InputFile, opt PrepareOptions) error {
	for _, o := range formatOptions {
		v, ok := o.given(opt)
		if !ok || slices.ContainsFunc(files, func(f InputFile) bool { return slices.Contains(o.formats, f.Format) }) {
			continue
		}
		exts := make([]string, len(o.formats))
		for i, f := range o.formats {
			exts[i] = "." + f
		}
		var ins []string
		for i, f := range files {
			if i == 3 {
				ins = append(ins, fmt.Sprintf("... (%d files in all)", len(files)))
				break
			}
			ins = append(ins, fmt.Sprintf("%s is .%s", f.Path, f.Format))
		}
		return fmt.Errorf("%s %s: only for %s inputs, and no input is one (%s): here it would do nothing (leave it out)",
			o.flag, v, strings.Join(exts, ", "), strings.Join(ins, "; "))
	}
	return nil
}

// InputOptions says how to cut an input into documents.
type InputOptions struct {
	// TextColumn is the JSON field or Parquet column holding the text; empty means DefaultTextColumn.
	TextColumn string
	// DocSep is how plain-text files are cut into documents: DocSepFile (the default, when empty), DocSepBlank
	// or DocSepLine.
	DocSep string
}

// Document is one document read from an input.
type Document struct {
	// Text is the document's text: verbatim bytes for plain text, the decoded string for JSON lines and Parquet.
	Text string
	// Index is the position of the record in its file, from 0, counting every record (bad ones included): the
	// JSON line among the non-blank lines, the Parquet row in the file, the plain-text document. It does not
	// change when bad records are skipped, so it is the stable part of the validation split's key.
	Index int64
	// Where locates the record for messages: "line 7", "row group 2 row 130", or "" for a whole file.
	Where string
	// Replaced reports that the record's bytes were not valid UTF-8 and JSON decoding replaced the invalid
	// bytes with U+FFFD (plain text and Parquet strings are kept byte for byte and never replaced).
	Replaced bool
}

// BadRecordError reports a malformed record (an invalid JSON line, a line or row without a string text):
// the input is still readable past it, and PrepareFiles with SkipBad counts and skips it. Any other error
// of an InputReader is fatal to the input.
type BadRecordError struct {
	Path  string // the input file
	Where string // "line 3", "row group 0 row 5"
	Err   error  // what is wrong
}

// Error names the file and the record: "read a.jsonl line 3: invalid JSON: ...".
func (e *BadRecordError) Error() string { return fmt.Sprintf("read %s %s: %v", e.Path, e.Where, e.Err) }

// Unwrap returns the underlying problem.
func (e *BadRecordError) Unwrap() error { return e.Err }

// MaxDocument is the longest document (and the longest line of a JSON-lines or line-per-document file) an input
// may hold: 64 MiB. A plain-text file read as one document must fit in it (split a larger one into documents at
// blank lines or at lines); a longer JSON line is a malformed record. It bounds the memory of reading any input,
// a decompression bomb included.
const MaxDocument = 64 << 20

// MaxExpansion bounds how many times its compressed size a gzip input may expand to (beyond its first MiB):
// text compresses 3-10x, gzip's own limit is about 1032x, so an input past 200x is refused as a likely
// decompression bomb.
const MaxExpansion = 200

// InputReader streams the documents of one input file, holding at most one document (one Parquet page) in
// memory, except that a plain-text file read with DocSepFile is one document and is read whole.
type InputReader struct {
	path    string
	format  string
	opt     InputOptions
	size    int64
	f       *os.File
	ra      io.ReaderAt  // what Parquet reads: f, or the bytes of an archive member (openParquetBytes)
	read    atomic.Int64 // bytes read from the file on disk, for Offset
	gz      *gzip.Reader
	br      *bufio.Reader
	linebuf []byte
	line    int64 // lines consumed
	index   int64 // records returned so far
	eof     bool  // the input stream is exhausted
	done    bool  // Next has returned io.EOF
	pq      *parquetSource
}

// OpenInput opens path (format by extension, see FormatOf) for reading documents. For Parquet it reads the file
// footer and checks that the text column exists and holds strings, so a missing column is reported here.
func OpenInput(path string, opt InputOptions) (*InputReader, error) {
	format, err := FormatOf(path)
	if err != nil {
		return nil, err
	}
	if opt.TextColumn == "" {
		opt.TextColumn = DefaultTextColumn
	}
	switch opt.DocSep {
	case "":
		opt.DocSep = DocSepFile
	case DocSepFile, DocSepBlank, DocSepLine:
	default:
		return nil, fmt.Errorf("document separator %q: want %q, %q or %q", opt.DocSep, DocSepFile, DocSepBlank, DocSepLine)
	}
	f, err := inputfile.Open(path, inputfile.NoLimit)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("read %s: is a directory", path)
	}
	r := &InputReader{path: path, format: format, opt: opt, size: st.Size(), f: f, ra: f}
	if format == FormatParquet {
		if r.pq, err = openParquet(r, opt.TextColumn); err != nil {
			f.Close()
			return nil, err
		}
		return r, nil
	}
	var src io.Reader = bufio.NewReaderSize(countingReader{f, &r.read}, 1<<16)
	if format == FormatTextGzip || format == FormatJSONLGzip {
		if r.gz, err = gzip.NewReader(src); err != nil {
			f.Close()
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		src = &expansionGuard{r: r.gz, path: path, compressed: &r.read}
	}
	r.br = bufio.NewReaderSize(src, 1<<20)
	return r, nil
}

// Path returns the file the reader reads.
func (r *InputReader) Path() string { return r.path }

// Format returns the input's format, one of the Format constants.
func (r *InputReader) Format() string { return r.format }

// Offset returns how many bytes of the file on disk have been read, at most its size, and the size once Next
// has returned io.EOF: a progress measure that works for compressed files too (and for Parquet, where the
// other columns are never read).
func (r *InputReader) Offset() int64 {
	if r.done {
		return r.size
	}
	return min(r.read.Load(), r.size)
}

// Close closes the file.
func (r *InputReader) Close() error {
	if r.pq != nil {
		r.pq.close()
	}
	if r.f == nil {
		return nil
	}
	return r.f.Close()
}

// Next returns the next document, io.EOF after the last, a *BadRecordError for a malformed record (the reader
// can go on), or another error, which ends the input. Every error names the file and, where there is one, the
// line or row.
func (r *InputReader) Next() (Document, error) {
	d, err := r.next()
	if err == io.EOF {
		r.done = true
	}
	return d, err
}

func (r *InputReader) next() (Document, error) {
	switch r.format {
	case FormatParquet:
		return r.pq.next()
	case FormatJSONL, FormatJSONLGzip:
		return r.nextJSON()
	}
	switch r.opt.DocSep {
	case DocSepBlank:
		return r.nextBlock()
	case DocSepLine:
		return r.nextLine()
	}
	if r.eof {
		return Document{}, io.EOF
	}
	r.eof = true
	var sb strings.Builder
	if r.gz == nil {
		if r.size > MaxDocument {
			return Document{}, r.tooLong("the whole file", r.size)
		}
		sb.Grow(int(r.size)) // read once into a buffer of the right size, not doubled up to it
	}
	n, err := io.Copy(&sb, io.LimitReader(r.br, MaxDocument+1))
	if err != nil {
		return Document{}, fmt.Errorf("read %s: %w", r.path, err)
	}
	if n > MaxDocument {
		return Document{}, r.tooLong("the whole file", n)
	}
	r.index++
	return Document{Text: sb.String(), Index: 0}, nil
}

// readLine returns the next line including its line break ("" with io.EOF at the end of the input). The
// returned slice is valid until the next call.
func (r *InputReader) readLine() ([]byte, error) {
	if r.eof {
		return nil, io.EOF
	}
	r.linebuf = r.linebuf[:0]
	long := int64(0) // bytes of an over-long line dropped so far
	for {
		chunk, err := r.br.ReadSlice('\n')
		if long > 0 || len(r.linebuf)+len(chunk) > MaxDocument {
			long += int64(len(chunk)) // the rest of the line is read and dropped, never held
			if long == int64(len(chunk)) {
				long += int64(len(r.linebuf))
				r.linebuf = r.linebuf[:0]
			}
			if err == nil || err == io.EOF {
				r.line++
				r.eof = err == io.EOF
				return nil, &BadRecordError{Path: r.path, Where: fmt.Sprintf("line %d", r.line),
					Err: fmt.Errorf("%s long, more than the %s a line may be", inputfile.Bytes(long), inputfile.Bytes(MaxDocument))}
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
		}
		r.linebuf = append(r.linebuf, chunk...)
		switch {
		case err == nil:
			r.line++
			return r.linebuf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF:
			r.eof = true
			if len(r.linebuf) == 0 {
				return nil, io.EOF
			}
			r.line++
			return r.linebuf, nil
		default:
			return nil, fmt.Errorf("read %s line %d: %w", r.path, r.line+1, err)
		}
	}
}

func isBlank(line []byte) bool { return len(bytes.TrimSpace(line)) == 0 }

// trimEOL removes a final "\n" or "\r\n".
func trimEOL(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r"))
}

// nextLine returns the next non-blank line as a document (DocSepLine).
func (r *InputReader) nextLine() (Document, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			return Document{}, err
		}
		if isBlank(line) {
			continue
		}
		d := Document{Text: string(trimEOL(line)), Index: r.index, Where: fmt.Sprintf("line %d", r.line)}
		r.index++
		return d, nil
	}
}

// nextBlock returns the next run of non-blank lines as a document (DocSepBlank).
func (r *InputReader) nextBlock() (Document, error) {
	var sb strings.Builder
	var first int64
	for {
		line, err := r.readLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Document{}, err
		}
		if isBlank(line) {
			if sb.Len() > 0 {
				break
			}
			continue
		}
		if sb.Len() == 0 {
			first = r.line
		}
		if sb.Len()+len(line) > MaxDocument {
			return Document{}, r.tooLong(fmt.Sprintf("the paragraph from line %d", first), int64(sb.Len()+len(line)))
		}
		sb.Write(line)
	}
	if sb.Len() == 0 {
		return Document{}, io.EOF
	}
	text := sb.String()
	text = strings.TrimSuffix(strings.TrimSuffix(text, "\n"), "\r")
	d := Document{Text: text, Index: r.index, Where: fmt.Sprintf("line %d", first)}
	r.index++
	return d, nil
}

// nextJSON returns the text of the next non-blank JSON line.
func (r *InputReader) nextJSON() (Document, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			return Document{}, err
		}
		if r.line == 1 {
			line = bytes.TrimPrefix(line, []byte("\uFEFF")) // a byte order mark
		}
		if isBlank(line) {
			continue
		}
		where := fmt.Sprintf("line %d", r.line)
		idx := r.index
		r.index++
		text, perr := jsonText(line, r.opt.TextColumn)
		if perr != nil {
			return Document{}, &BadRecordError{Path: r.path, Where: where, Err: perr}
		}
		return Document{Text: text, Index: idx, Where: where, Replaced: !utf8.Valid(line)}, nil
	}
}

// jsonText extracts the string field col from one JSON line. (Decoding into map[string]any decodes the text
// once; decoding into json.RawMessage and then the string is three times slower.)
func jsonText(line []byte, col string) (string, error) {
	trimmed := bytes.TrimSpace(line)
	if trimmed[0] != '{' {
		var v any
		if err := json.Unmarshal(trimmed, &v); err != nil {
			return "", fmt.Errorf("invalid JSON: %w", err)
		}
		return "", fmt.Errorf("the line is %s, want a JSON object with a %q field", jsonKind(v), col)
	}
	var obj map[string]any
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		return "", fmt.Errorf("invalid JSON: %w", err)
	}
	v, ok := obj[col]
	if !ok {
		return "", &noFieldError{col: col, obj: obj}
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("field %q is %s, want a string", col, jsonKind(v))
	}
	return s, nil
}

// noFieldError is a JSON line without the text column: it names the fields the line has, and is ErrNoColumn
// (errors.Is), so that the command names its --text-column.
type noFieldError struct {
	col string
	obj map[string]any
}

func (e *noFieldError) Error() string {
	keys := sortedKeys(e.obj)
	if len(keys) == 0 {
		return fmt.Sprintf("no %q field (the object has no fields)", e.col)
	}
	if len(keys) > 10 {
		keys = append(keys[:10], fmt.Sprintf("... (%d in all)", len(e.obj)))
	}
	return fmt.Sprintf("no %q field (the object has: %s)", e.col, strings.Join(keys, ", "))
}

func (e *noFieldError) Is(target error) bool { return target == ErrNoColumn }

// jsonKind names the kind of a decoded JSON value for messages.
func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "a number"
}

// tooLong is the error for a document over MaxDocument.
func (r *InputReader) tooLong(what string, n int64) error {
	return fmt.Errorf("read %s: %s is one document of %s or more, over the %s a document may be: split it into documents at blank lines or at lines",
		r.path, what, inputfile.Bytes(n), inputfile.Bytes(MaxDocument))
}

// expansionGuard fails a gzip stream that expands past MaxExpansion times the compressed bytes read so far.
type expansionGuard struct {
	r          io.Reader
	path       string
	compressed *atomic.Int64
	expanded   int64
}

func (g *expansionGuard) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	g.expanded += int64(n)
	if c := g.compressed.Load(); g.expanded > 1<<20 && g.expanded > MaxExpansion*c {
		return n, fmt.Errorf("read %s: %s of compressed data expand to %s or more, over %dx: refused as a likely decompression bomb",
			g.path, inputfile.Bytes(c), inputfile.Bytes(g.expanded), MaxExpansion)
	}
	return n, err
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// countingReaderAt counts the bytes read through it (for Parquet, which reads at offsets).
type countingReaderAt struct {
	r io.ReaderAt
	n *atomic.Int64
}

func (c countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

// parquetSource reads one string column of a Parquet file, one page at a time.
type parquetSource struct {
	path   string
	col    int
	name   string
	groups []parquet.RowGroup
	g      int   // current row group
	row    int64 // next row within the group
	first  int64 // file-level index of the group's first row
	pages  parquet.Pages
	page   parquet.Page
	vr     parquet.ValueReader
	vals   []parquet.Value
	vi, vn int
}

// openParquetBytes reads the Parquet file b (an archive member, named name in messages), its text in column
// col, with the checks of OpenInput.
func openParquetBytes(name string, b []byte, col string) (*InputReader, error) {
	r := &InputReader{path: name, format: FormatParquet, opt: InputOptions{TextColumn: col, DocSep: DocSepFile},
		size: int64(len(b)), ra: bytes.NewReader(b)}
	var err error
	if r.pq, err = openParquet(r, col); err != nil {
		return nil, err
	}
	return r, nil
}

// openParquet opens r's file as Parquet and finds the text column.
func openParquet(r *InputReader, name string) (ps *parquetSource, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("read %s: corrupt Parquet file: %v", r.path, p)
		}
	}()
	footerLen, err := checkParquetFrame(r.ra, r.size)
	if err == nil {
		err = checkParquetFooter(r.ra, r.size, footerLen)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r.path, err)
	}
	pf, err := parquet.OpenFile(countingReaderAt{r.ra, &r.read}, r.size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r.path, err)
	}
	leaf, ok := pf.Schema().Lookup(strings.Split(name, ".")...)
	if !ok {
		var cols []string
		for _, c := range pf.Schema().Columns() {
			cols = append(cols, strings.Join(c, "."))
		}
		return nil, fmt.Errorf("read %s: %w %q (the file has: %s; choose one as the text column)", r.path, ErrNoColumn, name, strings.Join(cols, ", "))
	}
	if leaf.MaxRepetitionLevel > 0 {
		return nil, fmt.Errorf("read %s: column %q is repeated (a list), want one string per row", r.path, name)
	}
	if k := leaf.Node.Type().Kind(); k != parquet.ByteArray {
		return nil, fmt.Errorf("read %s: column %q holds %s values, want strings", r.path, name, k)
	}
	if err := checkParquet(r.ra, r.size, footerLen, pf, leaf.ColumnIndex); err != nil {
		return nil, fmt.Errorf("read %s: %w", r.path, err)
	}
	return &parquetSource{path: r.path, col: leaf.ColumnIndex, name: name, groups: pf.RowGroups(),
		vals: make([]parquet.Value, 256)}, nil
}

// next returns the next row's text.
func (ps *parquetSource) next() (d Document, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("read %s row group %d: corrupt Parquet data: %v", ps.path, ps.g, p)
		}
	}()
	for {
		if ps.vi < ps.vn {
			v := ps.vals[ps.vi]
			ps.vi++
			where := fmt.Sprintf("row group %d row %d", ps.g, ps.row)
			d := Document{Index: ps.first + ps.row, Where: where}
			ps.row++
			if v.IsNull() {
				return Document{}, &BadRecordError{Path: ps.path, Where: where, Err: fmt.Errorf("column %q is null", ps.name)}
			}
			d.Text = string(v.ByteArray())
			return d, nil
		}
		if ps.vr != nil {
			n, err := ps.vr.ReadValues(ps.vals)
			ps.vi, ps.vn = 0, n
			if err == io.EOF || (err == nil && n == 0) {
				ps.vr = nil // the page is released once its values are consumed, below
			} else if err != nil {
				return Document{}, fmt.Errorf("read %s row group %d row %d: %w", ps.path, ps.g, ps.row, err)
			}
			continue
		}
		if ps.page != nil {
			parquet.Release(ps.page)
			ps.page = nil
		}
		if ps.pages != nil {
			page, err := ps.pages.ReadPage()
			if err == io.EOF {
				ps.pages.Close()
				ps.pages = nil
				if want := ps.groups[ps.g].NumRows(); ps.row != want {
					return Document{}, fmt.Errorf("read %s row group %d: column %q has %d values for %d rows", ps.path, ps.g, ps.name, ps.row, want)
				}
				ps.first += ps.row
				ps.g++
				continue
			}
			if err != nil {
				return Document{}, fmt.Errorf("read %s row group %d row %d: %w", ps.path, ps.g, ps.row, err)
			}
			ps.page, ps.vr = page, page.Values()
			continue
		}
		if ps.g >= len(ps.groups) {
			return Document{}, io.EOF
		}
		ps.pages, ps.row = ps.groups[ps.g].ColumnChunks()[ps.col].Pages(), 0
	}
}

func (ps *parquetSource) close() {
	if ps.page != nil {
		parquet.Release(ps.page)
		ps.page = nil
	}
	if ps.pages != nil {
		ps.pages.Close()
		ps.pages = nil
	}
}
