package reproduce

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/fit"
	"github.com/smallinit/smallinit/internal/filesum"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/stats"
	"github.com/smallinit/smallinit/summary"
	"github.com/smallinit/smallinit/train"
	"github.com/smallinit/smallinit/train/rundir"
)

// The readout of a width ladder trained by `study` plans rather than by reproduce's own (issue 44's verdict
// plans, docs/results/2026-12-07-verdict-20tpp-ladder-plan.md): the finished runs of one or more study output
// directories, each run's loss read at the training mix (docs/definitions.md §7 "Which loss"), assembled into
// the Evidence that judgePrimaries judges, plus γ = 1's effective size on a straight line in ln N.

// StudyRun is one finished run of a study as a ladder readout reads it: its recipe's γ, width, N, peak rate and
// seed (from its config.toml), and its final losses (from the study's summary.json).
type StudyRun struct {
	Dir string `json:"dir"`
	// Group is the plan group the run belongs to: the directory its run directory is in (a study writes
	// OUT/GROUP/RUN).
	Group string  `json:"group"`
	Gamma float64 `json:"gamma"`
	Width int     `json:"width"`
	N     float64 `json:"n"` // non-embedding parameters
	LR    float64 `json:"lr"`
	Seed  int     `json:"seed"`
	// Loss.Overall is the loss at the training mix; Loss.ByLanguage each language's validation loss.
	Loss Loss `json:"loss"`
	// Started and Finished are when the run trained (runTimeOf: its directory's file times).
	Started  *time.Time `json:"started,omitempty"`
	Finished *time.Time `json:"finished,omitempty"`
	// recipe is the run's config less the keys a ladder varies (recipeVaries): what every run a verdict reads
	// must share; config is the whole config, as override sets (a contrast's Selector reads it).
	recipe, config []override.Set
}

// recipeVaries are the config keys in which runs of one verdict may differ: the arm (γ, rate), the seed, the
// width and what the horizon scales with it (steps, warmup and decay, the intervals), where the data files lie
// and the thread count (results are bitwise independent of it). Every other key is the recipe.
var recipeVaries = map[string]bool{
	"seed": true, "init.gamma": true, "schedule.lr": true,
	"model.hidden_size": true, "model.intermediate_size": true, "model.num_attention_heads": true,
	"model.kv_heads": true, "model.head_dim": true,
	"train.steps": true, "train.tokens": true, "schedule.warmup_steps": true, "schedule.decay_steps": true,
	"train.log_interval": true, "train.eval_interval": true, "train.checkpoint_interval": true,
	"train.diagnostics_interval": true, "train.threads": true,
	"data.train": true, "data.val": true,
}

// recipeOf is c's recipe: its keys less recipeVaries.
func recipeOf(c any) []override.Set {
	var out []override.Set
	for _, s := range override.Struct(c) {
		if !recipeVaries[s.Key] {
			out = append(out, s)
		}
	}
	return out
}

// recipeDiff says how two recipes differ ("" when they do not): the first key, by name, whose value differs or
// that only one has.
func recipeDiff(a, b []override.Set) string {
	am, bm := map[string]any{}, map[string]any{}
	for _, s := range a {
		am[s.Key] = s.Value
	}
	for _, s := range b {
		bm[s.Key] = s.Value
	}
	both := maps.Clone(am)
	maps.Copy(both, bm)
	keys := slices.Sorted(maps.Keys(both))
	for _, k := range keys {
		av, aok := am[k]
		bv, bok := bm[k]
		switch {
		case !aok:
			return fmt.Sprintf("%s (unset against %s)", k, override.Format(bv))
		case !bok:
			return fmt.Sprintf("%s (%s against unset)", k, override.Format(av))
		case !override.Equal(av, bv):
			return fmt.Sprintf("%s (%s against %s)", k, override.Format(av), override.Format(bv))
		}
	}
	return ""
}

