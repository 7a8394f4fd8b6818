package train

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/filesum"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train/rundir"
)

// A run's data paths (data.train, data.val) are where it reads its tokens from, not what it computes. A study
// writes them under its --out, beside the run directories, so that moving the study directory (mv OUT OUT2)
// changes every path a config.toml records while the files stay the same. A checkpoint's fingerprint therefore
// records the tokens, not their paths, and a planned run's data paths are compared the way a moved directory
// keeps them: relative to the directory they share with the run (MovedPath).

// Fingerprint is the SHA-256 of c's encoding, with train.threads left out (the threads change no number a run
// computes) and the data paths replaced by the tokens they hold (train and val, as read): what a checkpoint
// records of the config it was taken under. A run directory moved, with or without its data, keeps its
// fingerprint; a config edited in any key that computes, or pointed at other tokens, does not.
func Fingerprint(c recipe.Config, train, val []int32) (string, error) {
	c.Train.Threads = 0
	c.Data = recipe.DataConfig{}
	b, err := c.Encode()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(b)
	buf := make([]byte, 0, 1<<16)
	for _, toks := range [][]int32{train, val} {
		buf = binary.LittleEndian.AppendUint64(buf[:0], uint64(len(toks)))
		h.Write(buf)
		for len(toks) > 0 {
			n := min(len(toks), cap(buf)/4)
			buf = buf[:0]
			for _, v := range toks[:n] {
				buf = binary.LittleEndian.AppendUint32(buf, uint32(v))
			}
			h.Write(buf)
			toks = toks[n:]
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// legacyFingerprint is the fingerprint checkpoints of earlier builds recorded: the config with its data paths
// as config.toml writes them. Such a checkpoint resumes in place; StartOrResume migrates it (relocate) when its
// run directory was moved with its data.
func legacyFingerprint(c recipe.Config) (string, error) {
	c.Train.Threads = 0
	b, err := c.Encode()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// CompareMoved checks that config have, recorded by an earlier attempt at the run in run directory dir, is want:
// train.threads aside, every key equal, and every data path either equal or naming the same file under a
// directory that was moved since (MovedPath, with one old location for all of them). It returns whether the
// data paths differ (the run was moved: its recorded paths are stale). An error wraps ErrConfigDiffers and
// says whether keys that compute differ or only the data paths do.
func CompareMoved(have, want recipe.Config, dir string) (moved bool, err error) {
	h, w := have, want
	h.Train.Threads, w.Train.Threads = 0, 0
	for _, k := range recipe.DataKeys() {
		*h.DataPath(k), *w.DataPath(k) = "", ""
	}
	a, err := h.Encode()
	if err != nil {
		return false, err
	}
	b, err := w.Encode()
	if err != nil {
		return false, err
	}
	if !bytes.Equal(a, b) {
		return false, fmt.Errorf("%w (edited by hand, or planned with other settings?) %s: move the run directory away to start it afresh", ErrConfigDiffers, firstDiff(a, b))
	}
	oldRoot := ""
	for _, k := range recipe.DataKeys() {
		hp, wp := *have.DataPath(k), *want.DataPath(k)
		if filepath.Clean(hp) == filepath.Clean(wp) {
			continue
		}
		root, err := MovedPath(hp, wp, dir)
		if err == nil && moved && root != oldRoot {
			err = fmt.Errorf("the data paths point to two old locations, %s and %s", oldRoot, root)
		}
		if err != nil {
			return false, fmt.Errorf("%w only in its data paths (%s = %q there, %q here), and they do not name the same files "+
				"under a moved directory (%v): point the run at the data it was trained on, or move the run directory away to start it afresh",
				ErrConfigDiffers, k, hp, wp, err)
		}
		moved, oldRoot = true, root
	}
	return moved, nil
}

// MovedPath reports whether data path have, recorded for a run, names the file want names now, under a
// directory that was moved (or copied) together with the run directory dir: want and dir share a directory
// root, and have is want's path below root under another root. It returns have's root (the directory's old
// place). The old file must be gone (the directory was moved) or hold the same bytes as want (it was copied).
// A want that shares no directory but / with dir is not a study's data, and only an equal path names it.
func MovedPath(have, want, dir string) (oldRoot string, err error) {
	aw, err := filepath.Abs(want)
	if err != nil {
		return "", err
	}
	ad, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	root := commonDir(aw, ad)
	if root == filepath.Dir(root) {
		return "", fmt.Errorf("%s lies outside the directory of the run", want)
	}
	tail, err := filepath.Rel(root, aw)
	if err != nil {
		return "", err
	}
	hc := filepath.Clean(have)
	sep := string(filepath.Separator)
	if !strings.HasSuffix(sep+hc, sep+tail) {
		return "", fmt.Errorf("%s is not %s under another directory", have, tail)
	}
	oldRoot = strings.TrimSuffix(strings.TrimSuffix(hc, tail), sep)
	if oldRoot == "" {
		oldRoot = "."
	}
	same, err := sameBytes(hc, aw)
	if err != nil {
		return "", err
	}
	if !same {
		return "", fmt.Errorf("%s still exists and differs from %s", have, want)
	}
	return oldRoot, nil
}

// commonDir is the deepest directory holding both absolute clean paths a and b.
func commonDir(a, b string) string {
	for d := filepath.Dir(a); ; d = filepath.Dir(d) {
		if rel, err := filepath.Rel(d, b); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return d
		}
		if d == filepath.Dir(d) {
			return d
		}
	}
}

// sameBytes reports whether the old data file old, if it still exists, holds the bytes of cur; a missing old
// file (the usual case: the directory was moved) counts as the same. Both are opened as inputs (regular files
// only).
func sameBytes(old, cur string) (bool, error) {
	fo, err := inputfile.Open(old, inputfile.NoLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer fo.Close()
	fc, err := inputfile.Open(cur, inputfile.NoLimit)
	if err != nil {
		return false, err
	}
	defer fc.Close()
	so, err := fo.Stat()
	if err != nil {
		return false, err
	}
	sc, err := fc.Stat()
	if err != nil {
		return false, err
	}
	if os.SameFile(so, sc) {
		return true, nil
	}
	if so.Size() != sc.Size() {
		return false, nil
	}
	bo, bc := make([]byte, 1<<16), make([]byte, 1<<16)
	for {
		n, err := io.ReadFull(fo, bo)
		if _, err2 := io.ReadFull(fc, bc[:n]); err2 != nil {
			return false, err2
		}
		if !bytes.Equal(bo[:n], bc[:n]) {
			return false, nil
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// dataFingerprint is c's Fingerprint, its tokens read from its data paths.
func dataFingerprint(c recipe.Config) (string, error) {
	tr, err := data.ReadTokens(c.Data.Train, c.Model.Vocab)
	if err != nil {
		return "", fmt.Errorf("data.train: %w", err)
	}
	var va []int32
	if c.Data.Val != "" {
		if va, err = data.ReadTokens(c.Data.Val, c.Model.Vocab); err != nil {
			return "", fmt.Errorf("data.val: %w", err)
		}
	}
	return Fingerprint(c, tr, va)
}

// relocate rewrites the config.toml of the run in dir, recorded as have before the run directory was moved,
// with want's data paths, and migrates its checkpoints: one whose state.json holds have's fingerprint of an
// earlier build (legacyFingerprint: absolute data paths) is given the fingerprint of the rewritten config, so
// that Resume accepts it. The checkpoints go first, so that a process killed in between leaves a run that the
// next attempt relocates again. The caller holds the run's lock.
func relocate(dir string, have, want recipe.Config) error {
	c := have
	for _, k := range recipe.DataKeys() {
		*c.DataPath(k) = *want.DataPath(k)
	}
	old, err := legacyFingerprint(have)
	if err != nil {
		return err
	}
	steps, err := listCheckpoints(dir)
	if err != nil {
		return fmt.Errorf("relocate %s: %w", dir, err)
	}
	fp := ""
	for _, step := range steps {
		path := filepath.Join(dir, checkpointsDir, checkpointName(step), stateFile)
		b, err := inputfile.ReadFile(path, inputfile.MaxConfig)
		if err != nil {
			return fmt.Errorf("relocate: %w", err)
		}
		var st State
		if err := json.Unmarshal(b, &st); err != nil {
			return fmt.Errorf("relocate %s: %w", path, err)
		}
		if st.Config != old {
			continue // of this build, already migrated, or refused by Resume with its own message
		}
		if fp == "" {
			if fp, err = dataFingerprint(c); err != nil {
				return fmt.Errorf("relocate %s: %w", dir, err)
			}
		}
		// A checkpoint with a manifest is verified before its state.json changes and sealed again after.
		ck := filepath.Dir(path)
		verr := filesum.Verify(ck)
		sealed := !errors.Is(verr, filesum.ErrNoManifest)
		if sealed && verr != nil {
			return fmt.Errorf("relocate: %w", verr)
		}
		st.Config = fp
		nb, _ := json.MarshalIndent(st, "", "  ")
		if err := atomicfile.Write(path, append(nb, '\n')); err != nil {
			return fmt.Errorf("relocate: %w", err)
		}
		if sealed {
			if err := filesum.Write(ck); err != nil {
				return fmt.Errorf("relocate: %w", err)
			}
		}
	}
	b, err := c.Encode()
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, rundir.ConfigFile), b)
}

// firstDiff names the first key whose line differs between two encoded configs, have and want, with its
// section: "at train.eval_interval: 5 there, 10 here" ("" when the lines are equal).
func firstDiff(have, want []byte) string {
	h, w := strings.Split(string(have), "\n"), strings.Split(string(want), "\n")
	section := ""
	for i := 0; i < max(len(h), len(w)); i++ {
		var x, y string
		if i < len(h) {
			x = h[i]
		}
		if i < len(w) {
			y = w[i]
		}
		if x == y {
			if t := strings.TrimSpace(x); strings.HasPrefix(t, "[") {
				section = strings.Trim(t, "[]") + "."
			}
			continue
		}
		kx, vx, _ := strings.Cut(x, "=")
		ky, vy, _ := strings.Cut(y, "=")
		if key := strings.TrimSpace(kx); key != "" && key == strings.TrimSpace(ky) {
			return fmt.Sprintf("at %s%s: %s there, %s here", section, key, strings.TrimSpace(vx), strings.TrimSpace(vy))
		}
		return fmt.Sprintf("at line %d: %q there, %q here", i+1, x, y)
	}
	return ""
}
