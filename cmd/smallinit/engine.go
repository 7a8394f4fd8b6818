package main

import (
	"github.com/smallinit/smallinit/sweep"
	"github.com/smallinit/smallinit/train"
)

// engineFlags choose what trains a study's or a reproduction's runs: the Go engine, or the PyTorch trainer
// (python -m smallinit_torch train) on a device. Both write the same run directories, and each run records its
// engine (pytorch.json for the PyTorch trainer's), so that the summary, the verdicts and the report read them
// alike.
type engineFlags struct {
	Engine      string `default:"go" enum:"go,torch" help:"What trains each run: go (this binary) or torch (the PyTorch package's trainer, one process per run; several at once with --jobs N, sharing the device)."`
	Device      string `default:"auto" help:"--engine torch: the trainer's device: auto (a CUDA GPU when there is one), cpu, cuda or cuda:N."`
	TorchPython string `default:"python3" help:"--engine torch: the Python interpreter that imports torch."`
	TorchPath   string `type:"path" help:"--engine torch: a directory to put on PYTHONPATH for smallinit_torch (the repository's python/ when the package is not installed)."`
}

// engine is the train.Engine the flags choose (nil: the Go engine). With the PyTorch engine, --jobs auto means one
// run at a time: the packing probe measures the Go engine on the CPU.
func (f engineFlags) engine(jobs *jobsFlag) train.Engine {
	if f.Engine != train.EngineTorch {
		return nil
	}
	if int(*jobs) == sweep.AutoJobs {
		*jobs = 1
	}
	return train.TorchEngine{Python: f.TorchPython, PythonPath: f.TorchPath, Device: f.Device}
}