// ReadStudyRuns reads the finished runs of study output directories (OUT/summary.json and each run's
// config.toml); with partial, a directory without a summary has its finished runs scored here, a line per run
// to log (nil: none). Every directory must hold the same corpus (the sha256 sums its stats.json records), since the
// runs are compared across them; a run without per-language losses, or a corpus of one language, is an error:
// the readout is at the training mix.
func ReadStudyRuns(outs []string, partial bool, log io.Writer) ([]StudyRun, *data.Stats, error) {
	var runs []StudyRun
	var st *data.Stats
	var sums map[string]string
	for _, out := range outs {
		path := filepath.Join(out, summary.FileName(""))
		s, err := summary.Read(path)
		unscored := false
		if err != nil && partial && errors.Is(err, fs.ErrNotExist) {
			path, unscored = out, true
			if s.Data, err = data.ReadStats(filepath.Join(out, experiment.DataDir)); err != nil {
				err = fmt.Errorf("%s: no summary.json (the study has not ended) and no corpus: %w", out, err)
			}
		}
		if err != nil {
			return nil, nil, err
		}
		if s.Data == nil {
			return nil, nil, fmt.Errorf("%s: no corpus statistics (data)", path)
		}
		// The corpus is checked before any run is scored: scoring a study's runs takes minutes.
		ss, err := corpusSums(out, s.Data)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		if st == nil {
			st, sums = s.Data, ss
		} else if err := sameCorpus(sums, ss); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		if unscored {
			if s.Runs, err = scoreFinishedRuns(out, ss, log); err != nil {
				return nil, nil, err
			}
		}
		for _, row := range s.Runs {
			c, err := train.Load(filepath.Join(row.Dir, "config.toml"), nil)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: run %s: %w", path, row.Run, err)
			}
			mix, ok := experiment.TrainMixLoss(row.LangLoss, s.Data)
			if !ok || math.IsNaN(mix) {
				return nil, nil, fmt.Errorf("%s: run %s: no loss at the training mix (per-language losses %v)", path, row.Run, row.LangLoss)
			}
			rt, err := runTimeOf(row.Dir)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: run %s: %w", path, row.Run, err)
			}
			runs = append(runs, StudyRun{Dir: row.Dir, Started: rt.Started, Finished: rt.Finished, Group: filepath.Base(filepath.Dir(row.Dir)), recipe: recipeOf(c), config: override.Struct(c), Gamma: c.Init.Gamma, Width: c.Model.Dim, N: float64(c.Model.NonEmbeddingParams()),
				LR: c.Schedule.PeakLR, Seed: int(c.Seed), Loss: Loss{Overall: mix, ByLanguage: row.LangLoss}})
		}
	}
	return runs, st, nil
}

// corpusSums are the sha256 sums that identify the corpus a study trained on: those its stats.json records,
// or, for a corpus prepared before stats.json recorded them (bilingual corpus v2), the sums of the files its
// copy OUT/data holds (the token files stats.json describes and tokenizer.json), computed here.
func corpusSums(out string, st *data.Stats) (map[string]string, error) {
	if len(st.SHA256) > 0 {
		return st.SHA256, nil
	}
	names := []string{data.TrainFile, data.ValFile, data.TokenizerFile}
	for _, lang := range slices.Sorted(maps.Keys(st.ValByLang)) {
		names = append(names, data.ValLangFile(lang))
	}
	sums := map[string]string{}
	for _, n := range names {
		sum, err := filesum.File(filepath.Join(out, experiment.DataDir, n))
		if err != nil {
			return nil, fmt.Errorf("its stats.json records no sha256 sums and its corpus copy cannot be summed (%w): cannot show that the directories trained on one corpus", err)
		}
		sums[n] = sum
	}
	return sums, nil
}

