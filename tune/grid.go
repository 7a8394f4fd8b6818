package tune

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/smallinit/smallinit/internal/workers"
)

// SeedTrainer trains one arm at peak learning rate lr on one seed for the full horizon and returns its loss on
// the LR-selection slice and its spike statistic (stats.Spike of its training loss). A diverged run may return
// a non-finite loss: that trial counts as the worst, not as an error. An error stops the search. With
// GridOptions.Jobs > 1 it is called from that many goroutines at once, each call with another (lr, seed).
type SeedTrainer func(lr float64, seed uint64) (loss, spike float64, err error)

// GridOptions configure SelectGrid: every learning rate of LRs (increasing, factor-spaced) trained at the full
// horizon on every seed of Seeds (docs/definitions.md §7, "Learning rates": tuned at the full horizon on ≥ 2
// seeds, spiking rates vetoed).
type GridOptions struct {
	LRs   []float64
	Seeds []uint64
	// SpikeThreshold vetoes a rate whose spike statistic exceeds it on any seed (0: no veto).
	SpikeThreshold float64
	// Extend is how many rates SelectGrid may add beyond an edge of LRs, one factor (LRs[1]/LRs[0]) at a time,
	// while the best rate lies at that edge (0: none; the result then says it is not bracketed).
	Extend int
	// Jobs is how many trials train at once (0 or 1: one at a time): every (rate, seed) of LRs at once, then
	// each extension's seeds at once. The result does not depend on it: each trial's loss is kept by its rate
	// and seed, and a rate's mean sums its seeds in the order of Seeds.
	Jobs int
}

// MinGridSeeds is the fewest seeds a full-horizon grid tunes on: one seed cannot tell a spike from a rate.
const MinGridSeeds = 2

// Validate reports options SelectGrid cannot run.
func (o GridOptions) Validate() error {
	switch {
	case len(o.LRs) < 2:
		return fmt.Errorf("tune: a learning-rate grid needs at least 2 rates, have %d", len(o.LRs))
	case len(o.Seeds) < MinGridSeeds:
		return fmt.Errorf("tune: a full-horizon grid tunes on at least %d seeds, have %d", MinGridSeeds, len(o.Seeds))
	case o.SpikeThreshold < 0 || math.IsNaN(o.SpikeThreshold) || math.IsInf(o.SpikeThreshold, 0):
		return fmt.Errorf("tune: spike threshold %g: want a finite value ≥ 0", o.SpikeThreshold)
	case o.Extend < 0 || o.Extend > 8:
		return fmt.Errorf("tune: extend %d: want 0 … 8", o.Extend)
	case o.Jobs < 0:
		return fmt.Errorf("tune: jobs %d: want ≥ 0", o.Jobs)
	}
	for i, lr := range o.LRs {
		if !(lr > 0) || math.IsInf(lr, 0) {
			return fmt.Errorf("tune: learning rate %g: want positive and finite", lr)
		}
		if i > 0 && !(lr > o.LRs[i-1]) {
			return fmt.Errorf("tune: learning rates %v: want them increasing", o.LRs)
		}
	}
	if seen := map[uint64]bool{}; true {
		for _, s := range o.Seeds {
			if seen[s] {
				return fmt.Errorf("tune: seed %d listed twice", s)
			}
			seen[s] = true
		}
	}
	return nil
}

// WorstCaseTrials is the most trials SelectGrid can train: every rate and every extension on every seed.
func (o GridOptions) WorstCaseTrials() int { return (len(o.LRs) + o.Extend) * len(o.Seeds) }

// GridTrial is one trial of a grid: a rate on a seed, its selection loss (+Inf when it diverged) and spike.
type GridTrial struct {
	LR    float64 `json:"lr"`
	Seed  uint64  `json:"seed"`
	Loss  float64 `json:"loss"`
	Spike float64 `json:"spike"`
}

// GridRate is one rate of a grid over its seeds: the mean selection loss and whether it was vetoed.
type GridRate struct {
	LR     float64 `json:"lr"`
	Loss   float64 `json:"mean_loss"` // +Inf when a seed diverged
	Vetoed bool    `json:"vetoed"`    // a seed's spike statistic exceeded the threshold, or a seed diverged
}

// GridResult is SelectGrid's outcome.
type GridResult struct {
	LR   float64 `json:"lr"`        // the chosen rate: the lowest mean selection loss among the rates not vetoed
	Loss float64 `json:"mean_loss"` // its mean selection loss over the seeds
	// Bracketed is true when both neighbours of the chosen rate were trained and are worse or vetoed.
	Bracketed bool        `json:"bracketed"`
	Rates     []GridRate  `json:"rates"`  // by increasing rate
	Trials    []GridTrial `json:"trials"` // by rate, then seed
}

// RateLoss is the mean selection loss of rate lr in the grid and whether it was trained (and not vetoed).
func (r GridResult) RateLoss(lr float64) (float64, bool) {
	for _, g := range r.Rates {
		if math.Abs(g.LR-lr) <= 1e-9*lr {
			return g.Loss, !g.Vetoed
		}
	}
	return math.NaN(), false
}

