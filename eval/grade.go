package eval

import "math"

// grader is how a kind turns its records' scores into metrics, a field of the kind's row (kindSpecs): exactly
// one of choices (multiple-choice and cloze kinds: every choice scored by its log-likelihood) and check
// (generative kinds: a greedy completion checked against the answer) adds a record to the aggregate, and
// metrics lists the task's metrics in report order. Whether a kind generates is whether its grader checks
// completions, so a generative kind cannot fall into multiple-choice metrics; a row without a whole grader
// fails TestEveryKindRowGrades.
type grader struct {
	choices func(a *aggregate, d *doc, s []Score)
	check   func(a *aggregate, d *doc, gold Score, out string) bool // whether the completion out is correct
	metrics func(a *aggregate) Metrics
}

// The graders of the kinds' rows.
var (
	// mcGrader: the most likely choice (acc), the most likely per byte (acc_norm_bytes), the gold choice's loss
	// and its margin over the best distractor.
	mcGrader = grader{choices: addMC, metrics: mcMetrics}
	// subjectMCGrader: mcGrader with accuracy per subject and their unweighted mean (CMMLU, C-Eval).
	subjectMCGrader = grader{choices: addSubjectMC, metrics: subjectMCMetrics}
	// clozeGrader: LAMBADA's greedy accuracy and loss of the last word.
	clozeGrader = grader{choices: addCloze, metrics: clozeMetrics}
	// gsm8kGrader and numericGrader: strict and flexible exact match (the harness's GSM8K extraction, and the
	// first line or last number of MGSM and CMATH).
	gsm8kGrader   = grader{check: checkWith(gradeGSM8K), metrics: numericMetrics}
	numericGrader = grader{check: checkWith(gradeNumeric), metrics: numericMetrics}
	// mathGrader: exact match of the normalised final boxed answer, and how often one is boxed.
	mathGrader = grader{check: checkMATH, metrics: mathMetrics}
	// probeGrader: the first line's exact match, overall, per probe class and per probe kind, beside chance.
	probeGrader = grader{check: checkProbe, metrics: probeMetrics}
)

// generative reports whether the grader checks completions (the kind generates) rather than scoring choices.
func (g grader) generative() bool { return g.check != nil }

// aggregate accumulates a task's metrics.
type aggregate struct {
	g        grader
	subjects int // per-subject kinds: how many subjects the kind knows
	// multiple choice and cloze
	acc, accNorm accuracy
	goldLoss     mean // gold continuation's mean loss per token (nats)
	margin       mean // log p(gold) − max log p(distractor) (nats)
	chance       mean
	clozeLoss    mean // LAMBADA: −log p(continuation) (nats)
	strict, flex accuracy
	boxed        accuracy
	byKind       map[string]*accuracy
	lossByClass  map[string]*mean
	accByClass   map[string]*accuracy
	// probes: chance levels of the records that carry one, overall (chance), per class and per kind
	chanceByKind  map[string]*mean
	chanceByClass map[string]*mean
	// per-subject kinds: accuracy by subject
	accBySubject map[string]*accuracy
}

// newAggregate starts the aggregate of a task of kind k, graded by its row's grader.
func newAggregate(k Kind) *aggregate {
	ks := kindSpecs[k]
	return &aggregate{g: ks.grader, subjects: len(ks.subjects), byKind: map[string]*accuracy{}, lossByClass: map[string]*mean{},
		accByClass: map[string]*accuracy{}, chanceByKind: map[string]*mean{}, chanceByClass: map[string]*mean{}, accBySubject: map[string]*accuracy{}}
}

// addChoices scores one multiple-choice or cloze record.
func (a *aggregate) addChoices(d *doc, s []Score) { a.g.choices(a, d, s) }

// addGenerative checks one completion and returns whether it is correct (flexible for numeric tasks).
func (a *aggregate) addGenerative(d *doc, gold Score, out string) bool {
	if gold.Tokens > 0 {
		a.goldLoss.add(-gold.LogProb / float64(gold.Tokens))
	}
	return a.g.check(a, d, gold, out)
}

// metrics lists the task's metrics in report order.
func (a *aggregate) metrics() Metrics { return a.g.metrics(a) }

func addCloze(a *aggregate, d *doc, s []Score) {
	a.acc.add(s[0].Greedy)
	a.clozeLoss.add(-s[0].LogProb)
	if s[0].Tokens > 0 {
		a.goldLoss.add(-s[0].LogProb / float64(s[0].Tokens))
	}
}

func clozeMetrics(a *aggregate) Metrics {
	l := a.clozeLoss.metric("loss")
	return Metrics{a.acc.metric("acc"), l, plain("perplexity", math.Exp(l.Value), l.N), a.goldLoss.metric("gold_loss_per_token")}
}

func addMC(a *aggregate, d *doc, s []Score) {
	mcChoose(a, d, s)
	mcLossAndMargin(a, d, s)
}

// addSubjectMC is addMC that also counts the record's subject's accuracy.
func addSubjectMC(a *aggregate, d *doc, s []Score) {
	best := mcChoose(a, d, s)
	acc := a.accBySubject[d.subject]
	if acc == nil {
		acc = &accuracy{}
		a.accBySubject[d.subject] = acc
	}
	acc.add(best == d.gold)
	mcLossAndMargin(a, d, s)
}

