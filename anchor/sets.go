package anchor

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/smallinit/smallinit/internal/atomicfile"
)

// ManifestFile is the file of a data directory (WriteSets) that says how its sets were made.
const ManifestFile = "anchor.json"

// MakeSets draws a task's sets by name: "train" and the evaluation sets (TaskComposite: "unseen_43" and
// "test_seen", with examples training sequences; TaskMix: "reasoning_test" and "memory", with perCombo
// sequences per anchor combination).
func MakeSets(task string, seed uint64, examples, perCombo int) (map[string][]Example, error) {
	if err := CheckSizes(task, "examples", examples, "per-combo", perCombo); err != nil {
		return nil, fmt.Errorf("anchor %s: %w", task, err)
	}
	switch task {
	case TaskComposite:
		sets := map[string][]Example{"train": CompositeTrain(examples, seed), "unseen_43": CompositeUnseen(seed)}
		var test []Example
		for _, p := range SeenPairs() {
			test = append(test, CompositeTest(p, seed)...)
		}
		sets["test_seen"] = test
		return sets, nil
	case TaskMix:
		labels := NewMemoryLabels(seed)
		train, test := Mix(perCombo, labels, seed)
		return map[string][]Example{"train": MixPlain(train), "reasoning_test": MixPlain(test),
			"memory": MixPlain(MixMemoryEval(labels, seed))}, nil
	}
	return nil, fmt.Errorf("task %q: want %s or %s", task, TaskComposite, TaskMix)
}

// WriteSets writes a task's sets (MakeSets) to dir: train.tok (WriteTokens), one JSON-lines file per
// evaluation set ({tokens, key, pos, pair, answer} per example), and ManifestFile, which records the task, the
// seed, the vocabulary, the layout and the count of each set. It returns the counts.
func WriteSets(dir, task string, seed uint64, sets map[string][]Example) (map[string]int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for name, ex := range sets {
		counts[name] = len(ex)
		if name == "train" {
			if err := WriteTokens(filepath.Join(dir, "train.tok"), ex); err != nil {
				return nil, err
			}
			continue
		}
		var b []byte
		for _, e := range ex {
			line, err := json.Marshal(map[string]any{"tokens": e.Tokens, "key": e.Key, "pos": e.Pos, "pair": []int{e.Pair.A1, e.Pair.A2}, "answer": e.Answer})
			if err != nil {
				return nil, err
			}
			b = append(append(b, line...), '\n')
		}
		if err := atomicfile.Write(filepath.Join(dir, name+".jsonl"), b); err != nil {
			return nil, err
		}
	}
	vocab := CompositeVocab
	if task == TaskMix {
		vocab = MixVocab
	}
	man, err := json.MarshalIndent(map[string]any{"task": task, "seed": seed, "vocab_size": vocab,
		"seq_len": SeqLen + 1, "loss_positions": []int{SeqLen - 1}, "counts": counts,
		"layout": "each example is 9 input tokens then its answer; one padding token ends train.tok; train with model.max_position_embeddings=10 and train.loss_positions=[8]"}, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(filepath.Join(dir, ManifestFile), append(man, '\n')); err != nil {
		return nil, err
	}
	return counts, nil
}
