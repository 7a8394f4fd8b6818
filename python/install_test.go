package python

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocumentedInstallWorksOffline installs the package the way docs/pytorch.md says, `pip install
// --no-build-isolation ./python`, into a scratch venv that sees the system's torch (--system-site-packages), with
// the package index switched off, then imports it from another directory and runs its command.
func TestDocumentedInstallWorksOffline(t *testing.T) {
	py := needTorch(t)
	if testing.Short() {
		t.Skip("builds a venv and a wheel: not in -short")
	}
	if exec.Command(py, "-c", "import venv, ensurepip, setuptools").Run() != nil {
		t.Skip("no venv/ensurepip/setuptools for " + py + " (Debian: apt-get install -y python3-venv python3-setuptools)")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src", "python")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"pyproject.toml", "README.md", "smallinit_torch"} {
		if out, err := exec.Command("cp", "-r", f, filepath.Join(src, f)).CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v\n%s", f, err, out)
		}
	}
	venv := filepath.Join(dir, "venv")
	if out, err := exec.Command(py, "-m", "venv", "--system-site-packages", venv).CombinedOutput(); err != nil {
		t.Fatalf("python -m venv: %v\n%s", err, out)
	}
	vpy := filepath.Join(venv, "bin", "python")
	pip := exec.Command(vpy, "-m", "pip", "install", "--no-build-isolation", "./python")
	pip.Dir = filepath.Dir(src)
	pip.Env = append(os.Environ(), "PIP_NO_INDEX=1", "PIP_DISABLE_PIP_VERSION_CHECK=1", "PYTHONPATH=")
	if out, err := pip.CombinedOutput(); err != nil {
		t.Fatalf("pip install --no-build-isolation ./python (offline): %v\n%s", err, out)
	}
	check := exec.Command(vpy, "-c", `import smallinit_torch, torch
from smallinit_torch import *
w = smallinit_torch.init.gamma_normal_(torch.empty(64, 256), gamma=1.0)
assert smallinit_torch.__file__.startswith(`+"\""+venv+"\""+`), smallinit_torch.__file__
import importlib.resources as r
assert r.files("smallinit_torch").joinpath("py.typed").is_file()
assert r.files("smallinit_torch").joinpath("train_defaults.json").is_file()
print("ok", torch.__version__)`)
	check.Dir = dir
	check.Env = append(os.Environ(), "PYTHONPATH=")
	out, err := check.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ok ") {
		t.Fatalf("the installed package: %v\n%s", err, out)
	}
	cmd := exec.Command(filepath.Join(venv, "bin", "smallinit-torch"), "--help")
	cmd.Env = append(os.Environ(), "PYTHONPATH=")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "train") {
		t.Fatalf("smallinit-torch --help: %v\n%s", err, out)
	}
	t.Logf("installed offline into a venv with %s", strings.TrimSpace(string(out)))
}
