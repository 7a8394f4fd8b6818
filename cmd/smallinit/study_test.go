package main

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/experiment"
)

// TestLoadPlanSaysWhichItUsed: a plan name that is both a built-in and a path says which one runs: a readable
// file is run (and named); a directory or an oversized file of that name is an error naming it and the way
// out (the user meant their file); with no such path the built-in runs and nothing is said.
func TestLoadPlanSaysWhichItUsed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		make    func(t *testing.T)
		want    string // in the note ("": no note)
		builtin bool
		err     string // in the error ("": none)
	}{
		{"no such path", func(t *testing.T) {}, "", true, ""},
		{"a directory", func(t *testing.T) { os.Mkdir("demo", 0o755) }, "", false, "demo: is a directory, not a regular file; ./demo is not a plan file"},
		{"an oversized file", func(t *testing.T) {
			f, _ := os.Create("demo")
			f.Truncate(20 << 20)
			f.Close()
		}, "", false, "more than the 16 MiB"},
		{"a plan file", func(t *testing.T) {
			p, err := experiment.Builtin("demo")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile("demo", []byte(strings.Replace(string(p.Text), `title = "smallinit demo"`, `title = "mine"`, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "running the plan file ./demo, not the built-in plan demo", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wd, _ := os.Getwd()
			dir := t.TempDir()
			os.Chdir(dir)
			defer os.Chdir(wd)
			tc.make(t)
			var log strings.Builder
			p, err := loadPlan("demo", &log)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "run from another directory") {
					t.Errorf("%v, want an error containing %q and the way out", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" && log.Len() != 0 || !strings.Contains(log.String(), tc.want) {
				t.Errorf("note %q, want %q", log.String(), tc.want)
			}
			if (p.Title == "mine") == tc.builtin {
				t.Errorf("ran title %q, want the built-in %v", p.Title, tc.builtin)
			}
		})
	}
}

// TestLoadPlanOfADesign: `study reproduce` loads the reproduction's own plan (package reproduce's, no longer an
// experiment built-in) where nothing has its name; a directory of that name is the user's, refused with the way
// out; and the name is listed among the plans study takes.
func TestLoadPlanOfADesign(t *testing.T) {
	wd, _ := os.Getwd()
	os.Chdir(t.TempDir())
	defer os.Chdir(wd)
	var log strings.Builder
	p, err := loadPlan("reproduce", &log)
	if err != nil || p.Name != "reproduce" || log.Len() != 0 {
		t.Fatalf("plan %v, note %q, error %v; want the reproduce plan, no note", p, log.String(), err)
	}
	os.Mkdir("reproduce", 0o755)
	if _, err := loadPlan("reproduce", &log); err == nil || !strings.Contains(err.Error(), "./reproduce is not a plan file") || !strings.Contains(err.Error(), "run from another directory") {
		t.Errorf("a directory named reproduce: %v, want it refused with the way out", err)
	}
	if !slices.Contains(planNames(), "reproduce") || !slices.Contains(planNames(), "demo") {
		t.Errorf("plan names %v", planNames())
	}
}