// scoreFinishedRuns are the rows a study that has not ended would write to its summary for its finished runs:
// each run directory OUT/GROUP/RUN with a final model scored on the whole validation split of OUT/data (whose
// corpus has the file sums sums) as the study's summary scores it (analyze.Score); a run scored by an earlier
// partial readout is read from its cache (scoreFinishedRun).
func scoreFinishedRuns(out string, sums map[string]string, log io.Writer) ([]summary.Row, error) {
	dataDir := filepath.Join(out, experiment.DataDir)
	finals, err := filepath.Glob(filepath.Join(out, "*", "*", rundir.FinalDir))
	if err != nil {
		return nil, err
	}
	corpus := corpusDigest(sums)
	var rows []summary.Row
	cached := 0
	for i, f := range finals {
		dir := filepath.Dir(f)
		var announce func()
		if log != nil {
			announce = func() { fmt.Fprintf(log, "scoring %d/%d on the whole validation split: %s\n", i+1, len(finals), dir) }
		}
		row, fresh, err := scoreFinishedRun(context.Background(), dir, dataDir, corpus, announce)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		if !fresh {
			cached++
		}
		row.Run = filepath.Base(dir)
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no summary.json and no finished run", out)
	}
	if log != nil && cached > 0 {
		fmt.Fprintf(log, "%s: %d of %d finished runs read from their validation score cache (%s)\n", out, cached, len(rows), train.ValidationScore)
	}
	return rows, nil
}

// sameCorpus refuses two corpora whose files differ (by their sums, corpusSums).
func sameCorpus(a, b map[string]string) error {
	for _, f := range slices.Sorted(maps.Keys(a)) {
		if b[f] != a[f] {
			return fmt.Errorf("corpus file %s differs (sha256 %s against %s): not one corpus", f, b[f], a[f])
		}
	}
	if len(a) != len(b) {
		return errors.New("the corpora's stats.json list different files")
	}
	return nil
}

// LadderEvidence assembles the primaries' evidence from runs: the γ arms at width (Evidence.Gamma) and one rung
// per width (Evidence.Ladder), each γ's runs at its rate lrs[γ] only (a run at another rate, a rate check, is
// left out). Two runs of one γ, width and seed at that rate are an error (the same run read twice).
func LadderEvidence(runs []StudyRun, width int, lrs map[float64]float64, source string, spec *Primaries) (*Evidence, error) {
	type key struct {
		gamma float64
		width int
	}
	arms := map[key]*ArmEvidence{}
	ns := map[int]float64{}
	for _, r := range runs {
		lr, ok := lrs[r.Gamma]
		if !ok {
			continue
		}
		if math.Abs(r.LR-lr) > 1e-12*lr {
			continue
		}
		k := key{r.Gamma, r.Width}
		a := arms[k]
		if a == nil {
			a = &ArmEvidence{Name: fmt.Sprintf("γ=%g d=%d", r.Gamma, r.Width), LR: lr, Seeds: map[int]Loss{}}
			arms[k] = a
		}
		if _, dup := a.Seeds[r.Seed]; dup {
			return nil, fmt.Errorf("γ = %g, width %d, seed %d at lr %g: two runs (one is %s)", r.Gamma, r.Width, r.Seed, lr, r.Dir)
		}
		a.Seeds[r.Seed] = r.Loss
		ns[r.Width] = r.N
	}
	ev := &Evidence{Source: source, Width: width, Primaries: spec}
	for _, g := range []float64{0.5, 1} {
		a := arms[key{g, width}]
		if a == nil {
			return nil, fmt.Errorf("no γ = %g run at width %d and lr %g", g, width, lrs[g])
		}
		ev.Gamma = append(ev.Gamma, GammaArm{Gamma: g, ArmEvidence: *a})
	}
	widths := slices.Sorted(func(yield func(int) bool) {
		for w := range ns {
			if !yield(w) {
				return
			}
		}
	})
	for _, w := range widths {
		g05, g1 := arms[key{0.5, w}], arms[key{1, w}]
		if g05 == nil || g1 == nil {
			return nil, fmt.Errorf("width %d has runs of one γ only", w)
		}
		ev.Ladder = append(ev.Ladder, Rung{Width: w, N: ns[w], G05: *g05, G1: *g1})
	}
	return ev, nil
}

