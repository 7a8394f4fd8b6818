package reproduce

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/diag/diagrec"
	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/internal/finitejson"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/stats"
	"github.com/smallinit/smallinit/train"
	"github.com/smallinit/smallinit/train/rundir"
)

// Verdicts of a claim (docs/definitions.md §7).
const (
	Supported          = "supported"
	Contradicted       = "contradicted"
	NoMeaningfulEffect = "no meaningful effect" // the interval lies inside ±δ, the smallest effect of interest
	Inconclusive       = "inconclusive"
)

// Claim is one claim of docs/definitions.md (Claims) checked against this reproduction.
type Claim struct {
	N        int    `json:"claim"`
	ID       string `json:"id,omitempty"` // "H1", "H2" for the plan's primaries; "" for a secondary
	Text     string `json:"text"`
	Verdict  string `json:"verdict"`          // Supported, Contradicted, NoMeaningfulEffect, Inconclusive, Untestable or UntestableHorizon
	Reason   string `json:"reason,omitempty"` // why it is not decided (e.g. "too few seeds: ...")
	Evidence string `json:"evidence"`         // the numbers, with their uncertainty
	// Tests are the paired comparisons behind the verdict, each with its per-seed values, interval, degrees of
	// freedom, p-value, Holm-adjusted p-value and minimum detectable effect (verdict.go).
	Tests []Test `json:"tests,omitempty"`
	// Detail holds the claim's other numbers: claim 2's size law and effective sizes, claim 4's bins, the
	// probe pilot.
	Detail any `json:"detail,omitempty"`
}

// MarshalJSON writes a number the claim could not compute as null (H2's ln span without a ladder, in Detail),
// which encoding/json cannot write.
func (c Claim) MarshalJSON() ([]byte, error) { return finitejson.Marshal(c) }

// Result is a reproduction's outcome (OUT/claims.json).
type Result struct {
	Out    string  `json:"out"`
	Seeds  int     `json:"seeds"`
	Steps  int     `json:"steps"`
	Tokens int64   `json:"tokens_per_run"`
	Runs   int     `json:"runs"`
	Claims []Claim `json:"claims"`
	// CompareA and CompareB are the run directories of claim 4's comparison (γ = 1 and γ = 0.5).
	CompareA string `json:"compare_a,omitempty"`
	CompareB string `json:"compare_b,omitempty"`
	// ValLoss is the mean validation loss, its standard error over seeds and the seed count per configuration
	// label, for the configurations that have finished runs.
	ValLoss map[string]ArmLoss `json:"val_loss"`
	// Inputs are the per-seed losses every verdict read (all but the per-token losses, which claim 4 summarises
	// per bin).
	Inputs *Evidence `json:"inputs,omitempty"`
	// Tier is the budget's tier and Smoke its smoke-test statement ("" for a budget that claims verdicts).
	Tier  string `json:"tier,omitempty"`
	Smoke string `json:"smoke_test,omitempty"`
	// Tuned are the learning-rate sweeps (every trial: the LR curves), by width and γ.
	Tuned []experiment.Tuned `json:"lr_sweeps,omitempty"`
	// Arms are each arm's mean loss with its final norm saturation and sink rate; RunScores every final model's
	// scores (validation split overall and per language, out-of-distribution texts, mechanism).
	Arms      []ArmSummary `json:"arms"`
	RunScores []RunRecord  `json:"runs_scored"`
	// Plan is the plan exactly as printed before the first run trained (OUT/plan.txt, experiment.PlanFile):
	// the registration the verdicts are held to. Empty for a run directory of a build before it was recorded.
	Plan string `json:"plan,omitempty"`
	// Primaries is the primaries' statement, δ and power as the judging build states them from the plan it
	// judges with (its priors and seeds may differ from Plan's): labelled a re-judged block, never the
	// registration.
	Primaries string `json:"primaries_rejudged,omitempty"`
	// Horizons are H1's arms at the series' shorter horizons (also in Inputs); Matched the LR grid's paired
	// gains per tuning seed at every horizon and rate.
	Horizons []HorizonArms `json:"horizons,omitempty"`
	Matched  []MatchedRow  `json:"matched_rates,omitempty"`
	// Amendments are the plan's amendments after it was printed (AmendmentPattern in the output directory),
	// each whole with its UTC time; RunTimes when each run of the plan and each cooldown branch started and
	// finished (RunTime: the files' times; the LR grid's trials are not listed). Both are absent from a
	// claims.json written before they were recorded.
	Amendments []Amendment `json:"amendments,omitempty"`
	RunTimes   []RunTime   `json:"run_times,omitempty"`
}

