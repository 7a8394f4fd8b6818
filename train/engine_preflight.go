package train

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"
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
// checked: with Python empty, the first of torchPythons that imports torch. The probe also says whether bf16
// autocast accumulates in float32 on the device (TorchProbe.BF16).
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
