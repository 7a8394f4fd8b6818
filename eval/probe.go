package eval

import "strings"

// The probe task (KindProbe) reads records of the reasoning and memorisation probes that package probes makes.

// Probe is one probe: the JSONL record of KindProbe (package probes makes them).
type Probe struct {
	Prompt string `json:"prompt"`
	Answer string `json:"answer"`
	Kind   string `json:"kind"`
	// Chance is the probability that the best guess which sees the prompt's form but does not do the task is
	// right: for add, guessing the most common sum of operands of these lengths (1/max(n_a, n_b), n the number
	// of integers with as many digits as the operand, padding zeros aside); for mod, the most common residue
	// of sums of operands of these lengths modulo this modulus; for hop, one of the five other letters of the
	// cycle (1/5); for brackets, copy and reverse, any string of the answer's length (3^−k, 26^−k); for
	// memorisation kinds, any answer of the same shape other than the reasoning one (their answers are uniform
	// over those). 0 means unknown (files made before the field existed).
	Chance float64 `json:"chance,omitempty"`
}

// Text is the probe as one training line (without the line break).
func (p Probe) Text() string { return p.Prompt + " " + p.Answer }

// Probe classes.
const (
	ProbeReasoning    = "reasoning"
	ProbeMemorisation = "memorisation"
)

// ProbeClass is ProbeMemorisation for kinds ending in "_mem" and ProbeReasoning otherwise.
func ProbeClass(kind string) string {
	if strings.HasSuffix(kind, "_mem") {
		return ProbeMemorisation
	}
	return ProbeReasoning
}
