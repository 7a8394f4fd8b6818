package report

import (
	"fmt"
	"math"
	"strconv"
)

// ArmLossCurves is the chart of one arm's runs (the run directories dirs, one per seed): training and
// validation loss against step, one line per run, from each run's metrics. It is for pages that show an arm's
// learning curves beside its verdicts (the reproduction's figures page).
func ArmLossCurves(id, label string, dirs []string) (Chart, error) {
	d, err := Gather(dirs)
	if err != nil {
		return Chart{}, fmt.Errorf("loss curves of %s: %w", label, err)
	}
	ch := Chart{ID: id, Title: "Loss curves: " + label}
	tr := Panel{Title: "training loss", XLabel: "step", YLabel: "loss (nats/token)"}
	va := Panel{Title: "validation loss", XLabel: "step", YLabel: "loss (nats/token)"}
	n := 0
	for _, r := range d.Runs {
		name := r.ID
		if r.HasConfig {
			name = "seed " + strconv.FormatUint(r.Seed(), 10)
		}
		st, sv := Series{Name: name}, Series{Name: name, Marks: true}
		for _, m := range r.Metrics {
			if m.Loss != 0 && !math.IsNaN(m.Loss) && !math.IsInf(m.Loss, 0) {
				st.X, st.Y = append(st.X, float64(m.Step)), append(st.Y, m.Loss)
			}
			if m.ValLoss != nil && !math.IsNaN(*m.ValLoss) && !math.IsInf(*m.ValLoss, 0) {
				sv.X, sv.Y = append(sv.X, float64(m.Step)), append(sv.Y, *m.ValLoss)
			}
		}
		n += len(st.X) + len(sv.X)
		tr.Series, va.Series = append(tr.Series, st), append(va.Series, sv)
	}
	if n == 0 {
		return Chart{}, fmt.Errorf("loss curves of %s: no run logged a loss (%d runs)", label, len(d.Runs))
	}
	ch.Rows = [][]Panel{{tr, va}}
	ch.Caption = fmt.Sprintf("%d run%s; training loss is the mean over the steps since the previous log line, validation loss "+
		"is measured every train.eval_interval steps; from each run's metrics.", len(d.Runs), plural(len(d.Runs)))
	return ch, nil
}
