package experiment

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/smallinit/smallinit/budget"
	"github.com/smallinit/smallinit/coordcheck"
	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/sweep"
)

// Plan kinds.
const (
	KindTrain      = "train"      // arms × seeds trained to a budget, summarised and reported
	KindCoordcheck = "coordcheck" // residual ratios against width at a few steps (package coordcheck)
)

// Group data sources: what a group's runs train on.
const (
	DataCorpus = "corpus" // OUT/data/train.tok
	DataProbes = "probes" // OUT/probes-data/train.tok, the corpus with reasoning and memorisation probes mixed in
)

// Plan is a study: named recipes (arms, in groups) × seeds × a budget, the sizing of the budget, what the
// runs train on and how the result is summarised and reported. It is read from a TOML plan file (the
// built-in plans are in plans/; Builtin returns them).
type Plan struct {
	Name    string
	Title   string
	Kind    string
	Seeds   []uint64       // train.seed of each run of an arm
	Budget  Budget         // how the steps per run are sized
	Data    DataSpec       // the corpus
	Base    []override.Set // every run's recipe, before its group's and arm's
	PerStep []PerStep      // keys set from the run's steps
	Groups  []Group
	Summary bool // write summary.json (each run scored on the whole validation split) and print its table
	Report  ReportSpec
	Coord   coordcheck.Spec // KindCoordcheck only
	// Tiers are named budgets ([[tier]]): the one a budget selects (TierFor) sets the seeds, the ladder's widths
	// and the LR sweep's widths, and may declare itself a smoke test. Nil: Seeds and the groups' axes as written.
	Tiers []Tier
	Tune  *TuneSpec // [tune]: the learning-rate sweep of groups with lr = "tuned" (nil: no group is tuned)
	// Horizon is the horizon keys of [primaries]: the primary runs' width, recipe and tokens per parameter, the
	// horizon series and the learning-rate trials' spike threshold (primaries.go). Nil: the budget sizes the runs.
	Horizon *Horizon
	// Pairs are the plan's paired comparisons ([[pair]]): L(A) − L(B) seed by seed on the whole validation split,
	// each a secondary with its t-interval (pairs.go).
	Pairs []PairSpec
	// Ladder is the ladder groups' own horizon under the tier that runs (Tier.Ladder, set by Tiered; ladder.go).
	// Nil: the ladder trains at the primaries' horizon.
	Ladder *LadderHorizon
	Text   []byte // the plan file as read

	study studyTables // the tables the study design reads (study.go)

	arms int // arms of all groups (points of sweep groups, a ladder's widest tier), capped at MaxArms+1
}

// Tier is one named budget of a plan (e.g. "2h"): a budget of at least Minutes (and below the next tier's)
// runs Seeds, gives the groups marked ladder the widths Widths and sweeps the learning rate at TuneWidths.
// Smoke, when not empty, says why its verdicts are inconclusive by design (printed with the plan). A study
// design's own keys of the tier (package reproduce's anchor and scoring keys) are its to read
// (Plan.DecodeStudyTiers).
type Tier struct {
	Name       string
	Minutes    float64
	Seeds      []uint64
	Widths     []int // model.hidden_size of the ladder groups besides their other widths (nil: as written)
	TuneWidths []int // widths the LR sweep runs at (nil: TuneSpec.Widths)
	Smoke      string
	// Groups, when set, are the only groups the tier runs, and Gammas the only values of init.gamma (of the
	// groups' axes and the LR sweep): a short tier spends its budget on the horizon and the seeds of the
	// primaries before other arms (docs/definitions.md §7). Plan.Tiered applies them.
	Groups []string
	Gammas []float64
	// TokensPerParam > 0 replaces the primaries' horizon under this tier; Horizons and Cooldown replace their
	// horizon series (Horizon.Horizons). TuneLRs, by γ, replace the full-horizon grid's rates for that γ.
	TokensPerParam float64
	Horizons       []float64
	Cooldown       float64
	TuneLRs        map[float64][]float64
	// TuneExtend > 0 replaces the grid's extend ([tune] extend): how many rates past an edge the grid may add
	// while the best lies at its edge.
	TuneExtend int
	// Ladder, when set, gives the tier's ladder groups a horizon of their own (ladder.go).
	Ladder *LadderHorizon
	// MinSeeds > 0 makes Seeds the most the tier runs: the plan runs the longest prefix of Seeds, at least
	// MinSeeds long, whose expected wall time fits the budget at the horizon (chooseSeeds), and says so when
	// even MinSeeds do not fit.
	MinSeeds int
}