// mcChoose adds the record's acc and acc_norm_bytes and returns its most likely choice.
func mcChoose(a *aggregate, d *doc, s []Score) int {
	best, bestNorm := 0, 0
	norm := func(j int) float64 { return s[j].LogProb / float64(max(len(d.choices[j]), 1)) }
	for j := range s {
		if s[j].LogProb > s[best].LogProb {
			best = j
		}
		if norm(j) > norm(bestNorm) {
			bestNorm = j
		}
	}
	a.acc.add(best == d.gold)
	a.accNorm.add(bestNorm == d.gold)
	return best
}

// mcLossAndMargin adds the gold choice's loss per token, its margin over the best distractor and the record's
// chance level.
func mcLossAndMargin(a *aggregate, d *doc, s []Score) {
	if s[d.gold].Tokens > 0 {
		a.goldLoss.add(-s[d.gold].LogProb / float64(s[d.gold].Tokens))
	}
	other := math.Inf(-1)
	for j := range s {
		if j != d.gold {
			other = math.Max(other, s[j].LogProb)
		}
	}
	a.margin.add(s[d.gold].LogProb - other)
	a.chance.add(1 / float64(len(s)))
}

func mcMetrics(a *aggregate) Metrics {
	return Metrics{a.acc.metric("acc"), a.accNorm.metric("acc_norm_bytes"), plain("chance", a.chance.mu, a.chance.n),
		a.goldLoss.metric("gold_loss_per_token"), a.margin.metric("ll_margin")}
}

// subjectMCMetrics is mcMetrics, then acc_subject_mean and each subject's accuracy.
func subjectMCMetrics(a *aggregate) Metrics {
	ms := append(mcMetrics(a), subjectMean(a.accBySubject, a.subjects))
	for _, s := range sortedKeys(a.accBySubject) {
		ms = append(ms, a.accBySubject[s].metric("acc_"+s))
	}
	return ms
}

// checkWith is the check of a numeric kind whose grade gives its strict and flexible matches; the record is
// correct when the flexible one is.
func checkWith(grade func(out, gold string) (strict, flexible bool)) func(*aggregate, *doc, Score, string) bool {
	return func(a *aggregate, d *doc, _ Score, out string) bool {
		s, f := grade(out, d.answer)
		a.strict.add(s)
		a.flex.add(f)
		return f
	}
}

func numericMetrics(a *aggregate) Metrics {
	return Metrics{a.strict.metric("exact_match_strict"), a.flex.metric("exact_match_flexible"), a.goldLoss.metric("gold_loss_per_token")}
}

func checkMATH(a *aggregate, d *doc, _ Score, out string) bool {
	_, has := LastBoxed(out)
	a.boxed.add(has)
	ok := MathEqual(MathAnswer(out), d.answer)
	a.acc.add(ok)
	return ok
}

func mathMetrics(a *aggregate) Metrics {
	return Metrics{a.acc.metric("exact_match"), a.boxed.metric("boxed_rate"), a.goldLoss.metric("gold_loss_per_token")}
}

func checkProbe(a *aggregate, d *doc, gold Score, out string) bool {
	ok := probeCorrect(out, d.answer)
	a.acc.add(ok)
	acc := a.byKind[d.probeKind]
	if acc == nil {
		acc = &accuracy{}
		a.byKind[d.probeKind] = acc
	}
	acc.add(ok)
	class := ProbeClass(d.probeKind)
	if a.accByClass[class] == nil {
		a.accByClass[class], a.lossByClass[class] = &accuracy{}, &mean{}
	}
	a.accByClass[class].add(ok)
	if gold.Tokens > 0 {
		a.lossByClass[class].add(-gold.LogProb / float64(gold.Tokens))
	}
	if d.probeChance > 0 {
		a.chance.add(d.probeChance)
		addMean(a.chanceByKind, d.probeKind, d.probeChance)
		addMean(a.chanceByClass, class, d.probeChance)
	}
	return ok
}

// addMean adds x to the mean m[key], creating it if needed.
func addMean(m map[string]*mean, key string, x float64) {
	if m[key] == nil {
		m[key] = &mean{}
	}
	m[key].add(x)
}

func probeMetrics(a *aggregate) Metrics {
	// chance follows each accuracy whose records all carry a chance level (a mean over fewer would not be
	// that accuracy's chance).
	withChance := func(ms Metrics, acc accuracy, ch *mean, suffix string) Metrics {
		ms = append(ms, acc.metric("acc"+suffix))
		if ch != nil && ch.n == acc.n {
			ms = append(ms, plain("chance"+suffix, ch.mu, ch.n))
		}
		return ms
	}
	ms := withChance(nil, a.acc, &a.chance, "")
	for _, c := range []string{ProbeReasoning, ProbeMemorisation} {
		if acc := a.accByClass[c]; acc != nil {
			ms = withChance(ms, *acc, a.chanceByClass[c], "_"+c)
		}
	}
	ms = append(ms, a.goldLoss.metric("gold_loss_per_token"))
	for _, c := range []string{ProbeReasoning, ProbeMemorisation} {
		if l := a.lossByClass[c]; l != nil {
			ms = append(ms, l.metric("gold_loss_per_token_"+c))
		}
	}
	for _, k := range sortedKeys(a.byKind) {
		ms = withChance(ms, *a.byKind[k], a.chanceByKind[k], "_"+k)
	}
	return ms
}