// SelectGrid trains every rate of the grid on every seed and picks the rate with the lowest mean selection
// loss among those that neither spiked nor diverged on any seed. While the best lies at an edge of the grid it
// adds the next rate beyond that edge, up to Extend rates. Ties go to the smaller rate. Every rate vetoed is an
// error: no rate at this horizon trains stably. Jobs trials train at once; the first error (in rate, then seed
// order) stops the search once the trials in flight return.
func SelectGrid(o GridOptions, train SeedTrainer) (GridResult, error) {
	if err := o.Validate(); err != nil {
		return GridResult{}, err
	}
	var res GridResult
	factor := o.LRs[1] / o.LRs[0]
	rates := slices.Clone(o.LRs)
	byRate := map[float64]*GridRate{}
	// trainRates trains every seed of every rate of lrs, Jobs at a time, and records them by rate.
	trainRates := func(lrs ...float64) error {
		n := len(lrs) * len(o.Seeds)
		trials := make([]GridTrial, n)
		errs := make([]error, n)
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		workers.Each(ctx, n, o.Jobs, func(i int) {
			lr, seed := lrs[i/len(o.Seeds)], o.Seeds[i%len(o.Seeds)]
			loss, spike, err := train(lr, seed)
			if err != nil {
				errs[i] = fmt.Errorf("tune: lr %g, seed %d: %w", lr, seed, err)
				stop()
				return
			}
			if math.IsNaN(loss) || math.IsInf(loss, 0) {
				loss = math.Inf(1)
			}
			trials[i] = GridTrial{LR: lr, Seed: seed, Loss: loss, Spike: spike}
		})
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		for k, lr := range lrs {
			g := &GridRate{LR: lr}
			sum := 0.0
			for _, t := range trials[k*len(o.Seeds) : (k+1)*len(o.Seeds)] {
				res.Trials = append(res.Trials, t)
				sum += t.Loss
				if math.IsInf(t.Loss, 1) || (o.SpikeThreshold > 0 && t.Spike > o.SpikeThreshold) {
					g.Vetoed = true
				}
			}
			g.Loss = sum / float64(len(o.Seeds))
			byRate[lr] = g
		}
		return nil
	}
	if err := trainRates(rates...); err != nil {
		return res, err
	}
	best := func() int {
		b := -1
		for i, lr := range rates {
			g := byRate[lr]
			if g.Vetoed {
				continue
			}
			if b < 0 || g.Loss < byRate[rates[b]].Loss {
				b = i
			}
		}
		return b
	}
	for added := 0; added < o.Extend; added++ {
		b := best()
		var next float64
		switch {
		case b < 0:
		case b == 0:
			next = rates[0] / factor
			rates = append([]float64{next}, rates...)
		case b == len(rates)-1:
			next = rates[len(rates)-1] * factor
			rates = append(rates, next)
		}
		if next == 0 {
			break
		}
		if err := trainRates(next); err != nil {
			return res, err
		}
	}
	for _, lr := range rates {
		res.Rates = append(res.Rates, *byRate[lr])
	}
	slices.SortStableFunc(res.Trials, func(a, b GridTrial) int { return cmp.Or(cmp.Compare(a.LR, b.LR), cmp.Compare(a.Seed, b.Seed)) })
	b := best()
	if b < 0 {
		return res, fmt.Errorf("tune: every rate of %v spiked or diverged on some seed of %v: no rate trains stably at this horizon", rates, o.Seeds)
	}
	res.LR, res.Loss = rates[b], byRate[rates[b]].Loss
	worse := func(i int) bool { g := byRate[rates[i]]; return g.Vetoed || g.Loss > res.Loss }
	res.Bracketed = b > 0 && b < len(rates)-1 && worse(b-1) && worse(b+1)
	return res, nil
}

// Transfer is the one learning-rate transfer rule across widths, the same for every γ:
// LR(d) = LR(from)·(from/d)^exponent (0: the rate does not depend on the width; 1: it scales as 1/d).
func Transfer(lr float64, from, d int, exponent float64) float64 {
	return lr * math.Pow(float64(from)/float64(d), exponent)
}

// TransferCheck is the rule checked at one width where the grid was trained too: the rate the rule gives, the
// grid's best there, and the selection loss the rule's rate gives up against that best.
type TransferCheck struct {
	Gamma  float64 `json:"gamma"`
	Width  int     `json:"width"`
	RuleLR float64 `json:"rule_lr"`
	BestLR float64 `json:"best_lr"`
	// Cost is the rule's mean selection loss minus the best's (NaN when the rule's rate was not trained there
	// or was vetoed); Pass is Cost ≤ Tolerance.
	Cost      float64 `json:"cost"`
	Tolerance float64 `json:"tolerance"`
	Pass      bool    `json:"pass"`
}

// CheckTransfer checks the rule's rate ruleLR against the grid g trained at width d: it passes when the rule's
// rate was trained, was not vetoed, and loses at most tolerance nats of mean selection loss to the best rate.
func CheckTransfer(gamma float64, d int, g GridResult, ruleLR, tolerance float64) TransferCheck {
	c := TransferCheck{Gamma: gamma, Width: d, RuleLR: ruleLR, BestLR: g.LR, Tolerance: tolerance, Cost: math.NaN()}
	if loss, ok := g.RateLoss(ruleLR); ok {
		c.Cost = loss - g.Loss
		c.Pass = c.Cost <= tolerance
	}
	return c
}