// TuneSpec is a plan's learning-rate sweep (package tune): for every γ of Gammas at every width of Widths, a
// factor-2 grid of Values learning rates around Center, by successive halving from MaxSteps/Eta^k up to
// MaxSteps = max(steps/StepsDiv, MinSteps) steps per trial, each trial trained on the training documents
// without the LR-selection slice and scored on that slice (data.PrepareSelection, eval.ScoreSelection), never on
// the validation split. Sets is the trials' recipe on top of the base (e.g. both fixes); Seed their seed.
type TuneSpec struct {
	Gammas   []float64
	Widths   []int
	Center   float64
	Values   int
	StepsDiv int
	MinSteps int
	Eta      int
	Seed     uint64
	Sets     []override.Set
	// Mode is TuneHalving (the default: successive halving over short trials, above) or TuneFull: every rate of
	// LRs trained at the full horizon of its width on every seed of Seeds, a rate that spikes (the primaries'
	// spike_threshold) or diverges on a seed vetoed (tune.SelectGrid), the best extended past an edge by up to
	// Extend rates. Under TuneFull, Widths[0] is the width the rate is tuned at and every other width takes
	// tune.Transfer with TransferExponent, one rule for every γ; the grid also runs at Widths[1:] (the
	// ladder's other end), where the rule is checked (tune.CheckTransfer, TransferTolerance nats of selection
	// loss; default the primaries' δ).
	Mode              string
	LRs               []float64
	Seeds             []uint64
	Extend            int
	TransferExponent  float64
	TransferTolerance float64
	// LRsByGamma, when it has a γ, replaces LRs for that γ (a tier's tune_lrs).
	LRsByGamma map[float64][]float64
}

// LR sweep modes (TuneSpec.Mode).
const (
	TuneHalving = "halving"
	TuneFull    = "full"
)

// full reports whether the sweep tunes at the full horizon (TuneFull).
func (t *TuneSpec) full() bool { return t != nil && t.Mode == TuneFull }

// Group learning-rate modes.
const (
	LRShared = "shared" // the base recipe's schedule.lr (the study's cost-free reading)
	LRTuned  = "tuned"  // each arm at the LR the plan's sweep chose for its γ at its width (tune.AtWidth between swept widths)
)

// Budget sizes a plan: Minutes of wall-clock time for all runs together, divided by a throughput probe's
// tokens/s (times Efficiency) and each run's cost relative to the base model.
type Budget struct {
	Minutes        float64
	Efficiency     float64
	MinSteps       int
	RefuseBelowMin bool     // fewer steps than MinSteps is an error (else MinSteps are trained)
	LongMinutes    float64  // from this budget on, LongSeeds replace Seeds (0: never)
	LongSeeds      []uint64 //
}

// Duration is the budget of Minutes.
func (b Budget) Duration() time.Duration { return time.Duration(b.Minutes * float64(time.Minute)) }

// DataSpec is a plan's corpus: the embedded one, tokenized to Vocab tokens, or the directory Dir prepared by
// `smallinit data prepare` (Options.Data replaces it); Probes when a group trains on the probe mix.
// Selection carves the LR-selection slice and trains every run without it even where the plan does not tune
// (a plan with [tune] always does): plans that share a corpus, some tuning and some not, then train their runs
// on one stream of documents, so that their arms pair by seed.
type DataSpec struct {
	Corpus    string
	Dir       string
	Vocab     int
	Probes    bool
	Selection bool
}

