package arch

import "fmt"

// Describe is a one-line summary of the config's shape and switches, as the commands print it.
func (c Config) Describe() string {
	return fmt.Sprintf("V=%d d=%d L=%d H=%d d_ff=%d T=%d %s ε=%g gate=%s tied=%v",
		c.Vocab, c.Dim, c.Layers, c.Heads, c.FFN, c.SeqLen, c.Norm, c.NormEps, c.AttnGate, c.Tied)
}