// ArmLoss is one configuration's validation loss over its seeds.
type ArmLoss struct {
	Mean  float64  `json:"mean"`
	SE    *float64 `json:"se"` // null with one seed
	Seeds int      `json:"seeds"`
}

// evaluate scores every run of the outcome, builds the Evidence, judges the primaries pr (nil: claims 1 and 2
// as secondaries), claims 1-4, claim 1's reasoning half on the anchor grid anc (when the plan has one) and
// claim 5.
func (res *Result) evaluate(ctx context.Context, out *experiment.Outcome, pr *Primaries, windows int, sc scoring, anc *AnchorEvidence) error {
	recs, err := scoreRuns(ctx, out, sc)
	if err != nil {
		return err
	}
	res.RunScores = recs
	res.Arms = summarise(recs)
	ev, err := evidenceOf(recs, out.ProbeDir)
	if err != nil {
		return err
	}
	ev.Primaries = pr
	ev.Grid = gridEvidence(out.Tuned, ev.Ladder)
	if ev.Horizons, err = horizonEvidence(ctx, out, sc); err != nil {
		return err
	}
	res.Horizons = ev.Horizons
	if ev.Primaries != nil {
		res.Matched = matchedRows(res.Tuned, ev.Width, ev.Primaries.TokensPerParam)
	}
	if ev.Primaries != nil {
		res.Primaries = "RE-JUDGED (stated by the build that judged the finished runs; the plan as printed before training is \"plan\"):\n" +
			describePrimaries(ev.Primaries, ev)
	}
	if b, err := inputfile.ReadFile(filepath.Join(out.Out, experiment.PlanFile), inputfile.MaxConfig); err == nil {
		res.Plan = string(b)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if res.Amendments, err = readAmendments(out.Out); err != nil {
		return err
	}
	dirs := make([]string, 0, len(out.RunList)+len(out.Branches))
	for _, r := range out.RunList {
		dirs = append(dirs, r.Dir)
	}
	for _, b := range out.Branches {
		dirs = append(dirs, b.Dir)
	}
	if res.RunTimes, err = runTimes(dirs); err != nil {
		return err
	}
	if ctx.Err() != nil { // before claim 4's comparison scores two more models
		return fmt.Errorf("%w before the token comparison: %w", train.ErrInterrupted, context.Cause(ctx))
	}
	var tokErr error
	ev.Tokens, ev.TokenRef, res.CompareA, res.CompareB, tokErr = tokenEvidence(recs, out.DataDir, windows)
	res.Inputs = ev
	res.ValLoss = map[string]ArmLoss{}
	label := func(a *ArmEvidence) {
		if a == nil || len(a.Seeds) == 0 {
			return
		}
		e := stats.Mean(values(a.Overall()), nil, ClaimAlpha)
		l := ArmLoss{Mean: e.Mean, Seeds: len(a.Seeds)}
		if se := e.SE; !math.IsNaN(se) {
			l.SE = &se
		}
		res.ValLoss[a.Name] = l
	}
	for i := range ev.Gamma {
		label(&ev.Gamma[i].ArmEvidence)
	}
	for i := range ev.SharedLR {
		label(&ev.SharedLR[i].ArmEvidence)
	}
	label(ev.NoFix05)
	label(ev.NoFix1)
	for i := range ev.Ladder {
		label(&ev.Ladder[i].G05)
		label(&ev.Ladder[i].G1)
	}
	ev.Anchor = anc
	res.Claims = Judge(ev, 500)
	if anc != nil {
		res.Claims = append(res.Claims, judgeAnchor(anc))
	}
	if tokErr != nil {
		for i := range res.Claims {
			if res.Claims[i].N == 4 {
				res.Claims[i].Evidence = tokErr.Error()
			}
		}
	}
	if res.Smoke != "" {
		for i := range res.Claims {
			res.Claims[i].Reason = strings.TrimPrefix(res.Claims[i].Reason+"; smoke-test budget: "+res.Smoke, "; ")
		}
	}
	// Claim 5: condensation then expansion.
	res.Claims = append(res.Claims, condensationClaim(recs))
	return nil
}

// seedPairs returns, per seed (ascending), the γ = 1 and γ = 0.5 run directories of the γ sweep (width 128, both
// fixes), for the seeds that have both.
func seedPairs(recs []RunRecord) (seeds []int, pairs map[int][2]string) {
	pairs = map[int][2]string{}
	for _, r := range recs {
		if r.Role != RoleGamma {
			continue
		}
		p := pairs[r.Seed]
		switch {
		case sameGamma(r.Gamma, 1):
			p[0] = r.Dir
		case sameGamma(r.Gamma, 0.5):
			p[1] = r.Dir
		}
		pairs[r.Seed] = p
	}
	for sd, p := range pairs {
		if p[0] != "" && p[1] != "" {
			seeds = append(seeds, sd)
		}
	}
	slices.Sort(seeds)
	return seeds, pairs
}

// tokenEvidence scores, seed by seed, γ = 1 (A) and γ = 0.5 (B) of the γ sweep on the validation tokens (at
// most windows windows, 0: all), and a reference that is neither and belongs to no seed: a bigram model of the
// training tokens (diag.Bigram; docs/definitions.md §4, "Token difficulty"). It favours neither γ, and no seed's contrast shares a
// trained model with another's. a and b are the first seed's pair, which the report draws.
func tokenEvidence(recs []RunRecord, dataDir string, windows int) (ts []TokenLosses, ref, a, b string, err error) {
	seeds, pairs := seedPairs(recs)
	if len(seeds) == 0 {
		return nil, "", "", "", nil
	}
	a, b = pairs[seeds[0]][0], pairs[seeds[0]][1]
	ref = "a bigram model of the training tokens (γ-neutral, the same for every seed, no trained run)"
	pool := kernel.NewPool(0)
	defer pool.Close()
	load := func(dir string) (*model.Model, error) {
		run, err := train.OpenRun(dir)
		if err != nil {
			return nil, err
		}
		return run.FinalModel(8, pool)
	}
	var toks []int32
	var bigram *diag.Bigram
	for _, sd := range seeds {
		ma, err := load(pairs[sd][0])
		if err != nil {
			return nil, ref, a, b, err
		}
		mb, err := load(pairs[sd][1])
		if err != nil {
			return nil, ref, a, b, err
		}
		if toks == nil {
			if toks, err = data.ReadTokens(filepath.Join(dataDir, data.ValFile), ma.Config.Vocab); err != nil {
				return nil, ref, a, b, err
			}
			trainToks, err := data.ReadTokens(filepath.Join(dataDir, data.TrainFile), ma.Config.Vocab)
			if err != nil {
				return nil, ref, a, b, err
			}
			if bigram, err = diag.FitBigram(trainToks, ma.Config.Vocab); err != nil {
				return nil, ref, a, b, err
			}
		}
		t := TokenLosses{Seed: sd}
		if _, err := diag.Compare(ma, mb, toks, DifficultyBins, windows, func(g diagrec.TokenGap) {
			t.A, t.B = append(t.A, float32(-math.Log(g.PA))), append(t.B, float32(-math.Log(g.PB)))
			t.Ref = append(t.Ref, float32(bigram.Loss(toks[g.Pos-1], g.Token)))
		}); err != nil {
			return nil, ref, a, b, err
		}
		ts = append(ts, t)
	}
	return ts, ref, a, b, nil
}

// Claim5SlowBound is the smallest ratio of γ = 0.5's final to initial mean stable rank for it to count as
// "changing slowly" (choice: it may lose at most half its stable rank; docs/definitions.md §7, "Condense, then expand").
const Claim5SlowBound = 0.5

// condensationClaim reads the γ = 1 and γ = 0.5 runs' diagnostics (width 128, fixes), seed by seed: the mean
// stable rank of the block matrices over training. Condense-then-expand: γ = 1's minimum is below 0.9 of its
// start and its end above 1.1 of the minimum; γ = 0.5 changes slowly: its final stable rank is at least
// Claim5SlowBound of its initial one. The depth contrast (each γ's minimum over its start) is reported.
// Supported when every seed (at least two) shows all three; contradicted when no seed's γ = 1 condenses, or
// every seed's γ = 0.5 falls below the bound; otherwise, or with one seed, inconclusive.
func condensationClaim(recs []RunRecord) Claim {
	c := Claim{N: 5, Text: "with γ = 1 weights first condense (stable rank drops) then expand; γ = 0.5 starts diffuse and changes slowly", Verdict: Inconclusive}
	seeds, pairs := seedPairs(recs)
	depth := func(ts []float64) float64 { return slices.Min(ts) / ts[0] }
	fmtTraj := func(ts []float64) string {
		s := make([]string, len(ts))
		for i, v := range ts {
			s[i] = fmt.Sprintf("%.1f", v)
		}
		return strings.Join(s, " ")
	}
	var ev []string
	shown, condensing, fast, all := 0, 0, 0, 0
	for _, sd := range seeds {
		t1, err := stableRankTrajectory(pairs[sd][0])
		if err != nil {
			c.Evidence = err.Error()
			return c
		}
		t05, err := stableRankTrajectory(pairs[sd][1])
		if err != nil {
			c.Evidence = err.Error()
			return c
		}
		if len(t1) < 3 || len(t05) < 3 {
			continue
		}
		ok, slow, condensed := condenseExpand(t1), t05[len(t05)-1] >= Claim5SlowBound*t05[0], slices.Min(t1) < 0.9*t1[0]
		shown++
		if condensed {
			condensing++
		}
		if !slow {
			fast++
		}
		if ok && slow {
			all++
		}
		ev = append(ev, fmt.Sprintf("seed %d: γ=1 %s; γ=0.5 %s; minimum over start γ=1 %.2f, γ=0.5 %.2f; γ=0.5 final over initial %.2f", sd, fmtTraj(t1), fmtTraj(t05),
			depth(t1), depth(t05), t05[len(t05)-1]/t05[0]))
	}
	if shown == 0 {
		c.Evidence = "diagnostics missing"
		return c
	}
	c.Evidence = fmt.Sprintf("mean stable rank of the block matrices over training; %s; %d of %d seeds have γ = 1 condense then expand with γ = 0.5 keeping ≥ %.0f%% of its stable rank",
		strings.Join(ev, "; "), all, shown, 100*Claim5SlowBound)
	switch {
	case shown >= 2 && all == shown:
		c.Verdict = Supported
	case shown >= 2 && (condensing == 0 || fast == shown):
		c.Verdict = Contradicted
	}
	return c
}

// condenseExpand reports whether a stable-rank trajectory dips below 0.9 of its start after the start and ends
// above 1.1 of that minimum.
func condenseExpand(ts []float64) bool {
	lo, at := math.Inf(1), 0
	for i, v := range ts {
		if v < lo {
			lo, at = v, i
		}
	}
	return lo < 0.9*ts[0] && at > 0 && ts[len(ts)-1] > 1.1*lo && at < len(ts)-1
}

// stableRankTrajectory is the mean stable rank of the q, k, v, o and FFN matrices at each diagnostics step of
// the run in dir.
func stableRankTrajectory(dir string) ([]float64, error) {
	run, err := train.OpenRun(dir)
	if err != nil {
		return nil, err
	}
	lines, err := rundir.Diagnostics[*diagrec.Record](run.Run)
	if err != nil {
		return nil, err
	}
	var out []float64
	for _, rec := range lines {
		if rec.Diagnostics == nil {
			continue
		}
		var s float64
		var n int
		for _, cl := range rec.Diagnostics.Classes {
			switch cl.Class {
			case arch.ClassQ, arch.ClassK, arch.ClassV, arch.ClassO, arch.ClassFFNGate, arch.ClassFFNUp, arch.ClassFFNDown:
				s += cl.Mean(diagrec.MetricStableRank)
				n++
			}
		}
		if n > 0 {
			out = append(out, s/float64(n))
		}
	}
	return out, nil
}
