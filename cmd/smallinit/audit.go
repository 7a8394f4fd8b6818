package main

import (
	"encoding/json"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/smallinit/smallinit/audit"
)

// auditCmd is `smallinit audit`: how a checkpoint was initialised, or where its weights are now.
type auditCmd struct {
	Model   string  `required:"" type:"existingdir" help:"Model directory: config.json (llama, mistral, qwen2, qwen3, qwen2_moe or qwen3_moe) and model.safetensors or a sharded model.safetensors.index.json, in F32, F16 or BF16."`
	JSON    bool    `name:"json" help:"Print the report as one JSON object."`
	Z       float64 `default:"5" help:"Tolerance of the rule checks, in standard errors of the sampled std."`
	Workers int     `default:"0" help:"Tensors read and measured at once (0: one per CPU)."`
}

// Run audits the model, with a progress bar on a terminal.
func (cmd *auditCmd) Run() error {
	return cmd.run(os.Stdout, os.Stderr, term.IsTerminal(int(os.Stderr.Fd())))
}

// run is Run with its outputs given: the report goes to stdout, progress to log.
func (cmd *auditCmd) run(stdout, log io.Writer, tty bool) error {
	p := newByteProgress(log, tty, "audit")
	rep, err := audit.Run(cmd.Model, audit.Options{Workers: cmd.Workers, Z: cmd.Z, Progress: p.Update})
	p.Finish()
	if err != nil {
		return err
	}
	if cmd.JSON {
		return json.NewEncoder(stdout).Encode(rep)
	}
	return rep.WriteText(stdout)
}
