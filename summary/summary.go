// Package summary owns summary.json, the table a plan writes of its finished runs: each run's final model
// scored on the whole validation split, per language, and (on a probe mix) on the probes. The experiment
// package writes it and the report package reads it; nobody else defines its rows.
package summary

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/finitejson"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/probes/probescore"
	"github.com/smallinit/smallinit/stats"
)

// File is the summary's name in a plan's output directory; a variant of the plan (the demo on the probe mix)
// writes File with its suffix before ".json" (summary-probes.json).
const File = "summary.json"

// FileName is the summary file of the variant with suffix ("" or "-probes").
func FileName(suffix string) string { return "summary" + suffix + ".json" }

// Row is one run: its recipe's headline values, the steps it trained, its losses and where it lives.
type Row struct {
	Run        string             `json:"run"` // the arm's label: the seeds of one arm share it
	Seed       uint64             `json:"seed"`
	Gamma      float64            `json:"gamma"`
	NormEps    float64            `json:"norm_eps"`
	AttnGate   string             `json:"attn_gate"`
	Steps      int                `json:"steps"`
	TrainLoss  float64            `json:"train_loss"`
	ValLoss    float64            `json:"val_loss"`
	ValBPB     float64            `json:"val_bits_per_byte"`
	LangLoss   map[string]float64 `json:"val_loss_by_lang"`
	LangBPB    map[string]float64 `json:"val_bits_per_byte_by_lang"`
	TokensPerS float64            `json:"tokens_per_s"`
	Dir        string             `json:"dir"`
	Probes     *probescore.Scores `json:"probes,omitempty"` // runs trained on the probe mix
}

// MarshalJSON writes a row with a non-finite number (the training loss or throughput of a run whose
// metrics.jsonl was cut short, a diverged loss) as null, which encoding/json refuses to write.
func (r Row) MarshalJSON() ([]byte, error) { return finitejson.Marshal(r) }

// UnmarshalJSON reads a null (or absent) number of a row back as NaN.
func (r *Row) UnmarshalJSON(b []byte) error {
	type plain Row
	return finitejson.Unmarshal(b, (*plain)(r))
}

// Summary is the whole file. Its fields are in the JSON keys' sorted order, so that the file's bytes are the
// ones the earlier map-based writer produced.
type Summary struct {
	Data   *data.Stats `json:"data"`
	Engine *Engine     `json:"engine,omitempty"` // the PyTorch engine's; absent for the Go engine's runs
	Runs   []Row       `json:"runs"`
	Seed   uint64      `json:"seed"`
	Steps  int         `json:"steps"`
}

// Engine names what trained a study's runs when it was not this binary: the PyTorch trainer, its interpreter,
// torch version and device (train.TorchProbe).
type Engine struct {
	Name   string `json:"name"`
	Python string `json:"python"`
	Torch  string `json:"torch"`
	Device string `json:"device"`
}

// Write writes s to path atomically (indented JSON).
func Write(path string, s Summary) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return atomicfile.Write(path, append(b, '\n'))
}

// Read reads a summary file; a file without rows is an error.
func Read(path string) (Summary, error) {
	var s Summary
	b, err := inputfile.ReadFile(path, inputfile.MaxTable)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	if len(s.Runs) == 0 {
		return s, fmt.Errorf("%s: no runs", path)
	}
	return s, nil
}

// Arm is the rows of one arm (one run label) over its seeds: the mean validation loss over them with its
// standard error (stats.Mean: SE = SD/√n, NaN for one seed), each seed's value beside it.
type Arm struct {
	Run      string
	Gamma    float64
	Estimate stats.Estimate
}

// ArmAlpha is the level of an arm's t-interval (the table shows its SE; the interval is in Estimate).
const ArmAlpha = 0.05

// Arms groups rows by run label, in the order each label first appears, each arm's seeds in row order.
func Arms(rows []Row) []Arm {
	var order []string
	by := map[string][]Row{}
	for _, r := range rows {
		if _, ok := by[r.Run]; !ok {
			order = append(order, r.Run)
		}
		by[r.Run] = append(by[r.Run], r)
	}
	arms := make([]Arm, len(order))
	for i, run := range order {
		var vals []float64
		var seeds []int
		for _, r := range by[run] {
			vals, seeds = append(vals, r.ValLoss), append(seeds, int(r.Seed))
		}
		arms[i] = Arm{Run: run, Gamma: by[run][0].Gamma, Estimate: stats.Mean(vals, seeds, ArmAlpha)}
	}
	return arms
}

