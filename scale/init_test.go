package scale

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/safetensors"
)

func testPool(t *testing.T) *kernel.Pool {
	t.Helper()
	pool := kernel.NewPool(1)
	t.Cleanup(pool.Close)
	return pool
}

// applied returns an in-memory model initialised by gammainit.Apply, the reference of every streaming test.
func applied(t *testing.T, c arch.Config, r recipe.Init, seed uint64) (*model.Model, []gammainit.TensorStd) {
	t.Helper()
	m, err := model.New(c, 1, testPool(t))
	if err != nil {
		t.Fatal(err)
	}
	stds, err := gammainit.Apply(m, r, seed)
	if err != nil {
		t.Fatal(err)
	}
	return m, stds
}

func preset(t *testing.T, name string, sets ...string) arch.Config {
	t.Helper()
	p, err := arch.LookupPreset(name)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Config
	for _, kv := range sets {
		k, v, _ := strings.Cut(kv, "=")
		if err := c.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

func bf16Round(x float32) float32 {
	return math.Float32frombits(uint32(safetensors.F32ToBF16(x)) << 16)
}

// TestScaleInitMatchesApply is the test: init through the streaming path (f32 and bf16, one file or many
// tiny shards), model.Load, and compare with gammainit.Apply on an in-memory model: float32 bit-identical,
// bfloat16 equal to the rounded values, and the std table identical.
func TestScaleInitMatchesApply(t *testing.T) {
	fixed := 0.02
	cases := []struct {
		name   string
		cfg    arch.Config
		recipe recipe.Init
		dtype  safetensors.DType
		shard  int64
		opts   InitOptions
		files  int // expected safetensors files (0: more than one, exact count not checked)
	}{
		{"tiny f32 single", preset(t, "tiny"), recipe.DefaultInit(), safetensors.F32, 0, InitOptions{}, 1},
		{"tiny bf16 single", preset(t, "tiny"), recipe.DefaultInit(), safetensors.BF16, 0, InitOptions{}, 1},
		{"tiny f32 sharded", preset(t, "tiny"), recipe.Init{Rule: recipe.RuleGamma, Gamma: 0.5, DepthScale: true}, safetensors.F32, 300_000, InitOptions{}, 0},
		{"tiny bf16 sharded", preset(t, "tiny"), recipe.DefaultInit(), safetensors.BF16, 100_000, InitOptions{}, 0},
		{"tiny bf16 one tensor per shard", preset(t, "tiny"), recipe.DefaultInit(), safetensors.BF16, 1, InitOptions{}, len(preset(t, "tiny").Tensors())},
		{"tiny f32 small memory 3 workers", preset(t, "tiny"), recipe.Init{Rule: recipe.RuleKaiming}, safetensors.F32, 500_000,
			InitOptions{Workers: 3, Memory: 1 << 16}, 0},
		{"tiny-moe f32", preset(t, "tiny-moe", "shared_expert_intermediate_size=64"), recipe.Init{Rule: recipe.RuleXavier,
			Classes: map[string]recipe.InitOverride{arch.ClassEmbed: {Std: &fixed}}}, safetensors.F32, 1 << 20, InitOptions{}, 0},
		{"qwen3 layernorm gate tied bf16", preset(t, "tiny", "qk_norm=true", "norm=layernorm", "attn_gate=headwise", "tie_word_embeddings=true"),
			recipe.Init{Rule: recipe.RuleFixed, Std: 0.02}, safetensors.BF16, 200_000, InitOptions{}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const seed = 11
			ref, refStds := applied(t, tc.cfg, tc.recipe, seed)
			dir := filepath.Join(t.TempDir(), "m")
			o := tc.opts
			o.DType, o.ShardSize, o.Record = tc.dtype, tc.shard, &gammainit.Record{Recipe: tc.recipe, Seed: seed}
			var calls int
			var last int64
			o.Progress = func(done, total int64) {
				calls++
				if done < last || done > total {
					t.Errorf("progress %d of %d after %d", done, total, last)
				}
				last = done
			}
			res, err := Init(dir, tc.cfg, tc.recipe, seed, o)
			if err != nil {
				t.Fatal(err)
			}
			if calls != len(tc.cfg.Tensors()) || last != res.Bytes {
				t.Errorf("progress: %d calls ending at %d, want %d calls ending at %d", calls, last, len(tc.cfg.Tensors()), res.Bytes)
			}
			if want := tc.cfg.NumParams() * int64(tc.dtype.Size()); res.Bytes != want {
				t.Errorf("bytes %d, want %d", res.Bytes, want)
			}
			if !slices.Equal(res.Stds, refStds) {
				t.Errorf("std table differs from gammainit.Apply's:\n%v\n%v", res.Stds, refStds)
			}
			checkDrawnStds(t, tc.cfg, tc.recipe, res.Stds)
			var st []string
			for _, f := range res.Files {
				if strings.HasSuffix(f, ".safetensors") {
					st = append(st, f)
				}
			}
			if (tc.files > 0 && len(st) != tc.files) || (tc.files == 0 && len(st) < 2) {
				t.Errorf("%d safetensors files %v, want %d (0: several)", len(st), st, tc.files)
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != len(res.Files) {
				t.Errorf("directory holds %d entries, Init reports %v", len(ents), res.Files)
			}
			if _, err := os.Stat(filepath.Join(dir, safetensors.IndexFileName)); (err == nil) != (len(st) > 1) {
				t.Errorf("index present = %v with %d shards", err == nil, len(st))
			}

			m, init, err := model.Load(dir, 1, testPool(t))
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range ref.Params.Flat {
				if tc.dtype == safetensors.BF16 {
					want = bf16Round(want)
				}
				if got := m.Params.Flat[i]; math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("element %d: loaded %v, want %v", i, got, want)
				}
			}
			var rec struct {
				Recipe recipe.Init `json:"recipe"`
				Seed   uint64      `json:"seed"`
			}
			if err := json.Unmarshal(init, &rec); err != nil || rec.Seed != seed || rec.Recipe.Rule != tc.recipe.Rule {
				t.Errorf("smallinit_init %s (%v)", init, err)
			}
			b, _ := os.ReadFile(filepath.Join(dir, arch.ConfigFile))
			td, _ := TorchDtype(tc.dtype)
			if !bytes.Contains(b, []byte(`"torch_dtype": "`+td+`"`)) {
				t.Errorf("config.json does not say torch_dtype %s:\n%s", td, b)
			}
			if len(st) > 1 {
				checkIndex(t, dir, res.Bytes)
			}
		})
	}
}

// checkDrawnStds: every drawn tensor of c has a record whose intended σ is the recipe's (gammainit's StdFor) and
// whose drawn std is within sampling error of it: 5 standard errors of the std of n normal draws,
// 1/sqrt(2(n−1)) relative, plus 1e-6 for the float32 rounding; every drawn class is checked.
func checkDrawnStds(t *testing.T, c arch.Config, r recipe.Init, stds []gammainit.TensorStd) {
	t.Helper()
	byName := map[string]gammainit.TensorStd{}
	for _, s := range stds {
		byName[s.Name] = s
	}
	classes := map[string]int{}
	for _, spec := range c.Tensors() {
		if gammainit.StartOf(spec.Class) != gammainit.StartDrawn {
			continue
		}
		s, ok := byName[spec.Name]
		if !ok {
			t.Errorf("%s: no std record", spec.Name)
			continue
		}
		classes[spec.Class]++
		if want := r.StdFor(spec, c.Layers); s.Intended != want {
			t.Errorf("%s: intended σ %g, gammainit gives %g", spec.Name, s.Intended, want)
		}
		tol := 5/math.Sqrt(2*float64(spec.Size()-1)) + 1e-6
		if math.Abs(s.Drawn/s.Intended-1) > tol {
			t.Errorf("%s (%s, %d draws): drawn std %g, σ %g: off by %.3g, over the %.3g sampling tolerance",
				spec.Name, spec.Class, spec.Size(), s.Drawn, s.Intended, s.Drawn/s.Intended-1, tol)
		}
	}
	if len(classes) == 0 {
		t.Error("no drawn tensor checked")
	}
}

func checkIndex(t *testing.T, dir string, total int64) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, safetensors.IndexFileName))
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		Metadata  map[string]any    `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	if got, _ := idx.Metadata["total_size"].(float64); int64(got) != total {
		t.Errorf("metadata.total_size %v, want %d", idx.Metadata["total_size"], total)
	}
	r, err := safetensors.OpenModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if len(r.Tensors()) != len(idx.WeightMap) {
		t.Errorf("weight_map has %d entries, shards %d tensors", len(idx.WeightMap), len(r.Tensors()))
	}
}

// TestInitFilesMatchModelSave: a single-file float32 checkpoint is byte-identical to model.Save's (both files),
// and a bfloat16 one to safetensors.Writer's BF16 encoding of the same model.
func TestScaleInitFilesMatchModelSave(t *testing.T) {
	for _, name := range []string{"tiny", "tiny-moe"} {
		c := preset(t, name)
		r := recipe.DefaultInit()
		rec := &gammainit.Record{Recipe: r, Seed: 3}
		ref, _ := applied(t, c, r, 3)
		refDir := t.TempDir()
		if err := ref.Save(refDir, rec); err != nil {
			t.Fatal(err)
		}
		bf := safetensors.Create(filepath.Join(refDir, "bf16.safetensors"), map[string]string{"format": "pt"})
		for _, s := range ref.Specs {
			bf.AddFloat32As(s.Name, safetensors.BF16, s.Shape, ref.Params.Flat[s.Offset:s.Offset+s.Size()])
		}
		if err := bf.Close(); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			dtype     safetensors.DType
			refWeight string
		}{{safetensors.F32, arch.WeightsFile}, {safetensors.BF16, "bf16.safetensors"}} {
			dir := filepath.Join(t.TempDir(), "out")
			if _, err := Init(dir, c, r, 3, InitOptions{DType: tc.dtype, Record: rec}); err != nil {
				t.Fatal(err)
			}
			same := func(a, b string) {
				x, _ := os.ReadFile(filepath.Join(refDir, a))
				y, _ := os.ReadFile(filepath.Join(dir, b))
				if len(x) == 0 || !bytes.Equal(x, y) {
					t.Errorf("%s %s: %s (%d bytes) differs from the reference %s (%d bytes)", name, tc.dtype, b, len(y), a, len(x))
				}
			}
			same(tc.refWeight, arch.WeightsFile)
			if tc.dtype == safetensors.F32 {
				same(arch.ConfigFile, arch.ConfigFile)
			}
		}
	}
}

func TestScaleConfigMatchesModelSave(t *testing.T) {
	for _, c := range []arch.Config{
		preset(t, "tiny"), preset(t, "small-moe", "router_z_loss_coef=0.001", "capacity_factor=1.25"),
		preset(t, "tiny", "qk_norm=true", "norm=layernorm", "attn_gate=elementwise", "tie_word_embeddings=true", "head_dim=64"),
	} {
		m, err := model.New(c, 1, testPool(t))
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		rec := &gammainit.Record{Recipe: recipe.DefaultInit(), Seed: 1}
		if err := m.Save(dir, rec); err != nil {
			t.Fatal(err)
		}
		want, _ := os.ReadFile(filepath.Join(dir, arch.ConfigFile))
		got, err := configJSON(c, rec, "float32")
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("config.json differs from model.Save's (%v):\n%s\nwant\n%s", err, got, want)
		}
		dir2 := t.TempDir()
		if err := WriteConfig(dir2, c, nil, safetensors.BF16); err != nil {
			t.Fatal(err)
		}
		back, _, err := model.ReadConfig(dir2)
		if err != nil || !equalConfig(back, c) {
			t.Errorf("WriteConfig round trip: %+v (%v), want %+v", back, err, c)
		}
	}
}

func equalConfig(a, b arch.Config) bool {
	a.HeadDim, b.HeadDim = a.HeadSize(), b.HeadSize()
	return a == b
}

func TestScaleInitReplacesOnlyCheckpoints(t *testing.T) {
	c := preset(t, "tiny")
	r := recipe.DefaultInit()
	for _, tc := range []struct {
		name    string
		setup   func(dir string)
		wantErr string
	}{
		{"new", func(string) {}, ""},
		{"empty dir", func(dir string) { os.Mkdir(dir, 0o755) }, ""},
		{"stale single file and shards", func(dir string) {
			os.Mkdir(dir, 0o755)
			for _, f := range []string{"model.safetensors", "config.json", "model-00001-of-00009.safetensors", "model.safetensors.index.json"} {
				os.WriteFile(filepath.Join(dir, f), []byte("old"), 0o644)
			}
		}, ""},
		{"other files", func(dir string) {
			os.Mkdir(dir, 0o755)
			os.WriteFile(filepath.Join(dir, "config.json"), []byte("old"), 0o644)
			os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
		}, "notes.txt"},
		{"a file", func(dir string) { os.WriteFile(dir, []byte("x"), 0o644) }, "not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "m")
			tc.setup(dir)
			_, err := Init(dir, c, r, 1, InitOptions{ShardSize: 400_000})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one mentioning %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			} else {
				if _, err := os.Stat(filepath.Join(dir, arch.WeightsFile)); err == nil {
					t.Error("stale model.safetensors survived beside the new shards")
				}
				if _, _, err := model.Load(dir, 1, testPool(t)); err != nil {
					t.Error(err)
				}
			}
			ents, _ := os.ReadDir(parent)
			if len(ents) != 1 {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("parent holds %v: temporary directories left behind", names)
			}
		})
	}
}

func TestScalePlanShards(t *testing.T) {
	c := preset(t, "tiny")
	specs := c.Tensors()
	var total int64
	var largest int64
	for _, s := range specs {
		total += int64(s.Size()) * 2
		largest = max(largest, int64(s.Size())*2)
	}
	for _, tc := range []struct {
		max    int64
		shards int // 0: just check the invariants
	}{{0, 1}, {total, 1}, {total - 1, 2}, {1, len(specs)}, {largest, 0}, {100_000, 0}} {
		shards := PlanShards(specs, safetensors.BF16, tc.max)
		if tc.shards > 0 && len(shards) != tc.shards {
			t.Errorf("max %d: %d shards, want %d", tc.max, len(shards), tc.shards)
		}
		var n int
		var sum int64
		for i, s := range shards {
			if len(shards) > 1 && s.File != ShardName(i+1, len(shards)) || len(shards) == 1 && s.File != "model.safetensors" {
				t.Errorf("max %d: shard %d named %s", tc.max, i, s.File)
			}
			if tc.max > 0 && len(s.Tensors) > 1 && s.Bytes > tc.max {
				t.Errorf("max %d: shard %s holds %d bytes in %d tensors", tc.max, s.File, s.Bytes, len(s.Tensors))
			}
			for _, x := range s.Tensors {
				if x.Name != specs[n].Name {
					t.Fatalf("max %d: tensor %d is %s, want %s (order)", tc.max, n, x.Name, specs[n].Name)
				}
				n++
			}
			sum += s.Bytes
		}
		if n != len(specs) || sum != total {
			t.Errorf("max %d: %d tensors %d bytes, want %d and %d", tc.max, n, sum, len(specs), total)
		}
	}
	if got := ShardName(2, 13); got != "model-00002-of-00013.safetensors" {
		t.Errorf("ShardName = %s", got)
	}
}

func TestScaleParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{{"2GB", 2_000_000_000}, {"500MB", 500_000_000}, {"1GiB", 1 << 30}, {"1.5 gib", 3 << 29}, {"64KiB", 65536}, {"123", 123}, {"10b", 10}, {"0", -1}, {"-1GB", -1}, {"GB", -1}, {"2XB", -1}, {"inf", -1}} {
		got, err := ParseSize(tc.in)
		if tc.want < 0 {
			if err == nil {
				t.Errorf("ParseSize(%q) = %d, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

// TestScaleInitCancel: a cancelled init returns the context's error and leaves neither the directory nor its
// temporary files.
func TestScaleInitCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	parent := t.TempDir()
	dir := filepath.Join(parent, "m")
	n := 0
	_, err := Init(dir, preset(t, "tiny"), recipe.DefaultInit(), 1, InitOptions{ShardSize: 300_000, Context: ctx,
		Progress: func(done, total int64) {
			if n++; n == 5 {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 0 {
		t.Errorf("left behind %v", ents)
	}
}