// withoutSelection reports whether the plan's runs train without the LR-selection slice (data.SelectTrainFile).
func (p *Plan) withoutSelection() bool { return p.Tune != nil || p.Data.Selection }

// PerStep sets Key to max(steps/Div, 1).
type PerStep struct {
	Key string
	Div int
}

// Group is one output directory of runs: explicit arms (run directories named by arm, steps and seed), or
// axes whose cartesian product (× seeds) is a sweep (package sweep: ids, locks, job arrays, collect).
type Group struct {
	Name string
	Data string         // DataCorpus or DataProbes
	Sets []override.Set // the group's recipe on top of the base
	Arms []Arm          // explicit arms; or
	Axes []sweep.Axis   // a grid (the seed axis is the plan's seeds)
	// LR is LRShared (default) or LRTuned. EmulateEps > 0 sets each arm's model.norm_eps to the width-emulated
	// ε_eq = 1e-5·(EmulateEps/d)^(2γ) of its own γ and width (arch.EmulatedEps). Ladder marks the group
	// whose model.hidden_size axis the tier replaces; a ladder of explicit arms (each setting its own width, no
	// tier replaces it) gives each arm the steps of its width at the primaries' tokens per parameter. Seeds, when
	// set, replace the plan's (a pilot's own seed). A group with LRTuned, EmulateEps or Ladder derives keys per
	// arm, so its axes are run as arms, one per point.
	LR         string
	EmulateEps int
	Ladder     bool
	Seeds      []uint64
	// Role says what the group's runs are evidence of, for the plan's evaluator (e.g. reproduce's "gamma-grid"):
	// verdicts find their evidence by role, never by the group's name. "": none. The evaluator checks its roles.
	Role string
}

// derived reports whether the group's arms get keys computed per arm (run as arms, not as a sweep).
func (g *Group) derived() bool { return g.LR == LRTuned || g.EmulateEps > 0 || g.Ladder }

// Arm is a named recipe: the overrides that make it differ from its group's.
type Arm struct {
	Name string
	Sets []override.Set
}

// ReportSpec says what the plan's HTML report shows.
type ReportSpec struct {
	Title          string
	Exclude        []string  // groups left out of the report
	Compare        [2]string // arms whose first seeds' final models the token-difficulty comparison contrasts
	CompareWindows int       // validation windows of that comparison (0: all)
}

