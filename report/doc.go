// Package report turns finished (or partly finished) training runs into one self-contained HTML page: inline
// SVG figures drawn with gonum/plot's SVG backend, inline CSS, no scripts and no network references.
//
// Gather walks run directories (a run is a directory holding config.toml and metrics.jsonl, as written by
// package train), reads their metrics and diagnostics, and groups the runs into arms: runs whose resolved
// configs differ only in the seed (and in bookkeeping keys such as intervals and data paths). The page opens
// with the results: a two-sentence reading of the final losses against the seed noise, and each arm's final
// loss ± its standard error over seeds. Render then draws, each only when its data exists, the loss curves per
// arm, the validation loss against γ with seed error bars, the 2×2 of fixes (γ × default/fixed ε and attention
// gate), both on a y axis no tighter than the seed noise, the loss against model size with a fitted
// L(N) = E + A·N^(−α), the stable-rank and row-cosine trajectories per tensor class (every arm on its column's
// axes), row-cosine heatmaps of one matrix early and late, the first-token attention mass, sink rate and norm
// output RMS per layer, the token-difficulty comparison of two models and a coordinate check, followed by a
// table of every run. Each
// figure is a row of one figure table (figureTable) that builds a Chart from the runs.
//
// report is the one package that draws figures and writes pages, and DrawChart the one way it draws them. Its
// own figures and those of other packages are data (Chart: rows of Panels of Bars, Series or Grids; a series
// in an arm's palette colour, or a dashed fitted or black reference curve). DrawChart draws one with the
// palette and the colour scale of its quantity (ScaleCosine for cosines, ScaleFraction for shares), WritePage
// lays out a PageSpec of sections, charts and tables (the reproduction's figures page, the anchor diagram), with
// the one page template the report of runs uses too.
// report reads files and draws: it loads no model. The heatmaps and the token comparison are computed by
// package analyze (analyze.Heatmaps of HeatmapSources' model directories, analyze.CompareModels) and given to
// Make as data (Request.Heatmaps, Request.Compare); analyze.MakeReport does both and calls Make. The size
// law of a line is fit.Fit's, and the meaning of config keys is the recipe's (recipe.Key).
package report
