//go:build linux || darwin

package main

// The bad-input catalogue: every command is run as a subprocess (the binary is built once, in TestMain) on a
// list of broken inputs, and must fail the same way each time: a non-zero exit, one readable message naming
// the file or key at fault (one line starting with "smallinit:"), no stack trace, and no partial output (the
// output file or directory absent afterwards, or unchanged when it existed before). A full disk is simulated
// with a file-size limit (RLIMIT_FSIZE: writes past it fail with EFBIG, and Go ignores SIGXFSZ), a failing
// stdout with /dev/full.

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/safetensors"
	"github.com/smallinit/smallinit/tokenizer"
	"github.com/smallinit/smallinit/train"
	"github.com/smallinit/smallinit/train/rundir"
)

// badBin is the smallinit binary built by TestMain, badFix the fixtures shared by the catalogue.
var (
	badBin   string
	badFix   string
	badVocab int
)

// Environment variables of the re-exec trampoline: the test binary sets the file-size limit on itself and
// then execs the smallinit binary, which inherits it.
const (
	badFsizeEnv = "SMALLINIT_BADINPUT_FSIZE"
	badExecEnv  = "SMALLINIT_BADINPUT_EXEC"
)

func TestMain(m *testing.M) {
	if lim := os.Getenv(badFsizeEnv); lim != "" {
		n, _ := strconv.ParseUint(lim, 10, 64)
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
			fmt.Fprintln(os.Stderr, "setrlimit:", err)
			os.Exit(3)
		}
		var args []string
		json.Unmarshal([]byte(os.Getenv(badExecEnv)), &args)
		env := slicesDelete(os.Environ(), badFsizeEnv, badExecEnv)
		err := syscall.Exec(args[0], args, env)
		fmt.Fprintln(os.Stderr, "exec:", err)
		os.Exit(3)
	}
	dir, err := os.MkdirTemp("", "smallinit-badinput")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	badBin = filepath.Join(dir, "smallinit")
	if out, err := exec.Command("go", "build", "-o", badBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build smallinit: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	badFix = filepath.Join(dir, "fixtures")
	if err := writeBadFixtures(badFix); err != nil {
		fmt.Fprintln(os.Stderr, "fixtures:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// slicesDelete returns env without the variables named.
func slicesDelete(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		keep := true
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

// writeBadFixtures writes the good inputs the broken ones are made from: a tokenizer, a two-layer model
// (model/ and model2/, different weights) with the tokenizer beside it, a token file, a corpus, a task file,
// a run config and a finished micro run with checkpoints (run/).
func writeBadFixtures(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	text := []string{
		"The quick brown fox jumps over the lazy dog. It was the best of times, it was the worst of times.",
		"Question: Natalia sold 48 clips in April and half as many in May. How many clips did she sell? Answer: 72",
		"天地玄黄，宇宙洪荒。日月盈昃，辰宿列张。 add: 4 8 2 + 9 3 7 = 1 4 1 9",
	}
	tok, err := tokenizer.Train(text, 300)
	if err != nil {
		return err
	}
	badVocab = tok.VocabSize()
	c := arch.Config{Vocab: badVocab, Dim: 16, FFN: 32, Layers: 2, Heads: 2, SeqLen: 16, NormEps: 1e-5,
		Norm: arch.NormRMS, AttnGate: arch.GateNone, RopeTheta: 10000, FFNKind: arch.FFNDense}
	pool := kernel.NewPool(1)
	defer pool.Close()
	for i, name := range []string{"model", "model2"} {
		m, err := model.New(c, 1, pool)
		if err != nil {
			return err
		}
		for j := range m.Params.Flat {
			m.Params.Flat[j] = float32(math.Sin(float64(j*(i+3)))) * 0.2
		}
		if err := m.Save(filepath.Join(dir, name), nil); err != nil {
			return err
		}
		if err := tok.Save(filepath.Join(dir, name, "tokenizer.json")); err != nil {
			return err
		}
	}
	var ids []int32
	for len(ids) < 400 {
		for _, s := range text {
			ids = append(tok.AppendEncode(ids, s), tok.EOT())
		}
	}
	if err := data.WriteTokens(filepath.Join(dir, "tokens.tok"), ids); err != nil {
		return err
	}
	var jl bytes.Buffer
	for i := range 30 {
		b, _ := json.Marshal(map[string]string{"text": fmt.Sprintf("%s (%d)", text[i%3], i)})
		jl.Write(append(b, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, "corpus.jsonl"), jl.Bytes(), 0o644); err != nil {
		return err
	}
	task := `{"context": "The quick brown fox jumps over the lazy", "continuation": "dog"}` + "\n" +
		`{"context": "It was the best of times, it was the worst of", "continuation": "times"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "lambada.jsonl"), []byte(task), 0o644); err != nil {
		return err
	}
	runToml := fmt.Sprintf("[model]\nvocab_size = %d\nhidden_size = 16\nnum_hidden_layers = 2\nnum_attention_heads = 2\n"+
		"max_position_embeddings = 16\n[train]\nbatch_size = 2\nsteps = 4\nlog_interval = 1\neval_interval = 0\n"+
		"checkpoint_interval = 2\nthreads = 1\n[schedule]\nwarmup_steps = 1\n[data]\ntrain = %q\n", badVocab, filepath.Join(dir, "tokens.tok"))
	if err := os.WriteFile(filepath.Join(dir, "run.toml"), []byte(runToml), 0o644); err != nil {
		return err
	}
	rc, err := train.Load(filepath.Join(dir, "run.toml"), nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Stopped at step 2 with a checkpoint: --resume has work left to do.
	_, err = train.Start(ctx, rc, filepath.Join(dir, "run"), train.Options{AfterStep: func(s int) {
		if s == 2 {
			cancel()
		}
	}})
	if err == nil {
		return fmt.Errorf("the fixture run was not interrupted")
	}
	return nil
}

// badCase is one broken input for one command.
type badCase struct {
	name string
	cmd  string // the command, for the --help check: "eval", "data prepare", ...
	// setup makes the broken input in the case's own directory cd and returns the arguments after the
	// command; out lists the outputs (relative to cd, or absolute) that must be absent or unchanged after.
	setup func(t *testing.T, cd string) (args []string, out []string)
	want  []string // the message names all of these
	fsize int64    // > 0: file-size limit in bytes (a full disk)
	full  bool     // stdout is /dev/full
	root  bool     // needs permissions to matter: left out when running as root
	// designOK: not a bad input for this command (analyze shortens the context to its probes, audit streams)
	designOK bool
}

// fix returns a fixture path.
func fix(name string) string { return filepath.Join(badFix, name) }

// copyDir copies the fixture directory name into cd and returns the copy.
func copyDir(t *testing.T, cd, name string) string {
	t.Helper()
	dst := filepath.Join(cd, name)
	err := filepath.WalkDir(fix(name), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(fix(name), p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// write writes b to cd/name and returns the path.
func write(t *testing.T, cd, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(cd, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func read(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// editConfig copies the model fixture and replaces from by to in its config.json.
func editConfig(from, to string) func(t *testing.T, cd string) string {
	return func(t *testing.T, cd string) string {
		m := copyDir(t, cd, "model")
		p := filepath.Join(m, arch.ConfigFile)
		s := string(read(t, p))
		if !strings.Contains(s, from) {
			t.Fatalf("config.json has no %q", from)
		}
		write(t, m, arch.ConfigFile, []byte(strings.Replace(s, from, to, 1)))
		return m
	}
}

// setConfig copies the model fixture and sets one key of its config.json.
func setConfig(key string, v any) func(t *testing.T, cd string) string {
	return func(t *testing.T, cd string) string {
		m := copyDir(t, cd, "model")
		var c map[string]any
		if err := json.Unmarshal(read(t, filepath.Join(m, arch.ConfigFile)), &c); err != nil {
			t.Fatal(err)
		}
		c[key] = v
		b, _ := json.Marshal(c)
		write(t, m, arch.ConfigFile, b)
		return m
	}
}

// editFile copies the model fixture and replaces one of its files by f(old contents); f returning nil removes it.
func editFile(name string, f func(old []byte) []byte) func(t *testing.T, cd string) string {
	return func(t *testing.T, cd string) string {
		m := copyDir(t, cd, "model")
		p := filepath.Join(m, name)
		b := f(read(t, p))
		if b == nil {
			os.Remove(p)
		} else {
			write(t, m, name, b)
		}
		return m
	}
}

// rewriteWeights copies the model fixture and rewrites its model.safetensors (rewriteWeightsIn).
func rewriteWeights(which string, nan bool, asInt bool) func(t *testing.T, cd string) string {
	return func(t *testing.T, cd string) string {
		m := copyDir(t, cd, "model")
		rewriteWeightsIn(t, m, which, nan, asInt)
		return m
	}
}

// rewriteWeightsIn rewrites m/model.safetensors, giving the first tensor whose name contains which a NaN
// (nan) or the int32 dtype (asInt).
func rewriteWeightsIn(t *testing.T, m, which string, nan bool, asInt bool) {
	{
		p := filepath.Join(m, arch.WeightsFile)
		f, err := safetensors.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		tensors := f.Tensors()
		vals := make([][]float32, len(tensors))
		for i, ti := range tensors {
			vals[i] = make([]float32, ti.NumElements())
			if err := f.ReadFloat32(ti.Name, vals[i]); err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
		w := safetensors.Create(p, nil)
		done := false
		for i, ti := range tensors {
			if !done && strings.Contains(ti.Name, which) {
				done = true
				if nan {
					vals[i][len(vals[i])/2] = float32(math.NaN())
				}
				if asInt {
					ints := make([]int32, len(vals[i]))
					if err := w.AddInt32(ti.Name, ti.Shape, ints); err != nil {
						t.Fatal(err)
					}
					continue
				}
			}
			if err := w.AddFloat32(ti.Name, ti.Shape, vals[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// tokHeader is a token file header claiming count ids of width bytes.
func tokHeader(magic string, width uint32, count uint64) []byte {
	b := make([]byte, 24)
	copy(b, magic)
	b[8] = 1
	b[12] = byte(width)
	for i := range 8 {
		b[16+i] = byte(count >> (8 * i))
	}
	return b
}

// brokenModels are broken model directories, each with what the message must name.
var brokenModels = []struct {
	name string
	make func(t *testing.T, cd string) string
	want []string
}{
	{"missing config", editFile(arch.ConfigFile, func([]byte) []byte { return nil }), []string{"config.json"}},
	{"empty config", editFile(arch.ConfigFile, func([]byte) []byte { return []byte{} }), []string{"config.json"}},
	{"truncated config", editFile(arch.ConfigFile, func(b []byte) []byte { return b[:len(b)/2] }), []string{"config.json"}},
	{"config not an object", editFile(arch.ConfigFile, func([]byte) []byte { return []byte("[1, 2]") }), []string{"config.json"}},
	{"config invalid utf-8", editFile(arch.ConfigFile, func(b []byte) []byte { return append([]byte{0xff, 0xfe}, b...) }), []string{"config.json"}},
	{"negative width", editConfig(`"hidden_size": 16`, `"hidden_size": -16`), []string{"config.json", "hidden_size"}},
	{"absurd vocabulary", setConfig("vocab_size", 16000000), []string{"model.safetensors", "shape"}},
	{"absurd context", editConfig(`"max_position_embeddings": 16`, `"max_position_embeddings": 16777216`), []string{"max_position_embeddings"}},
	{"missing weights", editFile(arch.WeightsFile, func([]byte) []byte { return nil }), []string{"model.safetensors"}},
	{"empty weights", editFile(arch.WeightsFile, func([]byte) []byte { return []byte{} }), []string{"model.safetensors"}},
	{"truncated weights", editFile(arch.WeightsFile, func(b []byte) []byte { return b[:len(b)-100] }), []string{"model.safetensors"}},
	{"weights wrong magic", editFile(arch.WeightsFile, func(b []byte) []byte { return append([]byte("GGUF\x03\x00\x00\x00"), b[8:]...) }), []string{"model.safetensors"}},
	{"weights wrong dtype", rewriteWeights("q_proj", false, true), []string{"model.safetensors", "q_proj"}},
	{"shape mismatch", editConfig(`"intermediate_size": 32`, `"intermediate_size": 48`), []string{"model.safetensors", "shape"}},
	{"NaN weights", rewriteWeights("down_proj", true, false), []string{"model.safetensors", "NaN"}},
}

// brokenTokens are broken token files.
var brokenTokens = []struct {
	name string
	make func(t *testing.T, cd string) string
	want []string
}{
	{"empty tokens", func(t *testing.T, cd string) string { return write(t, cd, "t.tok", nil) }, []string{"t.tok"}},
	{"truncated tokens", func(t *testing.T, cd string) string {
		b := read(t, fix("tokens.tok"))
		return write(t, cd, "t.tok", b[:len(b)-1])
	}, []string{"t.tok"}},
	{"tokens wrong magic", func(t *testing.T, cd string) string {
		b := read(t, fix("tokens.tok"))
		return write(t, cd, "t.tok", append([]byte("NOTOKENS"), b[8:]...))
	}, []string{"t.tok", "not a token file"}},
	{"tokens wrong width", func(t *testing.T, cd string) string {
		b := read(t, fix("tokens.tok"))
		b[12] = 3
		return write(t, cd, "t.tok", b)
	}, []string{"t.tok", "bytes per token"}},
	{"tokens absurd count", func(t *testing.T, cd string) string {
		return write(t, cd, "t.tok", tokHeader("SITOKENS", 4, 1e12))
	}, []string{"t.tok", "1000000000000"}},
	{"token id beyond vocabulary", func(t *testing.T, cd string) string {
		b := append(tokHeader("SITOKENS", 2, 40), make([]byte, 80)...)
		b[24+60] = 0xff
		b[24+61] = 0xff
		return write(t, cd, "t.tok", b)
	}, []string{"t.tok", "outside the vocabulary"}},
	{"too few tokens", func(t *testing.T, cd string) string {
		return write(t, cd, "t.tok", append(tokHeader("SITOKENS", 2, 3), make([]byte, 6)...))
	}, []string{"t.tok"}},
}

// fileParent returns a path whose parent is a regular file (a directory that cannot be created).
func fileParent(t *testing.T, cd string) string {
	return filepath.Join(write(t, cd, "afile", []byte("x")), "out")
}

// readOnly returns a path inside a read-only directory.
func readOnly(t *testing.T, cd string) string {
	ro := filepath.Join(cd, "ro")
	os.Mkdir(ro, 0o555)
	t.Cleanup(func() { os.Chmod(ro, 0o755) })
	return filepath.Join(ro, "out")
}

// badCases is the catalogue.
func badCases() []badCase {
	var cs []badCase
	// Commands that read a model directory and a token file.
	for _, bm := range brokenModels {
		bm := bm
		cs = append(cs,
			badCase{name: bm.name, cmd: "eval", want: bm.want, setup: func(t *testing.T, cd string) ([]string, []string) {
				return []string{"--model", bm.make(t, cd), "--tokens", fix("tokens.tok")}, nil
			}},
			badCase{name: bm.name, cmd: "analyze", want: bm.want, designOK: bm.name == "absurd context",
				setup: func(t *testing.T, cd string) ([]string, []string) {
					return []string{"--model", bm.make(t, cd), "--tokens", fix("tokens.tok")}, nil
				}},
			badCase{name: bm.name, cmd: "compare", want: bm.want, setup: func(t *testing.T, cd string) ([]string, []string) {
				return []string{"--a", fix("model"), "--b", bm.make(t, cd), "--tokens", fix("tokens.tok"), "--dump", filepath.Join(cd, "rows.csv")}, []string{"rows.csv"}
			}},
			badCase{name: bm.name, cmd: "eval-tasks", want: bm.want, setup: func(t *testing.T, cd string) ([]string, []string) {
				return []string{"--model", bm.make(t, cd), "--tokenizer", fix("model/tokenizer.json"), "--task", "lambada=" + fix("lambada.jsonl")}, nil
			}},
			badCase{name: bm.name, cmd: "audit", want: bm.want[:1], designOK: bm.name == "absurd context", // audit streams the weights
				setup: func(t *testing.T, cd string) ([]string, []string) {
					return []string{"--model", bm.make(t, cd)}, nil
				}},
		)
	}
	for _, bt := range brokenTokens {
		bt := bt
		cs = append(cs,
			// eval scores every target (eval.ScoreTokens), so 3 tokens are 2 targets to score, not a bad input.
			badCase{name: bt.name, cmd: "eval", want: bt.want, designOK: bt.name == "too few tokens", setup: func(t *testing.T, cd string) ([]string, []string) {
				return []string{"--model", fix("model"), "--tokens", bt.make(t, cd)}, nil
			}},
			badCase{name: bt.name, cmd: "analyze", want: bt.want, setup: func(t *testing.T, cd string) ([]string, []string) {
				return []string{"--model", fix("model"), "--tokens", bt.make(t, cd)}, nil
			}},
			badCase{name: bt.name, cmd: "compare", want: bt.want, setup: func(t *testing.T, cd string) ([]string, []string) {
				return []string{"--a", fix("model"), "--b", fix("model2"), "--tokens", bt.make(t, cd), "--dump", filepath.Join(cd, "rows.jsonl")}, []string{"rows.jsonl"}
			}},
			badCase{name: bt.name, cmd: "train", want: bt.want, setup: func(t *testing.T, cd string) ([]string, []string) {
				return []string{"--config", fix("run.toml"), "--set", "data.train=" + bt.make(t, cd), "--out", filepath.Join(cd, "run")}, []string{"run"}
			}},
		)
	}
	for _, c := range []string{"eval", "analyze", "audit"} {
		cs = append(cs, badCase{name: "model dir missing", cmd: c, want: []string{"nope"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			return []string{"--model", filepath.Join(cd, "nope")}, nil
		}}, badCase{name: "model dir is a file", cmd: c, want: []string{"afile"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			return []string{"--model", write(t, cd, "afile", []byte("x"))}, nil
		}})
	}
	for _, c := range []string{"eval", "analyze", "compare"} {
		tokArgs := func(tokens string) []string {
			if c == "compare" {
				return []string{"--a", fix("model"), "--b", fix("model2"), "--tokens", tokens}
			}
			return []string{"--model", fix("model"), "--tokens", tokens}
		}
		cs = append(cs, badCase{name: "tokens missing", cmd: c, want: []string{"nope.tok"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			return tokArgs(filepath.Join(cd, "nope.tok")), nil
		}}, badCase{name: "tokens is a directory", cmd: c, want: []string{"dir.tok"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			os.Mkdir(filepath.Join(cd, "dir.tok"), 0o755)
			return tokArgs(filepath.Join(cd, "dir.tok")), nil
		}})
	}

	// eval
	cs = append(cs,
		badCase{name: "zero batch", cmd: "eval", want: []string{"--batch"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			return []string{"--model", fix("model"), "--tokens", fix("tokens.tok"), "--batch", "0"}, nil
		}},
		badCase{name: "absurd batch", cmd: "eval", want: []string{"batch"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			return []string{"--model", fix("model"), "--tokens", fix("tokens.tok"), "--batch", "100000000000"}, nil
		}},
		badCase{name: "stdout full", cmd: "eval", want: []string{"write"}, full: true, setup: func(t *testing.T, cd string) ([]string, []string) {
			return []string{"--model", fix("model"), "--tokens", fix("tokens.tok")}, nil
		}},
		badCase{name: "stdout full json", cmd: "eval", want: []string{"write"}, full: true, setup: func(t *testing.T, cd string) ([]string, []string) {
			return []string{"--model", fix("model"), "--tokens", fix("tokens.tok"), "--json"}, nil
		}},
	)

	// compare
	cs = append(cs,
		badCase{name: "zero bins", cmd: "compare", want: []string{"--bins"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			return []string{"--a", fix("model"), "--b", fix("model2"), "--tokens", fix("tokens.tok"), "--bins", "0"}, nil
		}},
		badCase{name: "dump parent is a file", cmd: "compare", want: []string{"--dump", "afile"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			p := fileParent(t, cd)
			return []string{"--a", fix("model"), "--b", fix("model2"), "--tokens", fix("tokens.tok"), "--dump", p}, []string{p}
		}},
		badCase{name: "dump dir read-only", cmd: "compare", want: []string{"--dump"}, root: true, setup: func(t *testing.T, cd string) ([]string, []string) {
			p := readOnly(t, cd)
			return []string{"--a", fix("model"), "--b", fix("model2"), "--tokens", fix("tokens.tok"), "--dump", p}, []string{p}
		}},
		badCase{name: "dump on a full disk", cmd: "compare", want: []string{"--dump"}, fsize: 4096, setup: func(t *testing.T, cd string) ([]string, []string) {
			return []string{"--a", fix("model"), "--b", fix("model2"), "--tokens", fix("tokens.tok"), "--dump", filepath.Join(cd, "rows.csv")}, []string{"rows.csv"}
		}},
		badCase{name: "models of different vocabularies", cmd: "compare", want: []string{"vocab"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			c, _, err := model.ReadConfig(fix("model"))
			if err != nil {
				t.Fatal(err)
			}
			c.Vocab += 7
			pool := kernel.NewPool(1)
			defer pool.Close()
			m, err := model.New(c, 1, pool)
			if err != nil {
				t.Fatal(err)
			}
			for i := range m.Params.Flat {
				m.Params.Flat[i] = 0.01
			}
			dir := filepath.Join(cd, "wide")
			if err := m.Save(dir, nil); err != nil {
				t.Fatal(err)
			}
			return []string{"--a", fix("model"), "--b", dir, "--tokens", fix("tokens.tok")}, nil
		}},
		badCase{name: "stdout full", cmd: "compare", want: []string{"write"}, full: true, setup: func(t *testing.T, cd string) ([]string, []string) {
			return []string{"--a", fix("model"), "--b", fix("model2"), "--tokens", fix("tokens.tok")}, nil
		}},
	)

	// train
	runOut := func(cd string) string { return filepath.Join(cd, "run") }
	trainWith := func(want []string, config func(t *testing.T, cd string) string, sets ...string) badCase {
		return badCase{cmd: "train", want: want, setup: func(t *testing.T, cd string) ([]string, []string) {
			args := []string{"--config", config(t, cd), "--out", runOut(cd)}
			for _, s := range sets {
				args = append(args, "--set", s)
			}
			return args, []string{"run"}
		}}
	}
	goodConfig := func(*testing.T, string) string { return fix("run.toml") }
	badToml := func(s string) func(t *testing.T, cd string) string {
		return func(t *testing.T, cd string) string { return write(t, cd, "bad.toml", []byte(s)) }
	}
	named := func(c badCase, name string) badCase { c.name = name; return c }
	goodBytes, _ := os.ReadFile(fix("run.toml"))
	good := string(goodBytes)
	cs = append(cs,
		named(trainWith([]string{"nope.toml"}, func(_ *testing.T, cd string) string { return filepath.Join(cd, "nope.toml") }), "config missing"),
		named(trainWith([]string{"dir.toml"}, func(_ *testing.T, cd string) string {
			os.Mkdir(filepath.Join(cd, "dir.toml"), 0o755)
			return filepath.Join(cd, "dir.toml")
		}), "config is a directory"),
		named(trainWith([]string{"data.train"}, badToml("")), "empty config"),
		named(trainWith([]string{"bad.toml"}, badToml(good[:len(good)/3]+"\n[model")), "truncated config"),
		named(trainWith([]string{"bad.toml"}, badToml("seed = 1\n\xff\xfe = 2\n")), "config invalid utf-8"),
		named(trainWith([]string{"hidden_sise"}, badToml(good+"\n[model.extra]\n"+"hidden_sise = 3\n")), "unknown config key"),
		named(trainWith([]string{"model.hidden_sise"}, goodConfig, "model.hidden_sise=3"), "unknown --set key"),
		named(trainWith([]string{"--set"}, goodConfig, "novalue"), "--set without ="),
		named(trainWith([]string{"train.batch_size"}, goodConfig, "train.batch_size=-1"), "negative batch"),
		named(trainWith([]string{"train.steps"}, goodConfig, "train.steps=-5"), "negative steps"),
		named(trainWith([]string{"hidden_size"}, goodConfig, "model.hidden_size=1000000000"), "absurd width"),
		named(trainWith([]string{"max_position_embeddings"}, goodConfig, "model.max_position_embeddings=16777216"), "absurd context"),
		named(trainWith([]string{"init.gamma"}, goodConfig, "init.gamma=nan"), "NaN gamma"),
		named(trainWith([]string{"schedule.lr"}, goodConfig, "schedule.lr=-1"), "negative learning rate"),
		named(trainWith([]string{"nope.tok"}, goodConfig, "data.train=nope.tok"), "training data missing"),
		named(trainWith([]string{"val.tok"}, goodConfig, "data.val=val.tok"), "validation data missing"),
		badCase{name: "out parent is a file", cmd: "train", want: []string{"afile"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			p := fileParent(t, cd)
			return []string{"--config", fix("run.toml"), "--out", p}, []string{p}
		}},
		badCase{name: "out dir read-only", cmd: "train", want: []string{"ro"}, root: true, setup: func(t *testing.T, cd string) ([]string, []string) {
			p := readOnly(t, cd)
			return []string{"--config", fix("run.toml"), "--out", p}, []string{p}
		}},
		badCase{name: "resume without a run", cmd: "train", want: []string{"config.toml"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			os.Mkdir(filepath.Join(cd, "empty"), 0o755)
			return []string{"--resume", filepath.Join(cd, "empty")}, []string{"empty"}
		}},
	)
	resumeBroken := func(name, want string, edit func(t *testing.T, ck string)) badCase {
		return badCase{name: name, cmd: "train", want: []string{want}, setup: func(t *testing.T, cd string) ([]string, []string) {
			run := copyDir(t, cd, "run")
			edit(t, filepath.Join(run, "checkpoints", "step-000002"))
			return []string{"--resume", run}, []string{"run"}
		}}
	}
	for _, key := range []string{"seed", "lr", "gamma", "steps"} {
		cs = append(cs, badCase{name: "resume edited " + key, cmd: "train", want: []string{"config.toml", "differs"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			run := copyDir(t, cd, "run")
			p := filepath.Join(run, rundir.ConfigFile)
			lines := strings.Split(string(read(t, p)), "\n")
			edited := false
			for i, l := range lines {
				if strings.HasPrefix(strings.TrimSpace(l), key+" = ") {
					lines[i] = key + " = 3"
					edited = true
					break
				}
			}
			if !edited {
				t.Fatalf("config.toml has no %s", key)
			}
			write(t, run, rundir.ConfigFile, []byte(strings.Join(lines, "\n")))
			os.Remove(filepath.Join(run, "final", "model.safetensors")) // unfinished: resume would train
			return []string{"--resume", run}, []string{"run"}
		}})
	}
	cs = append(cs,
		resumeBroken("resume corrupt state", "state.json", func(t *testing.T, ck string) { write(t, ck, "state.json", []byte(`{"step": 2,`)) }),
		resumeBroken("resume foreign state", "state.json", func(t *testing.T, ck string) {
			write(t, ck, "state.json", []byte(`{"step": 2, "tokens": 64, "adam_step": 2, "metrics_bytes": 1000000000}`))
		}),
		resumeBroken("resume truncated optimizer", "optimizer.safetensors", func(t *testing.T, ck string) {
			b := read(t, filepath.Join(ck, "optimizer.safetensors"))
			write(t, ck, "optimizer.safetensors", b[:len(b)/2])
		}),
		resumeBroken("resume NaN weights", "NaN", func(t *testing.T, ck string) {
			rewriteWeightsIn(t, ck, "embed", true, false)
		}),
		badCase{name: "full disk", cmd: "train", want: []string{"file too large"}, fsize: 32 << 10, setup: func(t *testing.T, cd string) ([]string, []string) {
			return []string{"--config", fix("run.toml"), "--out", runOut(cd)}, nil
		}},
	)

	// data prepare
	prep := func(name string, want []string, in func(t *testing.T, cd string) []string, extra ...string) badCase {
		return badCase{name: name, cmd: "data prepare", want: want, setup: func(t *testing.T, cd string) ([]string, []string) {
			args := []string{"--out", filepath.Join(cd, "prepared")}
			if !slices.Contains(extra, "--vocab") && !slices.ContainsFunc(extra, func(a string) bool { return strings.HasPrefix(a, "--vocab=") }) &&
				!slices.Contains(extra, "--tokenizer") {
				args = append(args, "--vocab", "300")
			}
			for _, p := range in(t, cd) {
				args = append(args, "--in", p)
			}
			return append(args, extra...), []string{"prepared"}
		}}
	}
	corpus := func(*testing.T, string) []string { return []string{fix("corpus.jsonl")} }
	file := func(name string, b []byte) func(t *testing.T, cd string) []string {
		return func(t *testing.T, cd string) []string { return []string{write(t, cd, name, b)} }
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	corpusBytes, _ := os.ReadFile(fix("corpus.jsonl"))
	zw.Write(corpusBytes)
	zw.Close()
	cs = append(cs,
		prep("input missing", []string{"nope.jsonl"}, func(_ *testing.T, cd string) []string { return []string{filepath.Join(cd, "nope.jsonl")} }),
		prep("unsupported extension", []string{"x.csv"}, func(t *testing.T, cd string) []string {
			write(t, cd, "in/x.csv", []byte("a,b\n"))
			return []string{filepath.Join(cd, "in")}
		}),
		prep("empty directory", []string{"in"}, func(t *testing.T, cd string) []string {
			os.Mkdir(filepath.Join(cd, "in"), 0o755)
			return []string{filepath.Join(cd, "in")}
		}),
		prep("empty input", []string{"empty.jsonl", "empty corpus"}, file("empty.jsonl", nil)),
		prep("invalid JSON line", []string{"bad.jsonl", "line 2"}, file("bad.jsonl", []byte("{\"text\": \"ok\"}\n{\"text\": \n"))),
		prep("text not a string", []string{"bad.jsonl", "line 1"}, file("bad.jsonl", []byte("{\"text\": 5}\n"))),
		prep("truncated gzip", []string{"cut.jsonl.gz"}, file("cut.jsonl.gz", gz.Bytes()[:gz.Len()/2])),
		prep("corrupt parquet", []string{"bad.parquet"}, file("bad.parquet", []byte("PAR1 this is not a parquet file PAR1"))),
		prep("parquet claiming a huge footer", []string{"bad.parquet"}, file("bad.parquet", []byte("PAR1PAR1PAR1"))),
		prep("vocabulary too small", []string{"--vocab 10: must be in [257"}, corpus, "--vocab", "10"),
		prep("negative vocabulary", []string{"--vocab -3: must be in [257"}, corpus, "--vocab=-3"),
		prep("negative vocabulary after a space", []string{"--vocab -3: must be in [257"}, corpus, "--vocab", "-3"),
		prep("zero vocabulary", []string{"--vocab 0: must be in [257"}, corpus, "--vocab", "0"),
		prep("absurd vocabulary", []string{"--vocab 1000000000: must be in [257, 16777216]"}, corpus, "--vocab", "1000000000"),
		prep("validation fraction above 1", []string{"validation fraction"}, corpus, "--val-fraction", "2"),
		prep("NaN validation fraction", []string{"validation fraction"}, corpus, "--val-fraction", "NaN"),
		prep("zero tokenizer sample", []string{"--tokenizer-sample-mb"}, corpus, "--tokenizer-sample-mb", "0"),
		prep("broken tokenizer", []string{"tok.json"}, corpus, "--tokenizer", "TOK"),
		badCase{name: "out parent is a file", cmd: "data prepare", want: []string{"afile"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			p := fileParent(t, cd)
			return []string{"--in", fix("corpus.jsonl"), "--out", p, "--vocab", "300"}, []string{p}
		}},
		badCase{name: "out dir read-only", cmd: "data prepare", want: []string{"ro"}, root: true, setup: func(t *testing.T, cd string) ([]string, []string) {
			p := readOnly(t, cd)
			return []string{"--in", fix("corpus.jsonl"), "--out", p, "--vocab", "300"}, []string{p}
		}},
		badCase{name: "full disk", cmd: "data prepare", want: []string{"file too large"}, fsize: 2048, setup: func(t *testing.T, cd string) ([]string, []string) {
			return []string{"--in", fix("corpus.jsonl"), "--out", filepath.Join(cd, "prepared"), "--vocab", "300"}, []string{"prepared"}
		}},
		badCase{name: "embedded with --val-fraction", cmd: "data prepare", want: []string{"--val-fraction"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			return []string{"--out", filepath.Join(cd, "prepared"), "--val-fraction", "0.3"}, []string{"prepared"}
		}},
	)
	// The broken tokenizer case writes its file in setup: patch its argument.
	for i := range cs {
		if cs[i].name == "broken tokenizer" {
			inner := cs[i].setup
			cs[i].setup = func(t *testing.T, cd string) ([]string, []string) {
				args, out := inner(t, cd)
				p := write(t, cd, "tok.json", []byte(`{"model": {"type": "BPE", "vocab": {"a": 5}}}`))
				for j := range args {
					if args[j] == "TOK" {
						args[j] = p
					}
				}
				return args, out
			}
		}
	}

	// init
	initOut := func(cd string) string { return filepath.Join(cd, "model") }
	initWith := func(name string, want []string, extra ...string) badCase {
		return badCase{name: name, cmd: "init", want: want, setup: func(t *testing.T, cd string) ([]string, []string) {
			return append([]string{"--preset", "tiny", "--out", initOut(cd)}, extra...), []string{"model"}
		}}
	}
	cs = append(cs,
		initWith("unknown preset", []string{"nope"}, "--preset", "nope"),
		initWith("unknown --set key", []string{"hidden_sise"}, "--set", "hidden_sise=3"),
		initWith("negative width", []string{"hidden_size"}, "--set", "hidden_size=-1"),
		initWith("absurd width", []string{"hidden_size"}, "--set", "hidden_size=1000000000"),
		initWith("NaN norm eps", []string{"norm_eps"}, "--set", "norm_eps=nan"),
		initWith("bad shard size", []string{"--shard-size"}, "--shard-size", "lots"),
		badCase{name: "out parent is a file", cmd: "init", want: []string{"afile"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			p := fileParent(t, cd)
			return []string{"--preset", "tiny", "--out", p}, []string{p}
		}},
		badCase{name: "out dir read-only", cmd: "init", want: []string{"ro"}, root: true, setup: func(t *testing.T, cd string) ([]string, []string) {
			p := readOnly(t, cd)
			return []string{"--preset", "tiny", "--out", p}, []string{p}
		}},
		badCase{name: "full disk", cmd: "init", want: []string{"file too large"}, fsize: 64 << 10, setup: func(t *testing.T, cd string) ([]string, []string) {
			return []string{"--preset", "tiny", "--out", initOut(cd)}, []string{"model"}
		}},
	)

	// eval-tasks
	et := func(name string, want []string, args func(t *testing.T, cd string) []string) badCase {
		return badCase{name: name, cmd: "eval-tasks", want: want, setup: func(t *testing.T, cd string) ([]string, []string) {
			return args(t, cd), nil
		}}
	}
	cs = append(cs,
		et("task file missing", []string{"nope.jsonl"}, func(_ *testing.T, cd string) []string {
			return []string{"--model", fix("model"), "--task", "lambada=" + filepath.Join(cd, "nope.jsonl")}
		}),
		et("task file is a directory", []string{"dir.jsonl"}, func(_ *testing.T, cd string) []string {
			os.Mkdir(filepath.Join(cd, "dir.jsonl"), 0o755)
			return []string{"--model", fix("model"), "--task", "lambada=" + filepath.Join(cd, "dir.jsonl")}
		}),
		et("unknown task kind", []string{"frobnicate"}, func(*testing.T, string) []string {
			return []string{"--model", fix("model"), "--task", "frobnicate=" + fix("lambada.jsonl")}
		}),
		et("no valid records", []string{"bad.jsonl", "no valid records"}, func(t *testing.T, cd string) []string {
			return []string{"--model", fix("model"), "--task", "lambada=" + write(t, cd, "bad.jsonl", []byte("{\"context\": 1}\nnot json\n"))}
		}),
		et("empty task file", []string{"empty.jsonl"}, func(t *testing.T, cd string) []string {
			return []string{"--model", fix("model"), "--task", "lambada=" + write(t, cd, "empty.jsonl", nil)}
		}),
		et("strict malformed record", []string{"bad.jsonl:2"}, func(t *testing.T, cd string) []string {
			b := append(read(t, fix("lambada.jsonl")), "{\"context\": \"x\"}\n"...)
			lines := bytes.SplitAfter(b, []byte("\n"))
			b = bytes.Join([][]byte{lines[0], lines[2]}, nil)
			return []string{"--model", fix("model"), "--strict-records", "--task", "lambada=" + write(t, cd, "bad.jsonl", b)}
		}),
		et("no tokenizer", []string{"tokenizer.json"}, func(t *testing.T, cd string) []string {
			m := copyDir(t, cd, "model")
			os.Remove(filepath.Join(m, "tokenizer.json"))
			return []string{"--model", m, "--task", "lambada=" + fix("lambada.jsonl")}
		}),
		et("broken tokenizer", []string{"tok.json"}, func(t *testing.T, cd string) []string {
			return []string{"--model", fix("model"), "--tokenizer", write(t, cd, "tok.json", []byte("{")), "--task", "lambada=" + fix("lambada.jsonl")}
		}),
		et("zero batch", []string{"--batch"}, func(*testing.T, string) []string {
			return []string{"--model", fix("model"), "--batch", "0", "--task", "lambada=" + fix("lambada.jsonl")}
		}),
		et("few-shot for no task", []string{"--fewshot"}, func(*testing.T, string) []string {
			return []string{"--model", fix("model"), "--task", "lambada=" + fix("lambada.jsonl"), "--fewshot", "gsm8k=" + fix("lambada.jsonl")}
		}),
		badCase{name: "stdout full", cmd: "eval-tasks", want: []string{"write"}, full: true, setup: func(t *testing.T, cd string) ([]string, []string) {
			return []string{"--model", fix("model"), "--task", "lambada=" + fix("lambada.jsonl")}, nil
		}},
	)

	// analyze and audit
	cs = append(cs,
		badCase{name: "zero probes", cmd: "analyze", want: []string{"probe"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			return []string{"--model", fix("model"), "--tokens", fix("tokens.tok"), "--probes", "0"}, nil
		}},
		badCase{name: "stdout full", cmd: "analyze", want: []string{"write"}, full: true, setup: func(t *testing.T, cd string) ([]string, []string) {
			return []string{"--model", fix("model"), "--tokens", fix("tokens.tok")}, nil
		}},
		badCase{name: "stdout full", cmd: "audit", want: []string{"write"}, full: true, setup: func(t *testing.T, cd string) ([]string, []string) {
			return []string{"--model", fix("model")}, nil
		}},
	)

	// bench and coordcheck
	cs = append(cs,
		badCase{name: "preset too large for memory", cmd: "bench", want: []string{"1.5b", "memory"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			return []string{"--preset", "1.5b", "--set", "max_position_embeddings=1048576"}, nil
		}},
		badCase{name: "unknown precision", cmd: "bench", want: []string{`"fp8"`, `"f32"`, `"bf16"`}, setup: func(t *testing.T, cd string) ([]string, []string) {
			return []string{"--preset", "tiny", "--steps", "1", "--warmup", "0", "--precision", "fp8"}, nil
		}},
		badCase{name: "width too large for memory", cmd: "coordcheck", want: []string{"--widths 64", "memory"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			return []string{"--gamma", "1", "--widths", "64,128", "--set", "max_position_embeddings=1048576"}, nil
		}},
	)

	// report
	cs = append(cs,
		badCase{name: "run dir missing", cmd: "report", want: []string{"nope"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			return []string{filepath.Join(cd, "nope"), "--out", filepath.Join(cd, "r.html")}, []string{"r.html"}
		}},
		badCase{name: "no runs", cmd: "report", want: []string{"empty"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			os.Mkdir(filepath.Join(cd, "empty"), 0o755)
			return []string{filepath.Join(cd, "empty"), "--out", filepath.Join(cd, "r.html")}, []string{"r.html"}
		}},
		badCase{name: "corrupt metrics", cmd: "report", want: []string{"metrics.jsonl"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			run := copyDir(t, cd, "run")
			write(t, run, "metrics.jsonl", []byte("{\"step\": 1}\nnot json\n{\"step\": 2}\n"))
			return []string{run, "--out", filepath.Join(cd, "r.html")}, []string{"r.html"}
		}},
		badCase{name: "out parent is a file", cmd: "report", want: []string{"afile"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			p := fileParent(t, cd)
			return []string{fix("run"), "--out", p}, []string{p}
		}},
	)
	cs = append(cs, studyBadCases()...)
	cs = append(cs, acceptedCases()...)
	cs = append(cs, modeCases()...)
	return cs
}

// demoPlanWith writes the built-in demo plan, edited by f, to cd/plan.toml and returns its path.
func demoPlanWith(t *testing.T, cd string, f func(string) string) string {
	t.Helper()
	p, err := experiment.Builtin("demo")
	if err != nil {
		t.Fatal(err)
	}
	return write(t, cd, "plan.toml", []byte(f(string(p.Text))))
}

// studyBadCases are the counts, budgets, names and nesting a study, a reproduction, the anchor commands, probes,
// fit and sweep refuse before they allocate or write anything: each fails naming the flag or key and its
// range, and leaves no output directory.
func studyBadCases() []badCase {
	var cs []badCase
	flag := func(name, cmd string, want []string, args ...string) badCase {
		return badCase{name: name, cmd: cmd, want: want, setup: func(t *testing.T, cd string) ([]string, []string) {
			return args, []string{"o"}
		}}
	}
	cs = append(cs,
		flag("seeds overflowing a slice", "study", []string{"--seeds 4611686018427387904", "1000"}, "demo", "--out", "o", "--seeds", "4611686018427387904"),
		flag("negative seeds", "study", []string{"--seeds -3"}, "demo", "--out", "o", "--seeds", "-3"),
		flag("negative steps", "study", []string{"--steps -1"}, "demo", "--out", "o", "--steps", "-1"),
		flag("negative index", "study", []string{"--index -5"}, "demo", "--out", "o", "--index", "-5"),
		flag("negative budget", "study", []string{"--budget -5m"}, "demo", "--out", "o", "--budget", "-5m"),
		flag("empty out", "study", []string{`--out ""`}, "demo", "--out", ""),
		flag("a billion seeds", "reproduce", []string{"--seeds 1000000000"}, "--out", "o", "--seeds", "1000000000"),
		flag("infinite minutes", "demo", []string{"--minutes", "Inf"}, "--out", "o", "--minutes", "inf"),
		flag("1e300 minutes", "demo", []string{"--minutes", "1e+300"}, "--out", "o", "--minutes", "1e300"),
		flag("NaN minutes", "demo", []string{"--minutes", "NaN"}, "--out", "o", "--minutes", "NaN"),
		flag("negative windows", "demo", []string{"--windows -1"}, "--out", "o", "--windows", "-1", "--steps", "1"),
		flag("negative examples", "anchor diagram", []string{"--examples -5"}, "--out", "o", "--examples", "-5"),
		flag("threads past the pool", "anchor diagram", []string{"--threads 100000"}, "--out", "o", "--threads", "100000"),
		flag("a million jobs", "anchor diagram", []string{"--jobs 1000000"}, "--out", "o", "--jobs", "1000000"),
		flag("duplicate seeds", "anchor diagram", []string{"seed 1 is listed twice"}, "--out", "o", "--seeds", "1,1"),
		flag("1e8 examples", "anchor make", []string{"--examples 100000000"}, "--out", "o", "--examples", "100000000"),
		flag("1e9 per combination", "anchor make", []string{"--per-combo 1000000000"}, "--task", "anchor-mix", "--out", "o", "--per-combo", "1000000000"),
		flag("1e12 anchor examples", "probes make", []string{"--n 1000000000000"}, "--task", "anchor", "--out", "o", "--n", "1000000000000"),
		flag("1e9 resamples", "fit", []string{"--bootstrap 1000000000"}, fix("tokens.tok"), "--bootstrap", "1000000000"),
		flag("a million jobs", "sweep run", []string{"1000000"}, fix("run/config.toml"), "--out", "o", "--jobs", "1000000"),
		flag("negative index", "sweep run", []string{"--index -4"}, fix("run/config.toml"), "--out", "o", "--index", "-4"),
	)
	plan := func(name string, want []string, f func(string) string) badCase {
		return badCase{name: name, cmd: "study", want: want, setup: func(t *testing.T, cd string) ([]string, []string) {
			return []string{demoPlanWith(t, cd, f), "--out", filepath.Join(cd, "o")}, []string{"o", "x", "../x"}
		}}
	}
	group := func(name string) func(string) string {
		return func(s string) string {
			return s + fmt.Sprintf("\n[[group]]\nname = %q\naxes = { \"init.gamma\" = [1.0] }\n", name)
		}
	}
	arm := func(name, set string) func(string) string {
		return func(s string) string {
			return s + fmt.Sprintf("\n[[group]]\nname = \"x\"\n[[group.arm]]\nname = %q\nset = { %s }\n", name, set)
		}
	}
	replace := func(old, new string) func(string) string {
		return func(s string) string { return strings.Replace(s, old, new, 1) }
	}
	cs = append(cs,
		plan("group ..", []string{`".."`, "group 2"}, group("..")),
		plan("group .", []string{`"."`}, group(".")),
		plan("group data", []string{`"data"`, "own files"}, group("data")),
		plan("arm name with a newline", []string{`arm "a\nb"`}, arm("a\nb", `"init.gamma" = 1.0`)),
		plan("arm sets train.steps", []string{"train.steps is set by the plan"}, arm("a", `"train.steps" = 5`)),
		plan("arm sets seed", []string{"seed is set by the plan"}, arm("a", `seed = 5`)),
		plan("arm sets vocab_size", []string{"model.vocab_size is set by the plan"}, arm("a", `"model.vocab_size" = 5`)),
		plan("duplicate seeds", []string{"seed 0 is listed twice"}, replace("seeds = [0]", "seeds = [0, 0]")),
		plan("infinite budget", []string{"budget.minutes = +Inf"}, replace("minutes = 5", "minutes = inf")),
		plan("NaN budget", []string{"budget"}, replace("minutes = 5", "minutes = nan")),
		plan("1e300 budget", []string{"budget.minutes = 1e+300"}, replace("minutes = 5", "minutes = 1e300")),
		plan("arms × seeds", []string{"runs, more than 10000"}, func(s string) string {
			seeds := make([]string, 1000)
			for i := range seeds {
				seeds[i] = strconv.Itoa(i)
			}
			return strings.Replace(s, "seeds = [0]", "seeds = ["+strings.Join(seeds, ",")+"]", 1) + // 4 arms and 7 points
				"\n[[group]]\nname = \"x\"\naxes = { \"init.gamma\" = [0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0] }\n"
		}),
		plan("nested inline tables", []string{"nested", "more than the 64"}, func(s string) string {
			return s + "\nz = " + strings.Repeat("{a = ", 1_000_000) + "1" + strings.Repeat("}", 1_000_000) + "\n"
		}),
		flag("empty out", "anchor diagram", []string{`--out ""`}, "--out", ""),
		flag("empty out", "anchor make", []string{`--out ""`}, "--out="),
		flag("empty out", "probes make", []string{`--out ""`}, "--out", ""),
		flag("empty out", "train", []string{`--out ""`}, "--config", fix("run.toml"), "--out", ""),
		plan("exclude of no group", []string{`report.exclude: no group "nope"`}, replace("[report]\n", "[report]\nexclude = [\"nope\"]\n")),
		// Issue 49: a misspelt key of reproduce's in a [[tier]] was ignored where study ran the plan.
		plan("a misspelt tier key", []string{"plan.toml: unknown key tier.anchr_steps", "the study design's anchor_steps"}, func(s string) string {
			return s + "\n[[tier]]\nname = \"t\"\nminutes = 5\nanchr_steps = 3\n"
		}),
		badCase{name: "data of another vocabulary", cmd: "study", want: []string{"vocabulary of 512", "4096"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			os.MkdirAll(filepath.Join(cd, "o", "data"), 0o755)
			b, _ := json.Marshal(data.Stats{Source: "embedded", VocabSize: 512})
			write(t, filepath.Join(cd, "o", "data"), data.StatsFile, b)
			return []string{"demo", "--out", filepath.Join(cd, "o"), "--steps", "1"}, []string{"o"}
		}},
		badCase{name: "sizing.json a FIFO", cmd: "study", want: []string{"sizing.json", "FIFO"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			os.MkdirAll(filepath.Join(cd, "o"), 0o755)
			if err := syscall.Mkfifo(filepath.Join(cd, "o", "sizing.json"), 0o644); err != nil {
				t.Fatalf("making the FIFO: %v", err)
			}
			return []string{"demo", "--out", filepath.Join(cd, "o"), "--budget", "1m"}, nil
		}},
	)
	render := func(name string, want []string, mk func(t *testing.T, dir string)) badCase {
		return badCase{name: name, cmd: "anchor render", want: want, setup: func(t *testing.T, cd string) ([]string, []string) {
			dir := filepath.Join(cd, "d")
			os.MkdirAll(dir, 0o755)
			mk(t, dir)
			return []string{dir}, []string{"d/table.txt", "d/diagram.html"}
		}}
	}
	goodGrid := []byte(`{"gammas":[0.5],"depths":[1],"lrs":[0.001],"seeds":[1],"shape":{"Dim":16,"FFN":32,"HeadDim":8,"Norm":"layernorm"},"budget":{"steps":4,"batch":8,"threads":1},"examples":200,"mix_per_combo":0,"mix_depth":0,"jobs":1}`)
	fifo := func(t *testing.T, p string) {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatalf("making the FIFO: %v", err)
		}
	}
	sparse := func(t *testing.T, p string) {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		f.Truncate(3 << 30)
		f.Close()
	}
	cs = append(cs,
		render("grid.json a FIFO", []string{"grid.json", "FIFO"}, func(t *testing.T, d string) { fifo(t, filepath.Join(d, "grid.json")) }),
		render("grid.json /dev/zero", []string{"grid.json", "device"}, func(t *testing.T, d string) { os.Symlink("/dev/zero", filepath.Join(d, "grid.json")) }),
		render("grid.json sparse 3 GB", []string{"grid.json", "too large"}, func(t *testing.T, d string) { sparse(t, filepath.Join(d, "grid.json")) }),
		render("grid.json of another diagram's settings", []string{"grid.json", "--jobs 0"}, func(t *testing.T, d string) {
			write(t, d, "grid.json", []byte(strings.Replace(string(goodGrid), `"jobs":1`, `"jobs":0`, 1)))
		}),
		render("results.jsonl a FIFO", []string{"results.jsonl", "FIFO"}, func(t *testing.T, d string) {
			write(t, d, "grid.json", goodGrid)
			fifo(t, filepath.Join(d, "results.jsonl"))
		}),
		render("results.jsonl /dev/zero", []string{"results.jsonl", "device"}, func(t *testing.T, d string) {
			write(t, d, "grid.json", goodGrid)
			os.Symlink("/dev/zero", filepath.Join(d, "results.jsonl"))
		}),
		render("results.jsonl sparse 3 GB", []string{"results.jsonl", "too large"}, func(t *testing.T, d string) {
			write(t, d, "grid.json", goodGrid)
			sparse(t, filepath.Join(d, "results.jsonl"))
		}),
		badCase{name: "rerun with other steps", cmd: "anchor diagram", want: []string{"other settings", "grid.json"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			d := filepath.Join(cd, "d")
			os.MkdirAll(filepath.Join(d, "runs", "x"), 0o755)
			write(t, d, "grid.json", goodGrid)
			return []string{"--out", d, "--gammas", "0.5", "--depths", "1", "--lrs", "1e-3", "--seeds", "1", "--dim", "16", "--ffn", "32",
				"--head-dim", "8", "--steps", "5", "--batch", "8", "--examples", "200", "--per-combo", "0", "--jobs", "1", "--threads", "1"}, []string{"d"}
		}},
		badCase{name: "a run lock that is a FIFO", cmd: "train", want: []string{"lock", "FIFO"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			run := copyDir(t, cd, "run")
			os.Remove(filepath.Join(run, "final", "model.safetensors"))
			fifo(t, filepath.Join(run, "lock"))
			return []string{"--resume", run}, nil
		}},
		badCase{name: "nested inline tables", cmd: "train", want: []string{"deep.toml", "nested"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			p := write(t, cd, "deep.toml", []byte("[model]\nx = "+strings.Repeat("[", 1_000_000)))
			return []string{"--config", p, "--out", filepath.Join(cd, "o")}, []string{"o"}
		}},
		badCase{name: "nested inline tables", cmd: "sweep plan", want: []string{"grid.toml", "nested"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			p := write(t, cd, "grid.toml", []byte("[axes]\n\"init.gamma\" = "+strings.Repeat("[{a = ", 500_000)))
			return []string{p}, nil
		}},
	)
	return cs
}

// snapshot describes a path for the "unchanged" check: "" when absent, else a hash of its tree (names, sizes
// and contents of every file below it).
func snapshot(p string) string {
	st, err := os.Lstat(p)
	if err != nil {
		return ""
	}
	if !st.IsDir() {
		b, _ := os.ReadFile(p)
		sum := sha256.Sum256(b)
		return "file " + hex.EncodeToString(sum[:])
	}
	var lines []string
	filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(p, q)
		if d.IsDir() {
			lines = append(lines, rel+"/")
			return nil
		}
		b, _ := os.ReadFile(q)
		sum := sha256.Sum256(b)
		lines = append(lines, rel+" "+hex.EncodeToString(sum[:8]))
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// badBuilt caches whether `smallinit <cmd> --help` works, i.e. the command is registered in this build.
var badBuilt = map[string]bool{}

func commandBuilt(cmd string) bool {
	ok, seen := badBuilt[cmd]
	if !seen {
		args := append(strings.Fields(cmd), "--help")
		ok = exec.Command(badBin, args...).Run() == nil
		badBuilt[cmd] = ok
	}
	return ok
}

// runBad runs the binary on one case and checks the catalogue's rules.
func runBad(t *testing.T, c badCase) (problems []string) {
	fail := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	cd := t.TempDir()
	args, outs := c.setup(t, cd)
	args = append(strings.Fields(c.cmd), args...)
	before := map[string]string{}
	for i, o := range outs {
		if !filepath.IsAbs(o) {
			outs[i] = filepath.Join(cd, o)
		}
		before[outs[i]] = snapshot(outs[i])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, badBin, args...)
	if c.fsize > 0 {
		cmd = exec.CommandContext(ctx, os.Args[0])
		argv, _ := json.Marshal(append([]string{badBin}, args...))
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", badFsizeEnv, c.fsize), badExecEnv+"="+string(argv))
	}
	cmd.Dir = cd
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if c.full {
		full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
		if err != nil {
			t.Skip("no /dev/full")
		}
		defer full.Close()
		cmd.Stdout = full
	}
	err := cmd.Run()
	msg := stderr.String()
	var ee *exec.ExitError
	switch {
	case err == nil:
		fail("exit 0, want a failure\nstdout: %.500s\nstderr: %.500s", stdout.String(), msg)
	case ctx.Err() != nil:
		fail("still running after 2 minutes")
	case !errorsAs(err, &ee) || !ee.Exited():
		fail("did not exit normally: %v\nstderr: %.2000s", err, msg)
	}
	if strings.Contains(msg, "goroutine ") || strings.Contains(msg, "panic:") {
		fail("stack trace in stderr:\n%.3000s", msg)
	}
	var lines []string
	for _, l := range strings.Split(msg, "\n") {
		if strings.HasPrefix(l, "smallinit:") {
			lines = append(lines, l)
		}
	}
	if err != nil && len(lines) != 1 {
		fail("want one message line starting with \"smallinit:\", have %d:\n%.2000s", len(lines), msg)
	} else if err != nil {
		t.Log(lines[0])
		for _, w := range c.want {
			if !strings.Contains(lines[0], w) {
				fail("message does not name %q: %s", w, lines[0])
			}
		}
		if len(lines[0]) > 1000 {
			fail("message of %d bytes", len(lines[0]))
		}
	}
	for _, o := range outs {
		if after := snapshot(o); after != before[o] {
			if before[o] == "" {
				fail("partial output left behind: %s\n%s", o, after)
			} else {
				fail("output %s changed", o)
			}
		}
	}
	// Nothing half-written anywhere in the case's directory.
	filepath.WalkDir(cd, func(p string, d fs.DirEntry, err error) error {
		if err == nil && (strings.Contains(d.Name(), ".tmp") || strings.HasPrefix(d.Name(), ".dump")) {
			fail("temporary file left behind: %s", p)
		}
		return nil
	})
	return problems
}

func errorsAs(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*ee = e
	return ok
}

// TestBadInputCatalogue runs every command of the catalogue on every broken input.
func TestBadInputCatalogue(t *testing.T) {
	root := os.Geteuid() == 0
	for _, c := range badCases() {
		// An input a command accepts by design (analyze and audit never allocate activations for an absurd
		// context) is not a bad input for it; permissions do not stop root, so the read-only cases need a
		// non-root user (the "parent is a file" cases cover unwritable outputs for root).
		if c.designOK || (c.root && root) {
			continue
		}
		t.Run(strings.ReplaceAll(c.cmd, " ", "_")+"/"+strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			if !commandBuilt(c.cmd) {
				t.Fatalf("smallinit %s --help fails: the command is missing", c.cmd)
			}
			if problems := runBad(t, c); len(problems) > 0 {
				t.Error(strings.Join(problems, "\n"))
			}
		})
	}
}

// TestCompareDumpToDevice: --dump to something that is not a regular file (here a symbolic link to /dev/null,
// as /dev/stdout is one) writes to it directly; the temporary file and rename used for regular files would
// have replaced the link (for /dev/stdout, system-wide when run as root) with a file.
func TestCompareDumpToDevice(t *testing.T) {
	cd := t.TempDir()
	link := filepath.Join(cd, "stdout")
	if err := os.Symlink("/dev/null", link); err != nil {
		t.Skipf("no symbolic links on this file system: %v", err)
	}
	out, err := exec.Command(badBin, "compare", "--a", fix("model"), "--b", fix("model2"), "--tokens", fix("tokens.tok"), "--dump", link).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("--dump replaced the link %s: %v %v", link, st.Mode(), err)
	}
}
