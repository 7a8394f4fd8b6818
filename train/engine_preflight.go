package train

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/model"
)

// TorchProbe is what TorchEngine.Preflight found: the interpreter, its torch, and the device the trainer runs on.
type TorchProbe struct {
	Python     string `json:"python"`      // the interpreter's sys.executable
	Torch      string `json:"torch"`       // torch.__version__
	Device     string `json:"device"`      // the torch device --device resolves to (cpu, cuda:0)
	DeviceName string `json:"device_name"` // the GPU's name, or the CPU's
	Auto       string `json:"auto"`        // --device auto on the CPU: why there is no GPU ("" otherwise)
	BF16       string `json:"bf16"`        // why bf16 autocast is refused on Device ("" = it accumulates in float32)
}

// String is the console's line for the probe: interpreter, torch, device (and why auto chose the CPU).
func (p TorchProbe) String() string {
	s := fmt.Sprintf("%s, torch %s, device %s (%s)", p.Python, p.Torch, p.Device, p.DeviceName)
	if p.Auto != "" {
		s += ": --device auto found no GPU (" + p.Auto + ")"
	}
	return s
}

// torchDevice is what --device may say: auto, cpu, cuda or cuda:N.
var torchDevice = regexp.MustCompile(`^(auto|cpu|cuda(:[0-9]+)?)$`)

// CheckTorchDevice refuses a --device value the trainer would not take (a meta device, a typo) before anything runs.
func CheckTorchDevice(d string) error {
	if !torchDevice.MatchString(d) {
		return fmt.Errorf("--device %q: want auto, cpu, cuda or cuda:N", d)
	}
	return nil
}

// torchPythons are the interpreters Preflight tries, in order, when TorchEngine.Python is empty: the first
// python3 on PATH may be a virtual environment or pyenv's without torch, where the system's has it.
func torchPythons() []string { return []string{"python3", "/usr/bin/python3", "python"} }

// preflightScript imports torch, then the package, so that the two failures are told apart (exit 3 and one
// line); then the package's preflight prints its JSON (smallinit_torch/preflight.py), or a device error (exit 2).
const preflightScript = `import sys
try:
    import torch
except BaseException as e:
    print("it cannot import torch (%s: %s)" % (type(e).__name__, e)); sys.exit(3)
try:
    from smallinit_torch.preflight import main
except BaseException as e:
    print("it imports torch %s but not smallinit_torch (%s: %s)" % (torch.__version__, type(e).__name__, e)); sys.exit(3)
sys.exit(main(sys.argv[1:]))
`

// Preflight checks, before a study writes anything, that the engine's interpreter imports torch and
// smallinit_torch and that its device exists, and returns the engine with Python set to the interpreter it
// checked (with Python empty, the first of torchPythons that imports torch) and Probe to what it found. The
// probe also says whether bf16 autocast accumulates in float32 on the device (TorchProbe.BF16).
func (e TorchEngine) Preflight(ctx context.Context) (TorchEngine, TorchProbe, error) {
	if e.Device != "" {
		if err := CheckTorchDevice(e.Device); err != nil {
			return e, TorchProbe{}, err
		}
	}
	cands := []string{e.Python}
	if e.Python == "" {
		cands = torchPythons()
	}
	var whys []string
	for _, py := range cands {
		f := e
		f.Python = py
		p, why, device := f.probe(ctx)
		switch {
		case why == "":
			f.Probe = p
			return f, p, nil
		case device: // the interpreter is fine, the device is not
			return e, p, errors.New(why)
		}
		whys = append(whys, py+": "+why)
	}
	const hint = "name an interpreter that imports torch with --torch-python, and put the repository's python/ on its path with --torch-path when smallinit_torch is not installed"
	if e.Python != "" {
		return e, TorchProbe{}, fmt.Errorf("--engine torch: --torch-python %s: %s: %s", e.Python, strings.TrimPrefix(whys[0], e.Python+": "), hint)
	}
	return e, TorchProbe{}, fmt.Errorf("--engine torch: no Python interpreter here imports torch and smallinit_torch (%s): %s", strings.Join(whys, "; "), hint)
}

