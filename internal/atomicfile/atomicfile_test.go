package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.json")
	for _, content := range []string{"old", "new"} {
		if err := Write(p, []byte(content)); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != content {
			t.Errorf("file holds %q, want %q", b, content)
		}
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	f, _ := Create(p)
	f.WriteString("half")
	f.Abort()
	ents, _ := os.ReadDir(dir)
	if b, _ := os.ReadFile(p); string(b) != "new" || len(ents) != 1 {
		t.Errorf("after Abort: %q, %d entries", b, len(ents))
	}
}

func TestWriteIntoMissingDirectoryFails(t *testing.T) {
	p := filepath.Join(t.TempDir(), "no", "f")
	if err := Write(p, []byte("x")); err == nil {
		t.Error("no error")
	}
}
