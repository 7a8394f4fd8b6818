// Package stats holds the statistics behind smallinit's verdicts (docs/definitions.md §7): Student t quantiles, paired
// differences by seed with t-intervals on n − 1 degrees of freedom, least-squares slopes, Holm and Bonferroni
// corrections for a claim that compares several arms, and the smallest effect a comparison could have
// detected given its measured seed noise.
//
// A typical comparison of two arms run on the same seeds:
//
//	d := stats.Paired(lossBaseline, lossTreated) // per seed: baseline − treated
//	e := stats.Mean(d.Values, d.Seeds, 0.05)     // mean, t-interval on n − 1 df, p-value, MDE
//	if e.Lo > 0 { ... }                          // the treated arm is lower beyond the interval
//
// The package is arithmetic only: it knows nothing of runs, arms or claims.
package stats
