// Package report turns finished (or partly finished) training runs into one self-contained HTML page: inline
// SVG figures drawn with gonum/plot's SVG backend, inline CSS, no scripts and no network references.
//
// Gather walks run directories (a run is a directory holding config.toml and metrics.jsonl, as written by
// package train), reads their metrics and diagnostics, and groups the runs into arms: runs whose resolved
// configs differ only in the seed (and in bookkeeping keys such as intervals and data paths). Render draws,
// each only when its data exists, the loss curves per arm, the validation loss against γ with seed error
// bars, the 2×2 of fixes (γ × default/fixed ε and attention gate), the loss against model size with a fitted
// L(N) = E + A·N^(−α), the stable-rank and row-cosine trajectories per tensor class, row-cosine heatmaps of
// one matrix early and late, the first-token attention mass, sink rate and norm output RMS per layer, the
// token-difficulty comparison of two models and a coordinate check, followed by a table of every run.
package report
