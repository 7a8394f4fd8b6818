package anchor

import (
	"fmt"

	"github.com/smallinit/smallinit/model"
)

// CompositeScore is what a trained composite-task model does: the solution shares on the held-out (4,3), the
// accuracy on the test split of the 15 seen pairs (generalization on data, App. C), on the test split of the
// non-inferential (3,4) alone, and on the first 2000 training sequences.
type CompositeScore struct {
	Unseen      Shares  `json:"unseen_43"`
	SeenTest    float64 `json:"seen_test_acc"`
	Test34      float64 `json:"test_34_acc"`
	TrainAcc    float64 `json:"train_acc"`
	TrainSample int     `json:"train_sample"`
}

// EvalComposite scores m on the evaluation sets of data seed (the same seed its training set was drawn
// from) and on trainSample, a prefix of its training set.
func EvalComposite(m *model.Model, seed uint64, trainSample []Example) (CompositeScore, error) {
	var s CompositeScore
	un := CompositeUnseen(seed)
	p, err := Predict(m, un)
	if err != nil {
		return s, err
	}
	keys := make([]int, len(un))
	for i, e := range un {
		keys[i] = e.Key
	}
	s.Unseen = ClassifyAll(keys, p)
	var test []Example
	for _, pr := range SeenPairs() {
		t := CompositeTest(pr, seed)
		if pr == NonInferable {
			p, err := Predict(m, t)
			if err != nil {
				return s, err
			}
			s.Test34 = Accuracy(t, p)
		}
		test = append(test, t...)
	}
	if p, err = Predict(m, test); err != nil {
		return s, err
	}
	s.SeenTest = Accuracy(test, p)
	if len(trainSample) > 0 {
		if p, err = Predict(m, trainSample); err != nil {
			return s, err
		}
		s.TrainAcc, s.TrainSample = Accuracy(trainSample, p), len(trainSample)
	}
	return s, nil
}

// MixScore is what a trained mix-task model does: the memory accuracy on every memory key-anchor combination,
// the reasoning accuracy on (a sample of) the training reasoning sequences and on D_rsn,test.
type MixScore struct {
	Memory   float64 `json:"memory_acc"`
	RsnTrain float64 `json:"reasoning_train_acc"`
	RsnTest  float64 `json:"reasoning_test_acc"`
}

// EvalMix scores m on the mix task of seed; train and test are that seed's Mix sets.
func EvalMix(m *model.Model, labels MemoryLabels, seed uint64, train, test []MixExample) (MixScore, error) {
	var s MixScore
	acc := func(ex []MixExample) (float64, error) {
		plain := make([]Example, len(ex))
		for i, e := range ex {
			plain[i] = e.Example
		}
		p, err := Predict(m, plain)
		if err != nil {
			return 0, err
		}
		return Accuracy(plain, p), nil
	}
	var err error
	if s.Memory, err = acc(MixMemoryEval(labels, seed)); err != nil {
		return s, fmt.Errorf("memory: %w", err)
	}
	var rt []MixExample
	for _, e := range train {
		if e.Kind == ReasoningTrain && len(rt) < 2000 {
			rt = append(rt, e)
		}
	}
	if s.RsnTrain, err = acc(rt); err != nil {
		return s, err
	}
	if s.RsnTest, err = acc(test); err != nil {
		return s, err
	}
	return s, nil
}

// MixPlain drops the kinds.
func MixPlain(ex []MixExample) []Example {
	out := make([]Example, len(ex))
	for i, e := range ex {
		out[i] = e.Example
	}
	return out
}
