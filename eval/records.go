package eval

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/smallinit/smallinit/internal/inputfile"
)

// rawRecord is one record as read, before its kind parses it: a line of a line-based file, or a row of a CSV
// file (with its file's header and subject). err is set instead when the CSV row itself could not be read (a
// malformed record, counted like one that does not parse).
type rawRecord struct {
	file string
	line int // 1-based line of the record's start
	text []byte
	row  csvRow
	err  error
}

// csvRow is one data row of a CSV file with a header row.
type csvRow struct {
	subject string         // from the file name (subjectOf)
	cols    map[string]int // header name, lower case -> field index
	fields  []string
}

// get returns the field under the header name (lower case).
func (r csvRow) get(name string) (string, error) {
	i, ok := r.cols[name]
	if !ok {
		return "", fmt.Errorf("no %q column", name)
	}
	if i >= len(r.fields) {
		return "", fmt.Errorf("%d fields, the header has %d (no %q)", len(r.fields), len(r.cols), name)
	}
	return r.fields[i], nil
}

// recordSource yields the records of a task's file (or directory of files) in order.
type recordSource interface {
	next() (rawRecord, error) // io.EOF after the last record
	Close() error
}

// openRecords opens path for a kind: a line-based file, or for CSV kinds one CSV file or a directory of them
// (every *.csv in it, in name order, as the released per-subject layouts are: CMMLU's test/agronomy.csv,
// C-Eval's val/accountant_val.csv), or a .jsonl file of the same rows as JSON objects (jsonRow).
//
// With interleave, a directory's files are read round-robin, one record from each file in name order and then
// the next from each, so that the first N records (eval-tasks --limit N) spread over min(N, files) subjects,
// N/files each to within one, instead of covering the first subjects in file order.
func openRecords(path string, ks kindSpec, interleave bool) (recordSource, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	jsonl := !st.IsDir() && strings.EqualFold(filepath.Ext(path), ".jsonl")
	if ks.parseRow == nil || jsonl {
		if st.IsDir() {
			return nil, fmt.Errorf("%s is a directory (only the CSV kinds read a directory of files)", path)
		}
		f, err := inputfile.Open(path, inputfile.NoLimit)
		if err != nil {
			return nil, err
		}
		if err := checkCompressed(f, path); err != nil {
			f.Close()
			return nil, err
		}
		return &lineSource{f: f, rr: newRecordReader(f, path)}, nil
	}
	files := []string{path}
	if st.IsDir() {
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		files = nil
		for _, e := range ents {
			if !e.IsDir() && strings.EqualFold(filepath.Ext(e.Name()), ".csv") {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("directory %s has no .csv files%s", path, compressedHint(ents))
		}
		slices.Sort(files)
	}
	return &csvSource{files: files, subjects: ks.subjects, required: ks.columns, interleave: interleave && len(files) > 1}, nil
}

// lineSource reads the non-blank lines of one file.
type lineSource struct {
	f  *os.File
	rr *recordReader
}

func (s *lineSource) next() (rawRecord, error) {
	b, n, err := s.rr.next()
	if err != nil {
		return rawRecord{}, err
	}
	return rawRecord{file: s.rr.file, line: n, text: b}, nil
}

func (s *lineSource) Close() error { return s.f.Close() }

// csvSource reads the data rows of CSV files, one file after another or (interleave) round-robin. Each file
// starts with a header row naming its columns (matched case-insensitively: CMMLU's ",Question,A,B,C,D,Answer",
// C-Eval's "id,question,A,B,C,D,answer,explanation"); a UTF-8 byte-order mark before it is skipped. Fields are
// read as RFC 4180 CSV (quoted fields may hold commas, quotes and line breaks), leniently about stray quotes.
type csvSource struct {
	files      []string
	subjects   map[string]string
	required   []string
	interleave bool

	k    int        // files[k-1] is the last opened
	open []*csvFile // the files being read: one in order, all of them round-robin
	at   int        // round-robin: open[at] gives the next record
}

// csvFile is one open CSV file past its header.
type csvFile struct {
	path    string
	f       *os.File
	r       *csv.Reader
	cols    map[string]int
	subject string
}

func (s *csvSource) next() (rawRecord, error) {
	if s.interleave && s.k == 0 {
		for s.k < len(s.files) {
			if err := s.openNext(); err != nil {
				return rawRecord{}, err
			}
		}
	}
	for {
		if len(s.open) == 0 {
			if s.k == len(s.files) {
				return rawRecord{}, io.EOF
			}
			if err := s.openNext(); err != nil {
				return rawRecord{}, err
			}
			continue
		}
		s.at %= len(s.open)
		cf := s.open[s.at]
		rec, err := cf.read()
		if err == io.EOF {
			cf.close()
			s.open = slices.Delete(s.open, s.at, s.at+1)
			continue
		}
		if err != nil {
			return rawRecord{}, err
		}
		s.at++
		return rec, nil
	}
}

// openNext opens files[k] and adds it to the files being read, unless it is empty.
func (s *csvSource) openNext() error {
	cf, err := openCSV(s.files[s.k], s.required, s.subjects)
	s.k++
	if err != nil {
		return err
	}
	if cf != nil {
		s.open = append(s.open, cf)
	}
	return nil
}

// read returns the file's next data row, skipping blank lines; a row that is not CSV is returned as a record
// with err set (a malformed record).
func (cf *csvFile) read() (rawRecord, error) {
	for {
		fields, err := cf.r.Read()
		if err == io.EOF {
			return rawRecord{}, io.EOF
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return rawRecord{file: cf.path, line: pe.StartLine, err: pe.Err}, nil
		}
		if err != nil {
			return rawRecord{}, fmt.Errorf("read %s: %w", cf.path, err)
		}
		if len(fields) == 1 && strings.TrimSpace(fields[0]) == "" {
			continue // a blank line
		}
		line, _ := cf.r.FieldPos(0)
		return rawRecord{file: cf.path, line: line, row: csvRow{subject: cf.subject, cols: cf.cols, fields: fields}}, nil
	}
}

// openCSV opens one CSV file and reads its header; an empty file gives nil.
func openCSV(path string, required []string, subjects map[string]string) (*csvFile, error) {
	f, err := inputfile.Open(path, inputfile.NoLimit)
	if err != nil {
		return nil, err
	}
	if err := checkCompressed(f, path); err != nil {
		f.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(f, 1<<16)
	if b, err := br.Peek(3); err == nil && string(b) == "\uFEFF" {
		br.Discard(3)
	}
	r := csv.NewReader(br)
	r.FieldsPerRecord, r.LazyQuotes, r.ReuseRecord = -1, true, true
	header, err := r.Read()
	if err == io.EOF {
		f.Close()
		return nil, nil
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: header row: %w", path, err)
	}
	cols := make(map[string]int, len(header))
	for i, h := range header {
		cols[strings.ToLower(strings.TrimSpace(h))] = i
	}
	for _, c := range required {
		if _, ok := cols[c]; !ok {
			f.Close()
			if c == "answer" {
				return nil, fmt.Errorf("%s: the header has no answer column (C-Eval's test split was released without answers: score its val split, with few-shot examples from dev)", path)
			}
			return nil, fmt.Errorf("%s: the header %q has no %q column (want CMMLU's \",Question,A,B,C,D,Answer\" or C-Eval's \"id,question,A,B,C,D,answer,explanation\")", path, strings.Join(header, ","), c)
		}
	}
	return &csvFile{path: path, f: f, r: r, cols: cols, subject: subjectOf(path, subjects)}, nil
}

func (cf *csvFile) close() { cf.f.Close() }

func (s *csvSource) Close() error {
	for _, cf := range s.open {
		cf.close()
	}
	s.open = nil
	return nil
}

// subjectOf is the subject of a per-subject CSV file, from its name as released: CMMLU's "agronomy.csv" is
// agronomy, C-Eval's "accountant_val.csv" is accountant (its "_dev", "_val" and "_test" suffixes removed). A
// name that is not a known subject but ends in "_" + one (cmmlu_dev_agronomy.csv) is that subject, the longest
// such; any other name is taken as it is.
func subjectOf(path string, known map[string]string) string {
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	for _, split := range []string{"_dev", "_val", "_test"} {
		if n, ok := strings.CutSuffix(name, split); ok && n != "" {
			name = n
			break
		}
	}
	if _, ok := known[name]; ok {
		return name
	}
	best := ""
	for s := range known {
		if strings.HasSuffix(name, "_"+s) && len(s) > len(best) {
			best = s
		}
	}
	if best != "" {
		return best
	}
	return name
}

// jsonRow reads a CSV kind's row converted to a JSON object (the columns as keys, matched case-insensitively,
// string or number values; {"Question": ..., "A": ..., "Answer": "C", "subject": "agronomy"}), the subject
// from its "subject" key or else from the file name.
func jsonRow(line []byte, fileSubject string) (csvRow, error) {
	var obj map[string]json.RawMessage
	if err := strictJSON(line, &obj); err != nil {
		return csvRow{}, err
	}
	row := csvRow{subject: fileSubject, cols: make(map[string]int, len(obj))}
	for _, k := range sortedKeys(obj) {
		raw := obj[k]
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			var n json.Number
			if json.Unmarshal(raw, &n) != nil {
				if string(raw) != "null" {
					return csvRow{}, fmt.Errorf("%q is %s, want a string", k, truncateRaw(raw))
				}
			}
			v = n.String()
		}
		key := strings.ToLower(k)
		if key == "subject" && strings.TrimSpace(v) != "" {
			row.subject = strings.TrimSpace(v)
		}
		row.cols[key] = len(row.fields)
		row.fields = append(row.fields, v)
	}
	return row, nil
}

// truncateRaw shortens a JSON value for an error message.
func truncateRaw(raw []byte) string {
	if len(raw) > 40 {
		return string(raw[:40]) + "..."
	}
	return string(raw)
}