// planFile is the TOML layout of a plan file.
type planFile struct {
	Name    string         `toml:"name"`
	Title   string         `toml:"title"`
	Kind    string         `toml:"kind"`
	Seeds   []uint64       `toml:"seeds"`
	Summary bool           `toml:"summary"`
	Base    map[string]any `toml:"base"`
	PerStep map[string]int `toml:"per_steps"`
	Budget  struct {
		Minutes        float64  `toml:"minutes"`
		Efficiency     float64  `toml:"efficiency"`
		MinSteps       int      `toml:"min_steps"`
		RefuseBelowMin bool     `toml:"refuse_below_min"`
		LongMinutes    float64  `toml:"long_minutes"`
		LongSeeds      []uint64 `toml:"long_seeds"`
	} `toml:"budget"`
	Data struct {
		Corpus    string `toml:"corpus"`
		Dir       string `toml:"dir"`
		Vocab     int    `toml:"vocab"`
		Probes    bool   `toml:"probes"`
		Selection bool   `toml:"selection"`
	} `toml:"data"`
	Report struct {
		Title          string   `toml:"title"`
		Exclude        []string `toml:"exclude"`
		Compare        []string `toml:"compare"`
		CompareWindows int      `toml:"compare_windows"`
	} `toml:"report"`
	Coordcheck coordcheck.Spec `toml:"coordcheck"`
	// [[tier]]s are decoded one by one (tierFile), each kept for the study design's keys (study.go).
	Tier []toml.Primitive `toml:"tier"`
	// [primaries] and [anchor] are handed on to the study design (study.go); [primaries]'s horizon keys are
	// experiment's (horizonFile).
	Primaries toml.Primitive `toml:"primaries"`
	Anchor    toml.Primitive `toml:"anchor"`
	Tune      *struct {
		Gammas   []float64      `toml:"gammas"`
		Widths   []int          `toml:"widths"`
		Center   float64        `toml:"center"`
		Values   int            `toml:"values"`
		StepsDiv int            `toml:"steps_div"`
		MinSteps int            `toml:"min_steps"`
		Eta      int            `toml:"eta"`
		Seed     uint64         `toml:"seed"`
		Set      map[string]any `toml:"set"`

		Mode              string    `toml:"mode"`
		LRs               []float64 `toml:"lrs"`
		Seeds             []uint64  `toml:"seeds"`
		Extend            int       `toml:"extend"`
		TransferExponent  float64   `toml:"transfer_exponent"`
		TransferTolerance float64   `toml:"transfer_tolerance"`
	} `toml:"tune"`
	Pair []struct {
		Name string `toml:"name"`
		A    string `toml:"a"`
		B    string `toml:"b"`
	} `toml:"pair"`
	Group []groupFile `toml:"group"`
}

// groupFile is the TOML layout of a [[group]].
type groupFile struct {
	Name       string         `toml:"name"`
	Data       string         `toml:"data"`
	LR         string         `toml:"lr"`
	EmulateEps int            `toml:"emulate_eps"`
	Role       string         `toml:"role"`
	Ladder     bool           `toml:"ladder"`
	Seeds      []uint64       `toml:"seeds"`
	Set        map[string]any `toml:"set"`
	Axes       map[string]any `toml:"axes"`
	Arm        []struct {
		Name string         `toml:"name"`
		Set  map[string]any `toml:"set"`
	} `toml:"arm"`
}

// tierFile is the TOML layout of the keys of a [[tier]] that experiment reads; the tier's other keys are the
// study design's (Plan.DecodeStudyTiers).
type tierFile struct {
	Name       string    `toml:"name"`
	Minutes    float64   `toml:"minutes"`
	Seeds      []uint64  `toml:"seeds"`
	Widths     []int     `toml:"widths"`
	TuneWidths []int     `toml:"tune_widths"`
	Smoke      string    `toml:"smoke"`
	Groups     []string  `toml:"groups"`
	Gammas     []float64 `toml:"gammas"`
	MinSeeds   int       `toml:"min_seeds"`

	TokensPerParam float64              `toml:"tokens_per_param"`
	Horizons       []float64            `toml:"horizons"`
	Cooldown       float64              `toml:"cooldown"`
	TuneLRs        map[string][]float64 `toml:"tune_lrs"`
	TuneExtend     int                  `toml:"tune_extend"`
	Ladder         *ladderFile          `toml:"ladder"`
}

//go:embed plans/*.toml
var builtin embed.FS

// Builtins lists the names of the built-in plans.
func Builtins() []string {
	entries, _ := builtin.ReadDir("plans")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".toml"))
	}
	return names
}

// Builtin returns the built-in plan of that name (Builtins lists them).
func Builtin(name string) (*Plan, error) {
	b, err := builtin.ReadFile("plans/" + name + ".toml")
	if err != nil {
		return nil, fmt.Errorf("no built-in plan %q (have %s)", name, strings.Join(Builtins(), ", "))
	}
	p, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("built-in plan %s: %w", name, err)
	}
	return p, nil
}

