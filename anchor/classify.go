package anchor

// Solution is the kind of answer a model gives the held-out pair (4,3) for key x (2405.05409 §3.3, §4).
type Solution int

// Solutions of (4,3): inferential x − 10 (composing the single anchors), symmetric x − 6 (copying (3,4)), or
// any other answer.
const (
	Inferential Solution = iota
	Symmetric
	Other
)

func (s Solution) String() string { return [...]string{"inferential", "symmetric", "other"}[s] }

// Classify names the solution a predicted answer for key x of (4,3) follows.
func Classify(x int, pred int32) Solution {
	switch int(pred) {
	case x + InferentialShift(Unseen):
		return Inferential
	case x + SymmetricShift:
		return Symmetric
	}
	return Other
}

// Shares are the fractions of (4,3) predictions of each solution; they sum to 1 (N > 0).
type Shares struct {
	Inferential, Symmetric, Other float64
	N                             int
}

// ClassifyAll classifies the predictions preds[i] for keys[i] and returns the shares.
func ClassifyAll(keys []int, preds []int32) Shares {
	var c [3]int
	for i, x := range keys {
		c[Classify(x, preds[i])]++
	}
	n := len(keys)
	if n == 0 {
		return Shares{}
	}
	f := func(k int) float64 { return float64(k) / float64(n) }
	return Shares{Inferential: f(c[Inferential]), Symmetric: f(c[Symmetric]), Other: f(c[Other]), N: n}
}