// LineEffSize is γ = 1's effective model size at one width read on a straight line in ln N fitted to the
// γ = 0.5 rung means (each rung weighted once): L = A + B·ln N, N_eff = exp((L̄(γ=1) − A)/B), gain N_eff/N − 1.
// Used where the house's L = E + A·N^−α (fit.Fit) is not determined, as over a ladder spanning 2.9x.
type LineEffSize struct {
	Width     int           `json:"width"`
	N         float64       `json:"n"`
	A         float64       `json:"intercept"`
	B         float64       `json:"slope_per_ln_n"`
	Residuals []float64     `json:"residuals"` // rung mean − line, by ascending N
	Loss1     float64       `json:"loss_gamma1"`
	Eff       float64       `json:"n_eff"`
	Gain      float64       `json:"gain"`
	CI        *fit.Interval `json:"gain_ci"` // percentile, fit.Bootstrap over seeds within each rung and arm
	Reps      int           `json:"bootstrap_reps"`
	Failed    int           `json:"bootstrap_failed"`
	// Inside is whether N_eff lies within the ladder's sizes; Reading says it in words (beyond the ladder, below
	// it, or the gain with its interval).
	Inside  bool   `json:"inside_fitted_range"`
	Reading string `json:"reading"`
}

// lineEffectiveSize reads γ = 1's effective size at width on the straight line of the γ = 0.5 rungs (ladder
// with at least 3 rungs, the γ = 0.5 slope negative); reps bootstrap resamples (0: none).
func lineEffectiveSize(ladder []Rung, width int, reps int) (LineEffSize, error) {
	rungs := slices.Clone(ladder)
	slices.SortFunc(rungs, func(a, b Rung) int { return cmp.Compare(a.N, b.N) })
	at := slices.IndexFunc(rungs, func(r Rung) bool { return r.Width == width })
	if at < 0 || len(rungs) < 3 {
		return LineEffSize{}, fmt.Errorf("effective size at width %d: want a rung there and at least 3 rungs (have %d)", width, len(rungs))
	}
	groups := make([][]float64, 0, len(rungs)+1)
	x := make([]float64, len(rungs))
	for i, r := range rungs {
		g := values(r.G05.Overall())
		if len(g) == 0 {
			return LineEffSize{}, fmt.Errorf("width %d: no γ = 0.5 seed", r.Width)
		}
		groups = append(groups, g)
		x[i] = math.Log(r.N)
	}
	g1 := values(rungs[at].G1.Overall())
	if len(g1) == 0 {
		return LineEffSize{}, fmt.Errorf("width %d: no γ = 1 seed", width)
	}
	groups = append(groups, g1)
	read := func(means []float64) (a, b, eff float64, err error) {
		y := means[:len(rungs)]
		b = stats.Slope(x, y)
		if !(b < 0) {
			return 0, 0, 0, fmt.Errorf("the γ = 0.5 loss does not fall with ln N (slope %g)", b)
		}
		var mx, my float64
		for i := range x {
			mx += x[i] / float64(len(x))
			my += y[i] / float64(len(y))
		}
		a = my - b*mx
		return a, b, math.Exp((means[len(rungs)] - a) / b), nil
	}
	means := make([]float64, len(groups))
	for i, g := range groups {
		means[i] = mean(g)
	}
	a, b, eff, err := read(means)
	if err != nil {
		return LineEffSize{}, err
	}
	n := rungs[at].N
	le := LineEffSize{Width: width, N: n, A: a, B: b, Loss1: means[len(rungs)], Eff: eff, Gain: eff/n - 1, Reps: reps}
	for i := range rungs {
		le.Residuals = append(le.Residuals, means[i]-(a+b*x[i]))
	}
	lo, hi := rungs[0].N, rungs[len(rungs)-1].N
	le.Inside = eff >= lo && eff <= hi
	if reps > 0 {
		bs, err := fit.Bootstrap(groups, reps, 1, fit.Level95, func(m []float64) ([]float64, error) {
			_, _, e, err := read(m)
			return []float64{e/n - 1}, err
		})
		if err != nil {
			return LineEffSize{}, err
		}
		le.CI, le.Failed = &bs.Intervals[0], bs.Failed
	}
	switch {
	case eff > hi:
		le.Reading = fmt.Sprintf("beyond the ladder: at least %+.1f%% (the widest rung's N over this width's)", 100*(hi/n-1))
	case eff < lo:
		le.Reading = fmt.Sprintf("below the ladder: under %+.1f%% (the narrowest rung's N over this width's)", 100*(lo/n-1))
	default:
		le.Reading = fmt.Sprintf("%+.1f%%", 100*le.Gain)
		if le.CI != nil {
			le.Reading += fmt.Sprintf(" [%+.1f%%, %+.1f%%] (95%% bootstrap over seeds)", 100*le.CI.Lo, 100*le.CI.Hi)
		}
	}
	return le, nil
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// StudyVerdict is a plan's primaries judged on the runs of study output directories (JudgeStudies): the
// evidence (each run at the training mix), the claims H1 and H2 as the primaries' judge gives them, and γ = 1's
// effective size at the primaries' width on the straight line in ln N.
type StudyVerdict struct {
	Plan        string       `json:"plan_name"`
	Outs        []string     `json:"outs"`
	Inputs      *Evidence    `json:"inputs"`
	Claims      []Claim      `json:"claims"`
	EffSizeLine *LineEffSize `json:"effective_size_line,omitempty"`
	// EffSizeLineError says why the line gave no reading (fewer than 3 rungs, a γ = 0.5 loss that does not fall).
	EffSizeLineError string `json:"effective_size_line_error,omitempty"`
	// Languages is the family of language secondaries (nil: a corpus of one language).
	Languages *LanguageFamily `json:"languages,omitempty"`
	Runs      []StudyRun      `json:"runs"`
	// LeftOut names the runs of outs that are not of the plan's groups (another family's controls), with why.
	LeftOut []string `json:"left_out,omitempty"`
}

// planRuns keeps the runs of p's groups (by name: a study writes OUT/GROUP/RUN, so family A's main group and
// family B's share a name and a recipe) and names the others as left out; the kept runs must share one recipe
// (recipeOf), so a group of another recipe under a shared name is refused, naming the key.
func planRuns(p *experiment.Plan, all []StudyRun) (runs []StudyRun, left []string, err error) {
	groups := map[string]bool{}
	for _, g := range p.Groups {
		groups[g.Name] = true
	}
	for _, r := range all {
		if !groups[r.Group] {
			left = append(left, fmt.Sprintf("%s: group %q is not one of plan %s's", r.Dir, r.Group, p.Name))
			continue
		}
		if len(runs) > 0 {
			if d := recipeDiff(runs[0].recipe, r.recipe); d != "" {
				return nil, nil, fmt.Errorf("runs %s and %s differ in %s: not one recipe", runs[0].Dir, r.Dir, d)
			}
		}
		runs = append(runs, r)
	}
	if len(runs) == 0 {
		return nil, left, fmt.Errorf("no run of plan %s's groups in the output directories", p.Name)
	}
	return runs, left, nil
}

// JudgeOptions are how JudgeStudies reads: Bootstrap resamples for the effective sizes; Partial reads a study
// that has not ended from its finished runs, scored here; OODWindows > −1 scores the primaries' γ arms on the
// out-of-distribution texts (that many windows per text, 0: each whole; −1: not scored), cached in each run;
// Log, when set, gets a line per model scored.
type JudgeOptions struct {
	Bootstrap  int
	Partial    bool
	OODWindows int
	// HeldOut are the corpus's npm archives, whose held-out text (ReadHeldOutText) the primaries' γ arms are
	// scored on by source, each document whole (none: not scored).
	HeldOut []string
	Log     io.Writer
}

// JudgeStudies judges plan p's primaries on the finished runs of outs (ReadStudyRuns, LadderEvidence): each γ
// at the rate its runs have at the primaries' width (one rate per γ there, else an error), every other rate
// (a rate check) left out; then the family of language secondaries (judgeLanguages).
func JudgeStudies(p *experiment.Plan, outs []string, o JudgeOptions) (*StudyVerdict, error) {
	spec, err := parsePrimaries(p)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", p.Name, err)
	}
	if spec == nil || p.Horizon == nil {
		return nil, fmt.Errorf("plan %s has no [primaries] with a width: nothing to judge", p.Name)
	}
	var text *HeldOutText
	if len(o.HeldOut) > 0 { // read and checked against the corpus before any model is scored
		// The first directory's corpus: ReadStudyRuns then holds every other to it by the files' sums.
		st, err := data.ReadStats(filepath.Join(outs[0], experiment.DataDir))
		if err != nil {
			return nil, fmt.Errorf("--held-out: %s: %w", outs[0], err)
		}
		if o.Log != nil {
			fmt.Fprintf(o.Log, "reading the held-out text of %d archives (a minute for the bilingual corpus's)\n", len(o.HeldOut))
		}
		if text, err = ReadHeldOutText(st, o.HeldOut); err != nil {
			return nil, err
		}
		if o.Log != nil {
			fmt.Fprintf(o.Log, "held-out text: %d documents\n", len(text.Docs))
		}
	}
	all, st, err := ReadStudyRuns(outs, o.Partial, o.Log)
	if err != nil {
		return nil, err
	}
	runs, left, err := planRuns(p, all)
	if err != nil {
		return nil, err
	}
	width := p.Horizon.Width
	lrs := map[float64]float64{}
	for _, r := range runs {
		if r.Width != width {
			continue
		}
		if lr, ok := lrs[r.Gamma]; ok && lr != r.LR {
			return nil, fmt.Errorf("γ = %g has runs at two rates at width %d (%g and %g): which is the primaries' is not known", r.Gamma, width, lr, r.LR)
		}
		lrs[r.Gamma] = r.LR
	}
	source := fmt.Sprintf("the final models on the whole validation split, read at the training mix (%s)", st.Summary())
	ev, err := LadderEvidence(runs, width, lrs, source, spec)
	if err != nil {
		return nil, err
	}
	if o.OODWindows >= 0 {
		if err := addOOD(ev, runs, lrs, o); err != nil {
			return nil, err
		}
	}
	if text != nil {
		if err := addHeldOut(ev, runs, lrs, text, o.Log); err != nil {
			return nil, err
		}
	}
	v := &StudyVerdict{Plan: p.Name, Outs: outs, Inputs: ev, Claims: judgePrimaries(ev, o.Bootstrap), Runs: runs, LeftOut: left}
	v.Languages = judgeLanguages(ev, o.OODWindows)
	if le, err := lineEffectiveSize(ev.Ladder, width, o.Bootstrap); err != nil {
		v.EffSizeLineError = err.Error()
	} else {
		v.EffSizeLine = &le
	}
	return v, nil
}

