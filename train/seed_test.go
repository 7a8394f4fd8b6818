package train

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train/rundir"
)

// TestSeedFitsConfigToml: a seed above recipe.MaxSeed (what a TOML integer holds) is refused by Validate, so no run
// writes a config.toml it cannot read back; recipe.MaxSeed itself is written and read back unchanged.
func TestSeedFitsConfigToml(t *testing.T) {
	c := recipe.Default()
	c.Seed = recipe.MaxSeed + 1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "seed = 9223372036854775808") {
		t.Errorf("seed MaxSeed+1: %v, want it refused naming the key", err)
	}
	c.Seed = recipe.MaxSeed
	c.Data.Train = "train.tok"
	b, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), rundir.ConfigFile)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path, nil)
	if err != nil || back.Seed != recipe.MaxSeed {
		t.Errorf("seed MaxSeed read back as %d, %v", back.Seed, err)
	}
}
