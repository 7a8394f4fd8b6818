package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/diag/diagrec"
)

type compareCmd struct {
	A       string `required:"" name:"a" type:"existingdir" help:"Model A directory."`
	B       string `required:"" name:"b" type:"existingdir" help:"Model B directory."`
	Tokens  string `required:"" type:"existingfile" help:"Token file both models are scored on."`
	Bins    int    `default:"10" help:"Difficulty quantiles."`
	Windows int    `help:"Score at most this many windows (0: all)."`
	Dump    string `type:"path" help:"Write per-token rows to this file (.csv, else JSON lines)."`
	JSON    bool   `name:"json" help:"Print the comparison as JSON."`
}

func (cmd *compareCmd) Run() error {
	cmp, err := diag.CompareFiles(cmd.A, cmd.B, cmd.Tokens, cmd.Bins, cmd.Windows, cmd.Dump)
	if err != nil {
		return fmt.Errorf("compare (--a, --b, --tokens, --bins, --dump): %w", err)
	}
	if cmd.JSON {
		return json.NewEncoder(os.Stdout).Encode(diagrec.CompareRecord{A: cmd.A, B: cmd.B, Tokens: cmd.Tokens, Comparison: &cmp})
	}
	return cmp.WriteText(os.Stdout, cmd.A, cmd.B)
}
