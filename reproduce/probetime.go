package reproduce

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"time"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/probes"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/tokenizer"
	"github.com/smallinit/smallinit/train"
)

// probeTimeRecords is how many records of each probe file the estimate times (about 2 s on a 2-core machine
// at width 128): enough to average over the prompts' lengths, a small share of the 600 each file holds.
const probeTimeRecords = 40

// probeScoring prices the probe arms' scoring for the wall-time estimate: every probe and pilot run's final
// model scores each record of the probe test and recall files with a greedy completion (scoreProbes), one
// token at a time, which the validation's scoring probe (forward passes over full windows) does not price. It
// is timed here on the first probeTimeRecords records of each file with a freshly drawn model of the probe
// arms' shape (the cost does not depend on the weights but through the completion's length, which the timing
// takes at its most, a model that never ends a line) and scaled to the files' records. ok is false where the
// plan has no probe run; a probe mix not made yet (a plan printed before the reproduction started) gives a
// zero time that says so.
func probeScoring(ctx context.Context, d *experiment.Description, probeDir string) (w experiment.ScoreWork, ok bool, err error) {
	roles := map[string]Role{}
	for _, g := range d.Plan.Groups {
		roles[g.Name] = Role(g.Role)
	}
	models, width := 0, 0
	for _, a := range d.Arms {
		if r := roles[a.Group]; r == RoleProbes || r == RolePilot {
			models += len(a.Seeds)
			width = a.Width
		}
	}
	if models == 0 {
		return experiment.ScoreWork{}, false, nil
	}
	w = experiment.ScoreWork{Name: "probe scoring"}
	records, timed := 0, 0
	for _, f := range []string{probes.TestFile, probes.RecallFile} {
		b, err := inputfile.ReadFile(filepath.Join(probeDir, f), inputfile.MaxConfig)
		if errors.Is(err, fs.ErrNotExist) {
			w.Text = fmt.Sprintf("%d final models' probe completions, not timed: the probe mix is made when the reproduction starts", models)
			return w, true, nil
		}
		if err != nil {
			return w, false, err
		}
		n := bytes.Count(b, []byte("\n"))
		records += n
		timed += min(n, probeTimeRecords) // ScoreFirst scores the first probeTimeRecords of each file
	}
	tok, err := tokenizer.Load(filepath.Join(probeDir, data.TokenizerFile))
	if err != nil {
		return w, false, err
	}
	sets := append(slices.Clone(d.Plan.Base),
		override.Set{Key: arch.KeyHiddenSize, Value: int64(width)},
		override.Set{Key: recipe.KeyVocab, Value: int64(tok.VocabSize())},
		override.Set{Key: recipe.KeyDataTrain, Value: filepath.Join(probeDir, data.TrainFile)})
	c, err := train.LoadSets("", sets)
	if err != nil {
		return w, false, fmt.Errorf("probe scoring's model: %w", err)
	}
	pool := kernel.NewPool(0)
	defer pool.Close()
	m, err := model.New(c.Model.Config, 8, pool)
	if err != nil {
		return w, false, fmt.Errorf("probe scoring's model: %w", err)
	}
	if _, err := gammainit.Apply(m, c.Init, 0); err != nil {
		return w, false, fmt.Errorf("probe scoring's model: %w", err)
	}
	start := time.Now()
	if _, err := probes.ScoreFirst(ctx, m, tok, probeDir, probeTimeRecords); err != nil {
		return w, false, err
	}
	took := time.Since(start)
	if timed == 0 {
		return w, false, fmt.Errorf("probe scoring: no record of %s scored", probeDir)
	}
	perModel := took * time.Duration(records) / time.Duration(timed)
	w.Time = perModel * time.Duration(models)
	w.Text = fmt.Sprintf("%d final models × %d probe records with greedy completions, %.1f s a model (timed on %d records: %.0f ms)",
		models, records, perModel.Seconds(), timed, float64(took.Milliseconds()))
	return w, true, nil
}
