package main

import (
	"context"
	"fmt"
	"os"

	"github.com/smallinit/smallinit/summary"
	"github.com/smallinit/smallinit/sweep"
	"github.com/smallinit/smallinit/train"
)

// engineFlags choose what trains a study's or a reproduction's runs: the Go engine, or the PyTorch trainer
// (python -m smallinit_torch train) on a device. Both write the same run directories, and each run records its
// engine (pytorch.json for the PyTorch trainer's), so that the summary, the verdicts and the report read them
// alike.
type engineFlags struct {
	Engine      string      `default:"go" enum:"go,torch" help:"What trains each run: go (this binary) or torch (the PyTorch package's trainer, one process per run; several at once with --jobs N, sharing the device)."`
	Device      torchDevice `help:"--engine torch: the trainer's device: auto (the default: a CUDA GPU when there is one, else the CPU, said on the console), cpu, cuda or cuda:N."`
	TorchPython string      `help:"--engine torch: the Python interpreter that imports torch (default: the first of python3, /usr/bin/python3 and python that does)."`
	TorchPath   string      `type:"path" help:"--engine torch: a directory to put on PYTHONPATH for smallinit_torch (the repository's python/ when the package is not installed)."`
	TorchBatch  int         `help:"--engine torch: train up to this many new runs of one shape (seeds, γ, rates differ) as one batched model in one process (python -m smallinit_torch train-batch), started together (--jobs is raised to it); 0: one process per run."`
}

// torchDevice is --device, checked when the command line is parsed (train.CheckTorchDevice).
type torchDevice string

// UnmarshalText accepts auto, cpu, cuda and cuda:N.
func (d *torchDevice) UnmarshalText(b []byte) error {
	if err := train.CheckTorchDevice(string(b)); err != nil {
		return err
	}
	*d = torchDevice(b)
	return nil
}

// engine is the train.Engine the flags choose (nil: the Go engine). The PyTorch engine is preflighted before
// anything is written (train.TorchEngine.Preflight: the interpreter imports torch and smallinit_torch, the device
// exists, and bf16 is refused where it would not accumulate in float32), and the console names the interpreter,
// torch and device, and summary.json records them. With it, --jobs auto means one run at a time: the packing probe measures the Go engine on
// the CPU. The torch flags with --engine go are refused rather than ignored.
func (f engineFlags) engine(ctx context.Context, jobs *jobsFlag, precision string) (train.Engine, *summary.Engine, error) {
	if f.Engine != train.EngineTorch {
		for flag, v := range map[string]string{"--device": string(f.Device), "--torch-python": f.TorchPython, "--torch-path": f.TorchPath} {
			if v != "" {
				return nil, nil, fmt.Errorf("%s %s: only with --engine torch (the Go engine trains on this machine's CPU)", flag, v)
			}
		}
		if f.TorchBatch != 0 {
			return nil, nil, fmt.Errorf("--torch-batch %d: only with --engine torch", f.TorchBatch)
		}
		return nil, nil, nil
	}
	if f.TorchBatch < 0 {
		return nil, nil, fmt.Errorf("--torch-batch %d: want 0 (one process per run) or the runs a process trains", f.TorchBatch)
	}
	e, probe, err := train.TorchEngine{Python: f.TorchPython, PythonPath: f.TorchPath, Device: string(f.Device)}.Preflight(ctx)
	if err != nil {
		return nil, nil, err
	}
	if precision == "bf16" && probe.BF16 != "" {
		return nil, nil, fmt.Errorf("--precision bf16 with --engine torch on %s: %s", probe.Device, probe.BF16)
	}
	fmt.Fprintf(os.Stderr, "engine torch: %s\n", probe)
	if int(*jobs) == sweep.AutoJobs {
		*jobs = 1
	}
	if f.TorchBatch > 1 {
		e.Batch = train.NewTorchBatcher(f.TorchBatch)
		*jobs = jobsFlag(max(int(*jobs), f.TorchBatch))
		fmt.Fprintf(os.Stderr, "engine torch: up to %d runs of one shape in one process (--torch-batch)\n", f.TorchBatch)
	}
	return e, &summary.Engine{Name: train.EngineTorch, Python: probe.Python, Torch: probe.Torch, Device: probe.Device}, nil
}
