package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/smallinit/smallinit/diag"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/report"
	"github.com/smallinit/smallinit/tokenizer"
	"github.com/smallinit/smallinit/train"
)

type demoCmd struct {
	Out     string  `default:"smallinit-demo" type:"path" help:"Directory for the prepared data, the four runs and summary.json."`
	Minutes float64 `default:"5" help:"Training budget for all four runs together (the step count is set from a throughput probe)."`
	Steps   int     `help:"Steps per run (overrides --minutes)."`
	Seed    uint64  `default:"0" help:"Seed shared by the four runs (init, data order)."`
	Windows int     `help:"Score at most this many validation windows per file in the final table (0: all)."`
	Probes  bool    `help:"Mix reasoning and memorisation probes into training (a quarter of the tokens; probes make) and report each run's exact match on held-out reasoning prompts and recalled memorisation prompts."`

	probeTest int // test (and recall) probes per kind with --probes; 0: 100 (tests use fewer)
}

// demoCorner is one of the study's four corners.
type demoCorner struct {
	Name  string
	Gamma float64
	Eps   float64
	Gate  string
}

var demoCorners = []demoCorner{
	{"gamma0.5-default", 0.5, 1e-5, model.GateNone},
	{"gamma1-default", 1, 1e-5, model.GateNone},
	{"gamma0.5-fixed", 0.5, 1e-12, model.GateElementwise},
	{"gamma1-fixed", 1, 1e-12, model.GateElementwise},
}

// demoRow is one line of the demo's table and of summary.json.
type demoRow struct {
	Run        string             `json:"run"`
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
	Probes     *eval.ProbeScores  `json:"probes,omitempty"` // with --probes
}

// demoBase is the demo's model and schedule: the tiny preset's width and depth with a 128-token context,
// training on trainDir's tokens (the corpus, or the corpus with probes mixed in) and validating on dataDir's.
func demoBase(trainDir, dataDir string, vocab, steps int, seed uint64) []string {
	return []string{
		"model.preset=tiny", fmt.Sprintf("model.vocab_size=%d", vocab), "model.max_position_embeddings=128",
		"train.batch_size=16", fmt.Sprintf("train.steps=%d", steps), "train.log_interval=25",
		fmt.Sprintf("train.eval_interval=%d", max(steps/4, 1)), "train.eval_windows=64",
		fmt.Sprintf("train.checkpoint_interval=%d", max(steps/4, 1)), "train.keep_checkpoints=1",
		fmt.Sprintf("train.diagnostics_interval=%d", max(steps/10, 1)),
		"schedule.kind=cosine", "schedule.lr=2e-3", fmt.Sprintf("schedule.warmup_steps=%d", max(steps/20, 1)),
		fmt.Sprintf("seed=%d", seed),
		"data.train=" + filepath.Join(trainDir, data.TrainFile), "data.val=" + filepath.Join(dataDir, data.ValFile),
	}
}

func (cmd *demoCmd) Run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err := runDemo(ctx, cmd, os.Stdout, os.Stderr, term.IsTerminal(int(os.Stderr.Fd())))
	return err
}

