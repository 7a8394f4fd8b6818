package probes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/internal/atomicfile"
)

// Manifest is probes.json: how a probe set's files were made and what they hold.
type Manifest struct {
	Seed      uint64            `json:"seed"`
	Train     int               `json:"train_per_kind"`
	Test      int               `json:"test_per_kind"`
	Table     int               `json:"table"`
	AddDigits int               `json:"add_digits"`
	Kinds     []string          `json:"kinds"`
	Files     map[string]string `json:"files"`
	Counts    map[string]int    `json:"counts"`
}

// SetFiles are the files WriteSet writes, in order.
var SetFiles = []string{"train.txt", "train.jsonl", "test.jsonl", "recall.jsonl", "probes.json"}

// WriteSet makes the probes of c (Make) and writes them to dir: the training text, the training,
// held-out and recall records, and the manifest probes.json. Each file is written atomically.
func WriteSet(dir string, c Config) (*Set, *Manifest, error) {
	if c.AddDigits == 0 {
		return nil, nil, fmt.Errorf("0 digits per addition operand: want 1 to 9")
	}
	ps, err := Make(c)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("probes: %w", err)
	}
	var text bytes.Buffer
	for _, p := range ps.Train {
		text.WriteString(p.Text())
		text.WriteByte('\n')
	}
	files := map[string][]byte{"train.txt": text.Bytes()}
	for name, set := range map[string][]eval.Probe{"train.jsonl": ps.Train, "test.jsonl": ps.Test, "recall.jsonl": ps.Recall} {
		if files[name], err = Records(set); err != nil {
			return nil, nil, err
		}
	}
	man := &Manifest{Seed: c.Seed, Train: c.Train, Test: c.Test, Table: c.Table, AddDigits: c.AddDigits, Kinds: ps.Kinds,
		Counts: map[string]int{"train": len(ps.Train), "test": len(ps.Test), "recall": len(ps.Recall)},
		Files: map[string]string{
			"train.txt":    "training text, one probe per line (prompt, space, answer); mix it into a training corpus",
			"train.jsonl":  "the same probes as records {prompt, answer, kind, chance}; addition answers are written least-significant digit first, chance is what the best guess that does not do the task scores",
			"test.jsonl":   "held-out prompts that occur nowhere in training: reasoning kinds measure generalisation, memorisation kinds are at chance by design",
			"recall.jsonl": "prompts taken from training: memorisation kinds measure memorisation, reasoning kinds give the training accuracy",
		}}
	mb, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	files["probes.json"] = append(mb, '\n')
	for _, name := range SetFiles {
		if err := atomicfile.Write(filepath.Join(dir, name), files[name]); err != nil {
			return nil, nil, err
		}
	}
	return ps, man, nil
}
