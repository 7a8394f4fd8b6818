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
	read() int64              // bytes read so far
	total() int64             // bytes of all the files (0 if unknown)
	Close() error
}

// openRecords opens path for a kind: a line-based file, or for CSV kinds one CSV file or a directory of them
// (every *.csv in it, in name order, as the released per-subject layouts are: CMMLU's test/agronomy.csv,
// C-Eval's val/accountant_val.csv), or a .jsonl file of the same rows as JSON objects (jsonRow).
func openRecords(path string, ks kindSpec) (recordSource, error) {
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
		cr := &countingReader{r: f}
		return &lineSource{f: f, cr: cr, rr: newRecordReader(cr, path), size: st.Size()}, nil
	}
	files := []string{path}
	var size int64 = st.Size()
	if st.IsDir() {
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		files, size = nil, 0
		for _, e := range ents {
			if !e.IsDir() && strings.EqualFold(filepath.Ext(e.Name()), ".csv") {
				files = append(files, filepath.Join(path, e.Name()))
				if info, err := e.Info(); err == nil {
					size += info.Size()
				}
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("directory %s has no .csv files", path)
		}
		slices.Sort(files)
	}
	return &csvSource{files: files, size: size, subjects: ks.subjects, required: ks.columns}, nil
}

// lineSource reads the non-blank lines of one file.
type lineSource struct {
	f    *os.File
	cr   *countingReader
	rr   *recordReader
	size int64
}

func (s *lineSource) next() (rawRecord, error) {
	b, n, err := s.rr.next()
	if err != nil {
		return rawRecord{}, err
	}
	return rawRecord{file: s.rr.file, line: n, text: b}, nil
}

func (s *lineSource) read() int64  { return s.cr.n }
func (s *lineSource) total() int64 { return s.size }
func (s *lineSource) Close() error { return s.f.Close() }

// csvSource reads the data rows of CSV files one after another. Each file starts with a header row naming its
// columns (matched case-insensitively: CMMLU's ",Question,A,B,C,D,Answer", C-Eval's
// "id,question,A,B,C,D,answer,explanation"); a UTF-8 byte-order mark before it is skipped. Fields are read as
// RFC 4180 CSV (quoted fields may hold commas, quotes and line breaks), leniently about stray quotes.
type csvSource struct {
	files    []string
	size     int64
	subjects map[string]string
	required []string

	k       int // files[k-1] is open
	f       *os.File
	cr      *countingReader
	done    int64 // bytes of the files already closed
	r       *csv.Reader
	cols    map[string]int
	subject string
}

func (s *csvSource) next() (rawRecord, error) {
	for {
		if s.r == nil {
			if s.k == len(s.files) {
				return rawRecord{}, io.EOF
			}
			if err := s.open(s.files[s.k]); err != nil {
				return rawRecord{}, err
			}
			s.k++
			if s.r == nil {
				continue // an empty file
			}
		}
		file := s.files[s.k-1]
		fields, err := s.r.Read()
		if err == io.EOF {
			s.closeFile()
			continue
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return rawRecord{file: file, line: pe.StartLine, err: pe.Err}, nil
		}
		if err != nil {
			return rawRecord{}, fmt.Errorf("read %s: %w", file, err)
		}
		if len(fields) == 1 && strings.TrimSpace(fields[0]) == "" {
			continue // a blank line
		}
		line, _ := s.r.FieldPos(0)
		return rawRecord{file: file, line: line, row: csvRow{subject: s.subject, cols: s.cols, fields: fields}}, nil
	}
}

// open opens one CSV file and reads its header; s.r stays nil for an empty file.
func (s *csvSource) open(path string) error {
	f, err := inputfile.Open(path, inputfile.NoLimit)
	if err != nil {
		return err
	}
	s.f, s.cr = f, &countingReader{r: f}
	br := bufio.NewReaderSize(s.cr, 1<<16)
	if b, err := br.Peek(3); err == nil && string(b) == "\uFEFF" {
		br.Discard(3)
	}
	r := csv.NewReader(br)
	r.FieldsPerRecord, r.LazyQuotes, r.ReuseRecord = -1, true, true
	header, err := r.Read()
	if err == io.EOF {
		s.closeFile()
		return nil
	}
	if err != nil {
		s.closeFile()
		return fmt.Errorf("%s: header row: %w", path, err)
	}
	s.cols = make(map[string]int, len(header))
	for i, h := range header {
		s.cols[strings.ToLower(strings.TrimSpace(h))] = i
	}
	for _, c := range s.required {
		if _, ok := s.cols[c]; !ok {
			s.closeFile()
			if c == "answer" {
				return fmt.Errorf("%s: the header has no answer column (C-Eval's test split was released without answers: score its val split, with few-shot examples from dev)", path)
			}
			return fmt.Errorf("%s: the header %q has no %q column (want CMMLU's \",Question,A,B,C,D,Answer\" or C-Eval's \"id,question,A,B,C,D,answer,explanation\")", path, strings.Join(header, ","), c)
		}
	}
	s.r, s.subject = r, subjectOf(path, s.subjects)
	return nil
}

func (s *csvSource) closeFile() {
	if s.f != nil {
		s.done += s.cr.n
		s.f.Close()
	}
	s.f, s.cr, s.r = nil, nil, nil
}

func (s *csvSource) read() int64 {
	if s.cr != nil {
		return s.done + s.cr.n
	}
	return s.done
}

func (s *csvSource) total() int64 { return s.size }

func (s *csvSource) Close() error {
	s.closeFile()
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
