package train

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train/rundir"
)

// TestEnginesRefuseEachOthersUnfinishedRuns: a run directory records its engine (pytorch.json for the PyTorch
// trainer), and neither engine resumes an unfinished run the other started (their checkpoints carry different
// settings), each naming the engine to resume it with.
func TestEnginesRefuseEachOthersUnfinishedRuns(t *testing.T) {
	goRun, torchRun := t.TempDir(), t.TempDir()
	for _, d := range []string{goRun, torchRun} {
		if err := os.WriteFile(filepath.Join(d, rundir.ConfigFile), []byte("seed = 0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(torchRun, TorchRecordFile), []byte(`{"engine": "torch"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := EngineOf(goRun); got != EngineGo {
		t.Errorf("EngineOf(a Go run) = %q", got)
	}
	if got := EngineOf(torchRun); got != EngineTorch {
		t.Errorf("EngineOf(a PyTorch run) = %q", got)
	}
	_, err := GoEngine{}.StartOrResume(context.Background(), recipe.Default(), torchRun, Options{})
	if err == nil || !strings.Contains(err.Error(), "resume it with --engine torch") {
		t.Errorf("Go engine on a PyTorch run: %v", err)
	}
	_, err = TorchEngine{Python: "/nonexistent/python"}.StartOrResume(context.Background(), recipe.Default(), goRun, Options{})
	if err == nil || !strings.Contains(err.Error(), "resume it with --engine go") {
		t.Errorf("PyTorch engine on a Go run: %v", err)
	}
}

// TestTorchRunIsFinishedOnlyByItsTrainer: a PyTorch trainer that exits 0 before finishing the run (here a
// script in the interpreter's place that prints two lines and exits) is an error naming the run, the
// trainer's exit and its last log lines; the Go engine never trains the run in its place (no final/, no
// metrics from Go).
func TestTorchRunIsFinishedOnlyByItsTrainer(t *testing.T) {
	root := t.TempDir()
	c := smallRun(t, root, 4)
	fake := filepath.Join(root, "fake-python")
	script := "#!/bin/sh\necho 'trainer: loading the model'\necho 'trainer: gave up quietly'\nexit 0\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "run")
	var log strings.Builder
	_, err := TorchEngine{Python: fake}.StartOrResume(context.Background(), c, dir, Options{Log: &log})
	if err == nil {
		t.Fatal("a trainer that exited 0 without finishing: no error")
	}
	t.Log(err)
	for _, want := range []string{dir, "exit status 0", "did not finish", "trainer: gave up quietly"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, serr := os.Stat(filepath.Join(dir, "final")); serr == nil {
		t.Error("the run was finished by someone other than its trainer")
	}
	if !strings.Contains(log.String(), "trainer: loading the model") {
		t.Errorf("the trainer's output was not forwarded to the log: %q", log.String())
	}
}