// runDemo prepares the embedded corpus (once), trains the four corners on the same data, budget and seed,
// evaluates them overall and per language, prints the table and writes summary.json.
func runDemo(ctx context.Context, cmd *demoCmd, stdout, log io.Writer, progress bool) ([]demoRow, error) {
	if cmd.Minutes <= 0 && cmd.Steps <= 0 {
		return nil, errors.New("--minutes or --steps must be positive")
	}
	dataDir := filepath.Join(cmd.Out, "data")
	st, err := data.ReadStats(dataDir)
	if err != nil {
		fmt.Fprintf(log, "preparing the embedded corpus in %s (byte-level BPE, 4096 tokens)...\n", dataDir)
		t0 := time.Now()
		if st, err = data.PrepareEmbedded(dataDir, 4096, nil); err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "prepared %d training and %d validation tokens (%.2f bytes/token) in %.1fs\n",
			st.Train.Tokens, st.Val.Tokens, st.BytesPerToken, time.Since(t0).Seconds())
	} else {
		fmt.Fprintf(log, "reusing the prepared corpus in %s\n", dataDir)
	}
	trainDir, probeDir, suffix := dataDir, "", ""
	if cmd.Probes {
		// Its runs, summary and report go beside the plain demo's, not over them.
		probeDir, suffix = filepath.Join(cmd.Out, "probes-data"), "-probes"
		if _, err := os.Stat(filepath.Join(probeDir, data.TrainFile)); err != nil {
			fmt.Fprintf(log, "mixing reasoning and memorisation probes into the corpus (%.0f%% of the tokens) in %s\n", 100*eval.ProbeMixShare, probeDir)
		}
		if err := eval.WriteProbeMix(probeDir, dataDir, st.VocabSize, eval.ProbeMixConfig(cmp.Or(cmd.probeTest, 100)), eval.ProbeMixShare); err != nil {
			return nil, err
		}
		trainDir = probeDir
	}
	steps := cmd.Steps
	if steps <= 0 {
		if steps, err = demoSteps(cmd.Out, cmd.Minutes, st.VocabSize, log); err != nil {
			return nil, err
		}
	}
	var rows []demoRow
	for i, c := range demoCorners {
		sets := append(demoBase(trainDir, dataDir, st.VocabSize, steps, cmd.Seed), fmt.Sprintf("init.gamma=%g", c.Gamma),
			fmt.Sprintf("model.norm_eps=%g", c.Eps), "model.attn_gate="+c.Gate)
		cfg, err := train.Load("", sets)
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(cmd.Out, "runs"+suffix, fmt.Sprintf("%s-%dsteps-seed%d", c.Name, steps, cmd.Seed))
		fmt.Fprintf(log, "\n[%d/%d] %s: γ = %g, ε = %g, gate %s, %d steps -> %s\n", i+1, len(demoCorners), c.Name, c.Gamma, c.Eps, c.Gate, steps, dir)
		opts := train.Options{Log: log, Progress: progress, Diagnostics: diag.Training}
		var res train.Result
		if _, err := os.Stat(filepath.Join(dir, train.ConfigFile)); err == nil {
			res, err = train.Resume(ctx, dir, opts)
			if err != nil {
				return nil, err
			}
		} else if res, err = train.Start(ctx, cfg, dir, opts); err != nil {
			return nil, err
		}
		row, err := demoEvaluate(dir, dataDir, probeDir, st, res, cmd.Windows)
		if err != nil {
			return nil, err
		}
		row.Run, row.Gamma, row.NormEps, row.AttnGate, row.Steps = c.Name, c.Gamma, c.Eps, c.Gate, steps
		rows = append(rows, row)
	}
	b, err := json.MarshalIndent(map[string]any{"steps": steps, "seed": cmd.Seed, "data": st, "runs": rows}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("summary%s.json: %w", suffix, err)
	}
	if err := model.WriteFileAtomic(filepath.Join(cmd.Out, "summary"+suffix+".json"), append(b, '\n')); err != nil {
		return nil, err
	}
	printDemoTable(stdout, rows)
	reportPath := filepath.Join(cmd.Out, "report"+suffix+".html")
	cmpA, cmpB := rows[3].Dir, rows[2].Dir // γ = 1 against γ = 0.5, both with the fixes
	if err := writeReport([]string{filepath.Join(cmd.Out, "runs"+suffix)}, reportPath, "smallinit demo", cmpA, cmpB, max(cmd.Windows, 64)); err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "\neverything is under %s (report%s.html, summary%s.json, data/, runs%s/)\n", cmd.Out, suffix, suffix, suffix)
	return rows, nil
}

// demoSizingFile (in the output directory) records the steps a --minutes budget was sized to, so that a demo
// run again (after an interrupt, or to add --probes) reuses its finished and interrupted runs instead of
// sizing new ones from a fresh throughput probe.
const demoSizingFile = "sizing.json"

// demoSteps returns the steps per run that fit minutes: the ones recorded in out's sizing file for the same
// budget, else a throughput probe's, recorded there.
func demoSteps(out string, minutes float64, vocab int, log io.Writer) (int, error) {
	path := filepath.Join(out, demoSizingFile)
	var sz struct {
		Minutes float64 `json:"minutes"`
		Steps   int     `json:"steps"`
	}
	if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &sz) == nil && sz.Minutes == minutes && sz.Steps > 0 {
		fmt.Fprintf(log, "reusing the sizing in %s: %d steps of 16×128 tokens per run for %g minutes\n", path, sz.Steps, minutes)
		return sz.Steps, nil
	}
	tps, err := demoThroughput(vocab)
	if err != nil {
		return 0, err
	}
	sz.Minutes, sz.Steps = minutes, max(10, int(minutes*60/float64(len(demoCorners))*tps*0.85/(16*128)))
	fmt.Fprintf(log, "throughput probe: %.0f tokens/s, so %d steps of 16×128 tokens per run fit %.1f minutes\n", tps, sz.Steps, minutes)
	b, _ := json.Marshal(sz)
	if err := model.WriteFileAtomic(path, append(b, '\n')); err != nil {
		return 0, err
	}
	return sz.Steps, nil
}