// probe runs preflightScript with e's interpreter. why is "" when it passed; device says the failure is the
// device's (the interpreter imports both packages).
func (e TorchEngine) probe(ctx context.Context) (p TorchProbe, why string, device bool) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	dev := e.Device
	if dev == "" {
		dev = "auto"
	}
	cmd := e.command(ctx, "-c", preflightScript, "--device", dev)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 3:
		return p, firstLine(out.String()), false
	case errors.As(err, &ee) && ee.ExitCode() == 2:
		msg := strings.TrimPrefix(firstLine(errb.String()), "smallinit_torch: ")
		if !strings.HasPrefix(msg, "--device") {
			msg = "--device " + dev + ": " + msg
		}
		return p, msg, true
	case err != nil:
		msg := lastLine(errb.String()) // a traceback's last line is its error
		if msg == "" {
			msg = err.Error()
		}
		return p, "it does not run the preflight (" + msg + ")", false
	}
	if err := json.Unmarshal(out.Bytes(), &p); err != nil || p.Torch == "" {
		if firstLine(out.String()) == "" {
			return p, "it printed nothing for the preflight (is it a Python interpreter?)", false
		}
		return p, fmt.Sprintf("its preflight printed %q, not the probe's JSON", firstLine(out.String())), false
	}
	return p, "", false
}

// firstLine is the first non-empty line of s, trimmed.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// lastLine is the last non-empty line of s, trimmed.
func lastLine(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(ls[len(ls)-1])
}

// Throughput is the PyTorch trainer's training tokens/s for the model c at batch windows a step on e's device
// and precision ("" or "f32", "bf16", "auto" as the trainer resolves it), measured by `python -m smallinit_torch throughput` (its fast step on
// random tokens, the device synchronised around the timed steps): the probe a study's budget is sized from
// under --engine torch, where the Go engine's CPU benchmark would size GPU runs from a CPU's speed. Call it on
// the engine Preflight returned (its interpreter is the one checked).
func (e TorchEngine) Throughput(ctx context.Context, c arch.Config, batch int, precision string) (float64, error) {
	dir, err := os.MkdirTemp("", "smallinit-torch-probe-")
	if err != nil {
		return 0, fmt.Errorf("torch throughput probe: %w", err)
	}
	defer os.RemoveAll(dir)
	cj, err := model.ConfigJSON(c, nil, "float32")
	if err != nil {
		return 0, fmt.Errorf("torch throughput probe: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, arch.ConfigFile), cj); err != nil {
		return 0, fmt.Errorf("torch throughput probe: %w", err)
	}
	if precision == "" {
		precision = "f32"
	}
	dev := e.Device
	if dev == "" {
		dev = "auto"
	}
	cmd := e.command(ctx, "-m", "smallinit_torch", "throughput", "--model", dir, "--batch", strconv.Itoa(batch),
		"--device", dev, "--precision", precision, "--steps", strconv.Itoa(torchProbeSteps), "--warmup", "2")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := lastLine(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return 0, fmt.Errorf("torch throughput probe (%s on %s): %s", e.python(), dev, msg)
	}
	var r struct {
		TokensPerS float64 `json:"tokens_per_s"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || !(r.TokensPerS > 0) {
		return 0, fmt.Errorf("torch throughput probe (%s on %s): printed %q, want {\"tokens_per_s\": ...}", e.python(), dev, firstLine(out.String()))
	}
	return r.TokensPerS, nil
}

// torchProbeSteps are the timed steps of TorchEngine.Throughput.
const torchProbeSteps = 5

// ThroughputProber is an Engine that measures its own training throughput (TorchEngine, on its device): a
// budget is sized from it rather than from the Go engine's CPU benchmark (Benchmark).
type ThroughputProber interface {
	Throughput(ctx context.Context, c arch.Config, batch int, precision string) (float64, error)
}
