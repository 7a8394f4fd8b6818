package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/diag/diagrec"
	"github.com/smallinit/smallinit/internal/progress"
)

type compareCmd struct {
	A       string `required:"" name:"a" type:"existingdir" help:"Model A directory."`
	B       string `required:"" name:"b" type:"existingdir" help:"Model B directory."`
	Tokens  string `required:"" type:"existingfile" help:"Token file both models are scored on."`
	Bins    int    `default:"10" help:"Difficulty quantiles."`
	Windows int    `help:"Score at most this many windows (0: all)."`
	Dump    string `type:"path" help:"Write per-token rows to this file (.csv, else JSON lines)."`
	JSON    bool   `name:"json" help:"Print the comparison as JSON."`

	progressEvery time.Duration // interval of the plain progress lines off a terminal (0: 10 s); tests shorten it
}

func (cmd *compareCmd) Run() error {
	return cmd.run(os.Stdout, os.Stderr, term.IsTerminal(int(os.Stderr.Fd())))
}

// run compares, saying on log what it scores and then how far it is (a bar on a terminal, else a line every
// progressEvery), and prints the comparison on stdout.
func (cmd *compareCmd) run(stdout, log io.Writer, tty bool) error {
	fmt.Fprintf(log, "compare: scoring %s (A) and %s (B) on %s, every window with both\n", cmd.A, cmd.B, cmd.Tokens)
	p := &progress.Count{Log: log, TTY: tty, Desc: "compare", Unit: "windows", Every: cmd.progressEvery}
	cmp, err := diag.CompareFiles(cmd.A, cmd.B, cmd.Tokens, cmd.Bins, cmd.Windows, cmd.Dump, p.Update)
	p.Finish()
	if err != nil {
		return fmt.Errorf("compare (--a, --b, --tokens, --bins, --dump): %w", err)
	}
	if cmd.JSON {
		return json.NewEncoder(stdout).Encode(diagrec.CompareRecord{A: cmd.A, B: cmd.B, Tokens: cmd.Tokens, Comparison: &cmp})
	}
	return cmp.WriteText(stdout, cmd.A, cmd.B)
}
