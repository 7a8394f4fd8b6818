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
