package train

import (
	"fmt"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/model"
)

// EvalLoss is the mean next-token loss over the first maxWindows (0: all) fixed windows of toks (data.Window),
// in batches of m.Batch(). It returns the loss and the number of windows scored.
func EvalLoss(m *model.Model, toks []int32, maxWindows int) (float64, int, error) {
	T := m.Config.SeqLen
	nw := data.NumWindows(len(toks), T)
	if maxWindows > 0 {
		nw = min(nw, maxWindows)
	}
	if nw == 0 {
		return 0, 0, fmt.Errorf("%d tokens: need at least %d for one window of T=%d", len(toks), T+1, T)
	}
	in, tg := make([]int32, m.Batch()*T), make([]int32, m.Batch()*T)
	var sum float64
	for k := 0; k < nw; k += m.Batch() {
		b := min(m.Batch(), nw-k)
		for i := 0; i < b; i++ {
			data.Window(toks, k+i, in[i*T:(i+1)*T], tg[i*T:(i+1)*T])
		}
		loss, err := m.Forward(in[:b*T], tg[:b*T])
		if err != nil {
			return 0, 0, err
		}
		sum += loss * float64(b)
	}
	return sum / float64(nw), nw, nil
}