// WriteText prints the verdict: each claim's verdict, reason and evidence, the effective size, and the claim
// table.
func (v *StudyVerdict) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "plan %s, runs of %s: %s\n", v.Plan, strings.Join(v.Outs, ", "), v.Inputs.Source)
	fmt.Fprintf(w, "%d runs of the plan's groups read, one recipe; %d left out\n", len(v.Runs), len(v.LeftOut))
	for _, l := range v.LeftOut {
		fmt.Fprintf(w, "  left out %s\n", l)
	}
	fmt.Fprintln(w)
	for _, c := range v.Claims {
		fmt.Fprintf(w, "%s: %s — %s\n", c.ID, c.Text, c.Verdict)
		if c.Reason != "" {
			fmt.Fprintf(w, "  why: %s\n", c.Reason)
		}
		fmt.Fprintf(w, "  %s\n\n", c.Evidence)
	}
	if le := v.EffSizeLine; le != nil {
		fmt.Fprintf(w, "γ = 1's effective model size at width %d (the γ = 0.5 line L = %.4f %+.4f·ln N, residuals %s): %s\n\n",
			le.Width, le.A, le.B, fmtResiduals(le.Residuals), le.Reading)
	} else {
		fmt.Fprintf(w, "γ = 1's effective model size: not read (%s)\n\n", v.EffSizeLineError)
	}
	if v.Languages != nil {
		v.Languages.WriteText(w)
	}
	res := &Result{Claims: v.Claims}
	return res.writeClaimTable(w)
}

