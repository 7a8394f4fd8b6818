package train

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train/rundir"
)

// TestStartRefusesWhatTheMachineCannotRun: a config whose precision names no row of the precision table, or
// whose threads exceed the kernels' pool, passes the recipe's own checks (recipe.Config.Validate needs no
// machine) but is refused by Validate, by Load and by Start before the run directory holds a config.toml.
func TestStartRefusesWhatTheMachineCannotRun(t *testing.T) {
	root := t.TempDir()
	good := smallRun(t, root, 2)
	for _, tc := range []struct {
		name, want string
		set        func(c *recipe.Config)
		sets       []string
	}{
		{"unknown precision", `train.precision = "fp8"`, func(c *recipe.Config) { c.Train.Precision = "fp8" }, []string{"train.precision=fp8"}},
		{"threads over the pool", "train.threads", func(c *recipe.Config) { c.Train.Threads = kernel.MaxWorkers + 1 },
			[]string{"train.threads=" + strings.Repeat("9", 7)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.set(&c)
			if err := c.Validate(); err != nil {
				t.Fatalf("the recipe's own checks refuse it: %v", err)
			}
			if err := Validate(c); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate: %v, want an error naming %s", err, tc.want)
			}
			if _, err := Load("", append([]string{"data.train=x.tok"}, tc.sets...)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load: %v, want an error naming %s", err, tc.want)
			}
			dir := filepath.Join(root, strings.ReplaceAll(tc.name, " ", "-"))
			if _, err := Start(context.Background(), c, dir, Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Start: %v, want an error naming %s", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, rundir.ConfigFile)); err == nil {
				t.Errorf("Start wrote %s for a config it refused", rundir.ConfigFile)
			}
		})
	}
}