// Load reads a plan file, or a built-in plan when path names one and no such file exists.
func Load(path string) (*Plan, error) {
	b, err := inputfile.ReadFile(path, inputfile.MaxConfig)
	if err != nil {
		// The built-in plan runs only when nothing has its name: a directory, a FIFO or an oversized file
		// called demo is the user's, and running the built-in instead would train what they did not ask for.
		builtin := slices.Contains(Builtins(), path)
		if builtin && errors.Is(err, fs.ErrNotExist) {
			return Builtin(path)
		}
		if builtin {
			return nil, fmt.Errorf("plan: %w; ./%s is not a plan file, and the built-in plan %s runs only where no file or directory has its name (rename it, or run from another directory)", err, path, path)
		}
		return nil, fmt.Errorf("plan: %w", err)
	}
	p, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", path, err)
	}
	return p, nil
}

// Parse reads a plan from TOML (see plans/demo.toml for the layout). Every key is checked: an unknown one, a
// group without arms or axes, an arm without a name or a bad value is an error naming it. The recipes are
// resolved (train.LoadSets) by Run, which names the arm whose recipe does not load.
func Parse(text []byte) (*Plan, error) {
	f, md, tiers, err := decodePlan(text)
	if err != nil {
		return nil, err
	}
	p := &Plan{Name: f.Name, Title: f.Title, Kind: f.Kind, Seeds: f.Seeds, Summary: f.Summary, Text: text,
		study: studyTables{md: md, tables: map[string]toml.Primitive{}, tiers: f.Tier},
		Base:  override.Flatten(f.Base),
		Budget: Budget{Minutes: f.Budget.Minutes, Efficiency: f.Budget.Efficiency, MinSteps: f.Budget.MinSteps,
			RefuseBelowMin: f.Budget.RefuseBelowMin, LongMinutes: f.Budget.LongMinutes, LongSeeds: f.Budget.LongSeeds},
		Data:   DataSpec{Corpus: f.Data.Corpus, Dir: f.Data.Dir, Vocab: f.Data.Vocab, Probes: f.Data.Probes, Selection: f.Data.Selection},
		Report: ReportSpec{Title: f.Report.Title, Exclude: f.Report.Exclude, CompareWindows: f.Report.CompareWindows},
		Coord:  f.Coordcheck,
	}
	for name, prim := range map[string]toml.Primitive{TablePrimaries: f.Primaries, TableAnchor: f.Anchor} {
		if md.IsDefined(name) {
			p.study.tables[name] = prim
		}
	}
	if err := p.parseHeader(f); err != nil {
		return nil, err
	}
	switch p.Kind {
	case KindCoordcheck:
		if err := p.Coord.Validate(); err != nil {
			return nil, err
		}
		return p, nil
	case KindTrain:
	default:
		return nil, fmt.Errorf("kind %q: want %s or %s", p.Kind, KindTrain, KindCoordcheck)
	}
	if err := p.checkTrain(md); err != nil {
		return nil, err
	}
	if len(f.Group) == 0 {
		return nil, fmt.Errorf("no [[group]]: nothing to run")
	}
	for i := range f.Group {
		if err := p.parseGroup(i, &f.Group[i], f.Tune != nil); err != nil {
			return nil, err
		}
	}
	if md.IsDefined(TablePrimaries) {
		var hf horizonFile
		if err := md.PrimitiveDecode(f.Primaries, &hf); err != nil {
			return nil, fmt.Errorf("primaries: %w", err)
		}
		if p.Horizon, err = parseHorizon(&hf); err != nil {
			return nil, err
		}
	}
	if err := parseTiers(p, tiers, f); err != nil {
		return nil, err
	}
	if err := countArms(p); err != nil {
		return nil, err
	}
	if err := p.parseReport(f); err != nil {
		return nil, err
	}
	return p, nil
}

// studyTierKey reports whether k is a key of a [[tier]] left to the study design: a direct key of the tier that
// experiment does not read (a key inside a table experiment reads, such as the tier's ladder, is experiment's).
func studyTierKey(k toml.Key) bool { return len(k) == 2 && k[0] == "tier" }

