"""How far float32 alone moves the first AdamW update of a model: the same step-0 weights and first batch under
several float32 orderings of ONE engine (PyTorch), and in float64 (docs/pytorch.md, "The unfixed arm").

Orderings: the batch as the trainer draws it (seed 0); the same windows in reverse order (the loss is a mean over
all tokens, so only the order of the gradient's sums differs); two micro-batches summed (--grad-accum 2). The
first AdamW update is u = c·g / (|c·g| + eps) (m̂ = g and v̂ = g² at step 1, c the trainer's clip factor
min(1, clip / (‖g‖ + 1e-6))). For each model it prints, per tensor of layer 0 and at the largest, the relative
difference ‖u_a − u_b‖ / ‖u_b‖ (and of the gradients) between the orderings and against float64.

    smallinit data prepare --out DATA --vocab 4096
    smallinit init --preset tiny --set vocab_size=4096 --set max_position_embeddings=128 --set norm_eps=1e-5 \\
        --set attn_gate=none --gamma 1 --seed 0 --out UNFIXED
    PYTHONPATH=python OMP_NUM_THREADS=1 python3 scripts/unfixed-orderings.py --data DATA UNFIXED [FIXED ...]

About 20 CPU seconds a model at the demo's shape (width 128, 4 layers, T 128, batch 16)."""
import argparse
import math

import torch

from smallinit_torch.data import Sampler, open_tokens
from smallinit_torch.model import load_model

ORDERINGS = (("f64", torch.float64, "drawn"), ("f32", torch.float32, "drawn"),
             ("f32-reversed", torch.float32, "reversed"), ("f32-accum2", torch.float32, "accum2"))
PAIRS = (("f32", "f64"), ("f32-reversed", "f64"), ("f32-accum2", "f64"), ("f32", "f32-reversed"), ("f32", "f32-accum2"))


def first_update(model_dir, toks, batch, dtype, order, eps, clip):
    """(first AdamW update, gradient, gradient norm) by tensor name, in float64."""
    c, m = load_model(model_dir, torch.float32)
    m = m.to(dtype)
    s = Sampler(toks, c.max_position_embeddings, 0)
    ids = s.next_ids(batch)
    if order == "reversed":
        ids = ids[::-1]
    parts = [ids] if order != "accum2" else [ids[:batch // 2], ids[batch // 2:]]
    for p in parts:
        x, y = s.batch(p)
        (m(x, y)[1] / len(parts)).backward()
    g = {n: p.grad.detach().double().clone() for n, p in m.named_parameters()}
    norm = math.sqrt(sum(float((v * v).sum()) for v in g.values()))
    cf = min(1.0, clip / (norm + 1e-6))
    return {n: cf * v / ((cf * v).abs() + eps) for n, v in g.items()}, g, norm


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="a prepared corpus (train.tok) at the models' vocabulary")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--eps", type=float, default=1e-8, help="AdamW's eps (optimizer.eps)")
    ap.add_argument("--clip", type=float, default=1.0, help="train.grad_clip")
    ap.add_argument("models", nargs="+", help="model directories (smallinit init) with the step-0 weights")
    a = ap.parse_args()
    torch.set_num_threads(1)
    for md in a.models:
        c, _ = load_model(md, torch.float32)
        toks = open_tokens(f"{a.data}/train.tok", c.vocab_size)
        runs = {k: first_update(md, toks, a.batch, dt, o, a.eps, a.clip) for k, dt, o in ORDERINGS}
        print(f"== {md}: gradient norms " + ", ".join(f"{k} {v[2]:.9g}" for k, v in runs.items()))
        worst = {}
        for n in runs["f64"][0]:
            row = []
            for x, y in PAIRS:
                du = float((runs[x][0][n] - runs[y][0][n]).norm() / runs[y][0][n].norm())
                dg = float((runs[x][1][n] - runs[y][1][n]).norm() / runs[y][1][n].norm())
                row.append(f"{x}~{y}: u {du:.1e} g {dg:.1e}")
                worst[(x, y)] = max(worst.get((x, y), (0.0, "")), (du, n))
            if ".layers.0." in n:
                print(f"  {n:46s} " + "  ".join(row))
        for (x, y), (du, n) in worst.items():
            print(f"  largest first-update difference {x} vs {y}: {du:.2e} ({n})")


if __name__ == "__main__":
    main()