// scoreArms scores the final models of ev's γ arms (the runs at the primaries' width and rates lrs) with score
// (given the run and its study's prepared directory OUT/data) and records each seed's bits per byte per text in
// its arm's map that field picks; what names the scores in the log's lines.
func scoreArms(ev *Evidence, runs []StudyRun, lrs map[float64]float64, log io.Writer, what string,
	score func(r StudyRun, dataDir string) (map[string]float64, error), field func(*ArmEvidence) *map[int]map[string]float64) error {
	var todo []StudyRun
	for _, r := range runs {
		if r.Width == ev.Width && math.Abs(r.LR-lrs[r.Gamma]) <= 1e-12*r.LR {
			todo = append(todo, r)
		}
	}
	for i, r := range todo {
		if log != nil {
			fmt.Fprintf(log, "%s %d/%d: %s\n", what, i+1, len(todo), r.Dir)
		}
		out := filepath.Dir(filepath.Dir(r.Dir)) // a study writes OUT/GROUP/RUN
		bpb, err := score(r, filepath.Join(out, experiment.DataDir))
		if err != nil {
			return err
		}
		a := ev.gammaArm(r.Gamma)
		if a == nil {
			continue
		}
		m := field(a)
		if *m == nil {
			*m = map[int]map[string]float64{}
		}
		(*m)[r.Seed] = bpb
	}
	return nil
}