// decodePlan decodes a plan file: its TOML (nested no deeper than override.CheckDepth allows), each [[tier]]'s
// keys that experiment reads, and [primaries]'s horizon keys; a key that neither experiment nor, in the study
// design's tables and tiers, the design may read is an error naming it.
func decodePlan(text []byte) (*planFile, toml.MetaData, []tierFile, error) {
	var f planFile
	if err := override.CheckDepth(text); err != nil {
		return nil, toml.MetaData{}, nil, err
	}
	md, err := toml.Decode(string(text), &f)
	if err != nil {
		return nil, md, nil, err
	}
	tiers := make([]tierFile, len(f.Tier))
	for i, prim := range f.Tier {
		if err := md.PrimitiveDecode(prim, &tiers[i]); err != nil {
			return nil, md, nil, fmt.Errorf("tier %d: %w", i+1, err)
		}
	}
	if md.IsDefined(TablePrimaries) {
		if err := md.PrimitiveDecode(f.Primaries, &horizonFile{}); err != nil {
			return nil, md, nil, fmt.Errorf("primaries: %w", err)
		}
	}
	var keys []string
	for _, k := range md.Undecoded() {
		if k[0] != TablePrimaries && k[0] != TableAnchor && !studyTierKey(k) {
			keys = append(keys, k.String())
		}
	}
	sort.Strings(keys)
	if len(keys) > 0 {
		return nil, md, nil, fmt.Errorf("unknown key %s", strings.Join(keys, ", "))
	}
	return &f, md, tiers, nil
}

// parseHeader checks the plan's name, kind, seeds, per-step keys and report.compare, and fills in their
// defaults.
func (p *Plan) parseHeader(f *planFile) error {
	if p.Name == "" {
		return fmt.Errorf("name: a plan needs a name")
	}
	// The plan's name is written into files (the grid files' first line, reports): the one name alphabet keeps
	// a newline from adding a line to them.
	if err := checkName("name", p.Name); err != nil {
		return err
	}
	for _, t := range []struct{ what, s string }{{"title", p.Title}, {"report.title", p.Report.Title}, {"data.dir", p.Data.Dir}} {
		if err := checkLine(t.what, t.s); err != nil {
			return err
		}
	}
	if p.Kind == "" {
		p.Kind = KindTrain
	}
	if p.Report.Title == "" {
		p.Report.Title = p.Title
	}
	if len(p.Seeds) == 0 {
		p.Seeds = []uint64{0}
	}
	if err := checkSeeds("seeds", p.Seeds); err != nil {
		return err
	}
	if err := checkSeeds("budget.long_seeds", p.Budget.LongSeeds); err != nil {
		return err
	}
	for k, n := range f.PerStep {
		if n < 1 {
			return fmt.Errorf("per_steps %q = %d: want a divisor ≥ 1", k, n)
		}
		p.PerStep = append(p.PerStep, PerStep{Key: k, Div: n})
	}
	sort.Slice(p.PerStep, func(i, j int) bool { return p.PerStep[i].Key < p.PerStep[j].Key })
	switch len(f.Report.Compare) {
	case 0:
	case 2:
		p.Report.Compare = [2]string{f.Report.Compare[0], f.Report.Compare[1]}
	default:
		return fmt.Errorf("report.compare: want two arm names, have %d", len(f.Report.Compare))
	}
	return nil
}

