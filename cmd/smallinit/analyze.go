package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/smallinit/smallinit/analyze"
)

// analyzeCmd is `smallinit analyze`: weight metrics streamed matrix by matrix, activation metrics with --tokens.
type analyzeCmd struct {
	Model    string `required:"" type:"existingdir" help:"Model directory (config.json + model.safetensors or a sharded model.safetensors.index.json; F32, F16 or BF16)."`
	Tokens   string `type:"existingfile" help:"Token file for the activation metrics (probe windows) and the embedding's frequent tokens. Without it only the weight metrics are computed, streaming one matrix at a time."`
	Probes   int    `default:"16" help:"Probe windows for the activation metrics."`
	ProbeLen *int   `placeholder:"N" help:"Tokens per probe window, 2 to the model's context (default 64, the length the sink rate is defined on, or the context if shorter)."`
	JSON     bool   `name:"json" help:"Print everything as one JSON object."`
	Tensors  bool   `help:"List every matrix, not only the per-class summary."`
}

// probeLen is --probe-len, or 0 (analyze.DefaultProbeLen, cut to the model's context) when it is not given.
func (cmd *analyzeCmd) probeLen() int {
	if cmd.ProbeLen == nil {
		return 0
	}
	return *cmd.ProbeLen
}

// Run analyses the model, with a progress bar on a terminal.
func (cmd *analyzeCmd) Run() error {
	return cmd.run(os.Stdout, os.Stderr, term.IsTerminal(int(os.Stderr.Fd())))
}

// run is Run with its outputs given: the report goes to stdout, progress to log.
func (cmd *analyzeCmd) run(out, log io.Writer, tty bool) error {
	p := newByteProgress(log, tty, "analyze weights")
	a, err := analyze.Measure(cmd.Model, analyze.Options{Tokens: cmd.Tokens, Probes: cmd.Probes, ProbeLen: cmd.probeLen(), Progress: p.Update})
	p.Finish()
	if err != nil {
		return fmt.Errorf("analyze (--model, --tokens, --probes, --probe-len): %w", err)
	}
	stdout := &errWriter{w: out}
	if cmd.JSON {
		err = json.NewEncoder(stdout).Encode(a)
	} else {
		a.WriteText(stdout, cmd.Tensors)
	}
	if err == nil && stdout.err != nil {
		err = fmt.Errorf("write the analysis: %w", stdout.err)
	}
	return err
}