// demoThroughput measures training tokens/s of the demo's model over a few steps.
func demoThroughput(vocab int) (float64, error) {
	c, err := train.Load("", []string{"model.preset=tiny", fmt.Sprintf("model.vocab_size=%d", vocab), "model.max_position_embeddings=128", "data.train=x"})
	if err != nil {
		return 0, err
	}
	pool := kernel.NewPool(0)
	defer pool.Close()
	m, err := model.New(c.Model.Config, 16, pool)
	if err != nil {
		return 0, err
	}
	gammainit.Apply(m, gammainit.Default(), 0)
	rng := rand.New(rand.NewPCG(1, 1))
	in, tg := make([]int32, 16*128), make([]int32, 16*128)
	for i := range in {
		in[i], tg[i] = int32(rng.IntN(vocab)), int32(rng.IntN(vocab))
	}
	var t0 time.Time
	for s := 0; s < 4; s++ {
		if s == 1 {
			t0 = time.Now()
		}
		if _, err := m.Forward(in, tg); err != nil {
			return 0, err
		}
		m.ZeroGrads()
		m.Backward()
	}
	return 3 * float64(len(in)) / time.Since(t0).Seconds(), nil
}

// demoEvaluate scores a finished run's final model on the whole validation split and on each language, and on
// the probes of probeDir unless it is "".
func demoEvaluate(dir, dataDir, probeDir string, st *data.Stats, res train.Result, windows int) (demoRow, error) {
	pool := kernel.NewPool(0)
	defer pool.Close()
	m, _, err := model.Load(filepath.Join(dir, train.FinalDir), 16, pool)
	if err != nil {
		return demoRow{}, err
	}
	row := demoRow{TrainLoss: res.Loss, TokensPerS: res.TokensPerS, Dir: dir, LangLoss: map[string]float64{}, LangBPB: map[string]float64{}}
	score := func(file string) (float64, error) {
		toks, err := data.ReadTokens(file, m.Config.Vocab)
		if err != nil {
			return 0, err
		}
		loss, _, err := train.EvalLoss(m, toks, windows)
		return loss, err
	}
	if row.ValLoss, err = score(filepath.Join(dataDir, data.ValFile)); err != nil {
		return row, err
	}
	row.ValBPB = st.Val.BitsPerByte(row.ValLoss)
	for lang, ls := range st.ValByLang {
		l, err := score(filepath.Join(dataDir, data.ValLangFile(lang)))
		if err != nil {
			return row, err
		}
		row.LangLoss[lang], row.LangBPB[lang] = l, ls.BitsPerByte(l)
	}
	if math.IsNaN(row.ValLoss) || math.IsInf(row.ValLoss, 0) {
		return row, fmt.Errorf("run %s: validation loss is %v", dir, row.ValLoss)
	}
	if probeDir != "" {
		tok, err := tokenizer.Load(filepath.Join(probeDir, data.TokenizerFile))
		if err != nil {
			return row, err
		}
		if row.Probes, err = eval.ScoreProbes(context.Background(), m, tok, probeDir); err != nil {
			return row, fmt.Errorf("run %s: %w", dir, err)
		}
	}
	return row, nil
}

func printDemoTable(w io.Writer, rows []demoRow) {
	fmt.Fprintf(w, "\nvalidation loss (nats/token) and bits per byte on the held-out 5%% of each corpus file\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tγ\tε\tgate\tval loss\tval bpb\ten loss\ten bpb\tzh loss\tzh bpb\ttrain loss\ttokens/s\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%g\t%g\t%s\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.0f\t\n", r.Run, r.Gamma, r.NormEps, r.AttnGate,
			r.ValLoss, r.ValBPB, r.LangLoss["en"], r.LangBPB["en"], r.LangLoss["zh"], r.LangBPB["zh"], r.TrainLoss, r.TokensPerS)
	}
	tw.Flush()
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

// writeReport renders the HTML report of the runs under dirs, with the token-difficulty comparison of the
// final models of runs a and b (scored on at most windows validation windows).
func writeReport(dirs []string, out, title, a, b string, windows int) error {
	d, err := report.Gather(dirs)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	o := report.Options{Title: title, Generated: time.Now().UTC().Format(time.RFC3339)}
	o.Heatmaps, o.Notes = report.Heatmaps(d, "", 4)
	if cmp, err := report.CompareModels(a, b, windows, 10); err == nil {
		o.Compare = cmp
	} else {
		o.Notes = append(o.Notes, "token-difficulty comparison: "+err.Error())
	}
	html, err := report.Render(d, o)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return report.WriteFile(out, html)
}