// addOOD scores ev's γ arms on the out-of-distribution texts (scoreOOD at o.OODWindows) into ArmEvidence.OOD.
func addOOD(ev *Evidence, runs []StudyRun, lrs map[float64]float64, o JudgeOptions) error {
	return scoreArms(ev, runs, lrs, o.Log, "out-of-distribution texts", func(r StudyRun, dataDir string) (map[string]float64, error) {
		texts, err := scoreOOD(context.Background(), r.Dir, dataDir, o.OODWindows)
		bpb := map[string]float64{}
		for _, t := range texts {
			bpb[t.Name] = t.BitsPerByte()
		}
		return bpb, err
	}, func(a *ArmEvidence) *map[int]map[string]float64 { return &a.OOD })
}

// addHeldOut scores ev's γ arms on the corpus's held-out text by source (scoreHeldOutText) into
// ArmEvidence.HeldOut.
func addHeldOut(ev *Evidence, runs []StudyRun, lrs map[float64]float64, text *HeldOutText, log io.Writer) error {
	return scoreArms(ev, runs, lrs, log, "held-out text", func(r StudyRun, dataDir string) (map[string]float64, error) {
		sources, err := scoreHeldOutText(context.Background(), r.Dir, dataDir, text)
		bpb := map[string]float64{}
		for _, s := range sources {
			bpb[s.Source] = s.BitsPerByte()
		}
		return bpb, err
	}, func(a *ArmEvidence) *map[int]map[string]float64 { return &a.HeldOut })
}

func fmtResiduals(r []float64) string {
	s := make([]string, len(r))
	for i, x := range r {
		s[i] = fmt.Sprintf("%+.4f", x)
	}
	return strings.Join(s, " ")
}
