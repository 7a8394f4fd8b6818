package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestContrastRefusesBadInput: contrast names the flag or file it cannot use, before reading any run.
func TestContrastRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	ok := contrastCmd{Outs: []string{dir}, A: "init.gamma=0.5", B: "init.gamma=1", Alpha: 0.05}
	for _, tc := range []struct {
		edit func(*contrastCmd)
		want string
	}{
		{func(c *contrastCmd) {}, filepath.Join(dir, "summary.json")},
		{func(c *contrastCmd) { c.Alpha = 0 }, "--alpha 0"},
		{func(c *contrastCmd) { c.Alpha = 1.5 }, "--alpha 1.5"},
		{func(c *contrastCmd) { c.Delta = -0.01 }, "--delta -0.01"},
		{func(c *contrastCmd) { c.A = "init.gamma" }, "--a: override \"init.gamma\": want key=value"},
		{func(c *contrastCmd) { c.B = "=1" }, "--b"},
	} {
		c := ok
		tc.edit(&c)
		err := c.run(io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("contrast %+v: %v, want an error naming %q", c, err, tc.want)
		}
	}
}