// checkTrain checks a training plan's corpus, budget and base recipe.
func (p *Plan) checkTrain(md toml.MetaData) error {
	if p.Data.Corpus != "embedded" {
		return fmt.Errorf("data.corpus %q: this build prepares only the embedded corpus", p.Data.Corpus)
	}
	if err := data.CheckVocab("data.vocab =", p.Data.Vocab); err != nil {
		return err
	}
	if p.Data.Dir != "" && md.IsDefined("data", "vocab") {
		return fmt.Errorf("data.vocab = %d beside data.dir = %q: a prepared corpus's vocabulary is its tokenizer's (stats.json's vocab_size), and data.vocab would do nothing; drop data.vocab",
			p.Data.Vocab, p.Data.Dir)
	}
	if !(p.Budget.Minutes > 0) || !(p.Budget.Efficiency > 0) || p.Budget.Efficiency > 1 || p.Budget.MinSteps < 1 {
		return fmt.Errorf("budget: want minutes > 0, efficiency in (0, 1] and min_steps ≥ 1")
	}
	if p.Budget.MinSteps > budget.MaxSteps {
		return fmt.Errorf("budget.min_steps = %d: at most %d steps per run", p.Budget.MinSteps, budget.MaxSteps)
	}
	if err := budget.CheckMinutes("budget.minutes", p.Budget.Minutes); err != nil {
		return err
	}
	if p.Budget.LongMinutes != 0 {
		if err := budget.CheckMinutes("budget.long_minutes", p.Budget.LongMinutes); err != nil {
			return err
		}
	}
	if err := checkPlanSets("base", p.Base, p.PerStep); err != nil {
		return err
	}
	return nil
}

// parseGroup reads the plan file's group i (fg) into p.Groups, checking its name, data, learning-rate mode,
// recipe and its arms or axes; tuned says whether the plan has a [tune].
func (p *Plan) parseGroup(i int, fg *groupFile, tuned bool) error {
	g := Group{Name: fg.Name, Data: fg.Data, Sets: override.Flatten(fg.Set), LR: fg.LR, EmulateEps: fg.EmulateEps, Ladder: fg.Ladder, Seeds: fg.Seeds, Role: fg.Role}
	where := fmt.Sprintf("group %d (%s)", i+1, g.Name)
	switch g.LR {
	case "":
		g.LR = LRShared
	case LRShared:
	case LRTuned:
		if !tuned {
			return fmt.Errorf("%s: lr = %q but the plan has no [tune]", where, LRTuned)
		}
	default:
		return fmt.Errorf("%s: lr %q: want %s or %s", where, g.LR, LRShared, LRTuned)
	}
	if g.EmulateEps < 0 {
		return fmt.Errorf("%s: emulate_eps = %d: want a target width > 0 (or 0: off)", where, g.EmulateEps)
	}
	if (g.LR == LRTuned || g.EmulateEps > 0) && len(fg.Arm) > 0 {
		return fmt.Errorf("%s: lr = tuned and emulate_eps apply to axes, not to [[group.arm]]s", where)
	}
	if err := checkGroupName(where, g.Name); err != nil {
		return err
	}
	if slices.ContainsFunc(p.Groups, func(h Group) bool { return h.Name == g.Name }) {
		return fmt.Errorf("%s: want a unique directory name", where)
	}
	if err := checkSeeds(where+": seeds", g.Seeds); err != nil {
		return err
	}
	if err := checkPlanSets(where+": set", g.Sets, p.PerStep); err != nil {
		return err
	}
	if g.Data == "" {
		g.Data = DataCorpus
	}
	if g.Data != DataCorpus && g.Data != DataProbes {
		return fmt.Errorf("%s: data %q: want %s or %s", where, g.Data, DataCorpus, DataProbes)
	}
	if g.Data == DataProbes && !p.Data.Probes {
		return fmt.Errorf("%s: trains on the probe mix but data.probes is false", where)
	}
	if (len(fg.Arm) > 0) == (len(fg.Axes) > 0) {
		return fmt.Errorf("%s: want either [[group.arm]]s or axes", where)
	}
	if err := p.parseMembers(where, fg, &g); err != nil {
		return err
	}
	p.Groups = append(p.Groups, g)
	return nil
}

