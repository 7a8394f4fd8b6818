// Package diagrec holds diag's records as plain data: the lines of a run's diagnostics.jsonl (Record, with the
// weight metrics of each matrix and the activation metrics of each layer), the file of a token-level comparison
// (CompareRecord) and of a coordinate check (Coordcheck), and the metric tables that name their fields
// (WeightMetrics, LayerMetrics; docs/definitions.md §4). diag computes them from models; this package stands
// below the model, so that a reader (a report) decodes and draws them without building the model or its
// kernels. Every package, diag too, names them with diagrec's prefix.
package diagrec
