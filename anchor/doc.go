// Package anchor is the reasoning-against-memorisation test: the anchor-function tasks of
//
//   - Zhang, Lin, Wang, Zhang, Xu, "Initialization is Critical to Whether Transformers Fit Composite Functions
//     by Reasoning or Memorizing", NeurIPS 2024, arXiv 2405.05409 (the composite task: §3, App. B-C), and
//   - Yao, Zhang, Xu, "An Analysis for Reasoning Bias of Language Models with Small Initialization", ICML 2025,
//     arXiv 2502.04375 (the mix of reasoning and memory anchors: "Synthetic Composition Task"),
//
// their generators (deterministic per seed), the solution classifier of the held-out pair (4,3) (inferential
// x−10, symmetric x−6, other), the training of one grid cell through package train with the loss on the answer
// token only (train.loss_positions), the γ × depth phase diagram with the learning rate chosen per cell from a
// small grid (2405.05409 §4: best of 9 rates), and its table and self-contained HTML heatmaps.
//
// Sequences are laid out in a token file as n input tokens followed by the answer, n+1 tokens per example, so
// that train's window k (tokens [k·(n+1), k·(n+1)+n+1]) holds example k and the target at window position n−1
// is the answer; the loss is taken there only. One padding token ends the file so that the last example has
// its full window.
package anchor