// WriteArms prints each arm's mean validation loss ± its standard error over n seeds and every seed's value,
// so that two rows of one label read as two seeds of one arm. An arm's SE is its seed-to-seed spread; a
// difference between arms is judged by the paired differences (seed by seed), whose SE is usually smaller.
func WriteArms(w io.Writer, arms []Arm) {
	fmt.Fprintf(w, "\nper arm: val loss mean ± SE over its seeds (SE = SD/√n; one seed has none)\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tγ\tn\tmean\t± SE\tper seed")
	for _, a := range arms {
		e := a.Estimate
		se := "—"
		if e.N > 1 && !math.IsNaN(e.SE) {
			se = fmt.Sprintf("± %.4f", e.SE)
		}
		per := make([]string, len(e.Values))
		for i, v := range e.Values {
			per[i] = fmt.Sprintf("%d: %.4f", e.Seeds[i], v)
		}
		fmt.Fprintf(tw, "%s\t%g\t%d\t%.4f\t%s\t%s\n", a.Run, a.Gamma, e.N, e.Mean, se, strings.Join(per, "  "))
	}
	tw.Flush()
}

// SeedNoise is the seed-to-seed standard deviation of a paired loss difference between two γ that this project
// has measured on the embedded corpus: 0.019 nats, the 2026-12-02 2 h reproduction's paired SD of
// L(γ=0.5) − L(γ=1) over 6 seeds at 2,243 steps (docs/results/2026-12-02-reproduce-2h.md). A table of one seed
// per row prints twice it as the difference that one seed cannot tell from noise.
const SeedNoise = 0.019

// WriteTable prints the rows as the demo's and the studies' table (and, when they were scored on probes, the
// probe table): each run's seed, steps and training tokens (stepTokens per step; 0 leaves the tokens out) beside
// its losses. Where an arm ran several seeds, a table of each arm's mean ± SE over its seeds follows (WriteArms);
// where every arm ran one seed, a line gives the difference below which two rows are within the seed noise.
func WriteTable(w io.Writer, rows []Row, stepTokens int64) {
	fmt.Fprintf(w, "\nvalidation loss (nats/token) and bits per byte on the held-out 5%% of each corpus file\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tseed\tγ\tε\tgate\tsteps\ttokens\tval loss\tval bpb\ten loss\ten bpb\tzh loss\tzh bpb\ttrain loss\ttokens/s\t")
	for _, r := range rows {
		tokens := "—"
		if stepTokens > 0 {
			tokens = fmt.Sprintf("%.2fM", float64(int64(r.Steps)*stepTokens)/1e6)
		}
		fmt.Fprintf(tw, "%s\t%d\t%g\t%g\t%s\t%d\t%s\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.0f\t\n", r.Run, r.Seed, r.Gamma, r.NormEps, r.AttnGate,
			r.Steps, tokens, r.ValLoss, r.ValBPB, r.LangLoss["en"], r.LangBPB["en"], r.LangLoss["zh"], r.LangBPB["zh"], r.TrainLoss, r.TokensPerS)
	}
	tw.Flush()
	arms := Arms(rows)
	seeded := slices.ContainsFunc(arms, func(a Arm) bool { return a.Estimate.N > 1 })
	switch {
	case seeded:
		WriteArms(w, arms)
	case len(rows) > 1:
		fmt.Fprintf(w, "one seed per row: a difference in val loss below about %.2f nats (twice the seed-to-seed SD %.3f of a paired γ gain,\n"+
			"measured at 2,243 steps: docs/results/2026-12-02-reproduce-2h.md) is within the noise, and shorter runs were not measured;\n"+
			"a ranking needs seeds: smallinit study demo --seeds 3, or smallinit reproduce\n", 2*SeedNoise, SeedNoise)
	}
	if len(rows) == 0 || rows[0].Probes == nil {
		return
	}
	p := rows[0].Probes
	fmt.Fprintf(w, "\nprobes (exact match; gold answer loss per token): %d held-out reasoning prompts (chance %.3f), %d recalled memorisation prompts\n",
		p.ReasoningCount, p.ReasoningChance, p.MemorisationCount)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\treasoning acc\treasoning loss\tmemorisation acc\tmemorisation loss\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.3f\t%.4f\t%.3f\t%.4f\t\n", r.Run, r.Probes.ReasoningAcc, r.Probes.ReasoningLoss, r.Probes.MemorisationAcc, r.Probes.MemorisationLoss)
	}
	tw.Flush()
}