// parseMembers reads a group's explicit arms (each named once) or its axes (non-empty lists, the seed not
// among them) into g, checking their keys.
func (p *Plan) parseMembers(where string, fg *groupFile, g *Group) error {
	arms := map[string]bool{}
	for _, fa := range fg.Arm {
		if err := checkName(where+": arm", fa.Name); err != nil {
			return err
		}
		if arms[fa.Name] {
			return fmt.Errorf("%s: arm %q is named twice", where, fa.Name)
		}
		arms[fa.Name] = true
		a := Arm{Name: fa.Name, Sets: override.Flatten(fa.Set)}
		if err := checkPlanSets(fmt.Sprintf("%s: arm %s: set", where, a.Name), a.Sets, p.PerStep); err != nil {
			return err
		}
		g.Arms = append(g.Arms, a)
	}
	for _, s := range override.Flatten(fg.Axes) {
		list, ok := s.Value.([]any)
		if !ok || len(list) == 0 {
			return fmt.Errorf("%s: axes %q: want a non-empty list", where, s.Key)
		}
		if s.Key == recipe.KeySeed {
			return fmt.Errorf("%s: axes: seed is the plan's seeds, not an axis", where)
		}
		if err := checkPlanSets(where+": axes", []override.Set{s}, p.PerStep); err != nil {
			return err
		}
		g.Axes = append(g.Axes, sweep.Axis{Key: s.Key, Values: list})
	}
	return nil
}

// parseReport checks report.exclude's groups and report.compare's arms, and reads the plan's pairs.
func (p *Plan) parseReport(f *planFile) error {
	if err := eval.CheckWindows("report.compare_windows", p.Report.CompareWindows); err != nil {
		return err
	}
	for _, x := range p.Report.Exclude {
		if !slices.ContainsFunc(p.Groups, func(g Group) bool { return g.Name == x }) {
			return fmt.Errorf("report.exclude: no group %q", x)
		}
	}
	for _, a := range p.Report.Compare {
		if a != "" && p.findArm(a) == nil {
			return fmt.Errorf("report.compare: no arm %q", a)
		}
	}
	for i, pr := range f.Pair {
		if pr.Name == "" || pr.A == "" || pr.B == "" || pr.A == pr.B {
			return fmt.Errorf("pair %d: want a name and two different arms a and b", i+1)
		}
		if err := checkLine(fmt.Sprintf("pair %d: name", i+1), pr.Name); err != nil {
			return err
		}
		for _, a := range []string{pr.A, pr.B} {
			if p.findArm(a) == nil {
				return fmt.Errorf("pair %s: no arm %q (a pair compares two explicit arms)", pr.Name, a)
			}
		}
		p.Pairs = append(p.Pairs, PairSpec{Name: pr.Name, A: pr.A, B: pr.B})
	}
	return nil
}

// findArm returns the arm of that name in an arms group, and its group.
func (p *Plan) findArm(name string) *Group {
	for i := range p.Groups {
		for _, a := range p.Groups[i].Arms {
			if a.Name == name {
				return &p.Groups[i]
			}
		}
	}
	return nil
}

// SeedsFor are the seeds a budget runs: its tier's, else LongSeeds from LongMinutes on, else Seeds.
func (p *Plan) SeedsFor(budget time.Duration) []uint64 {
	if t := p.TierFor(budget); t != nil && len(t.Seeds) > 0 {
		return t.Seeds
	}
	if p.Budget.LongMinutes > 0 && len(p.Budget.LongSeeds) > 0 && budget.Minutes() >= p.Budget.LongMinutes {
		return p.Budget.LongSeeds
	}
	return p.Seeds
}

// BudgetChooses says whether a budget chooses more than the steps per run (a tier, or LongSeeds): with the
// steps given, such a plan still reads the budget, and another plan ignores it.
func (p *Plan) BudgetChooses() bool {
	return len(p.Tiers) > 0 || p.Budget.LongMinutes > 0 && len(p.Budget.LongSeeds) > 0
}

// SeedRange is the seeds 0 … n−1.
func SeedRange(n int) []uint64 {
	s := make([]uint64, n)
	for i := range s {
		s[i] = uint64(i)
	}
	return s
}
