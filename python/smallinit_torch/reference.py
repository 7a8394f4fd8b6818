#!/usr/bin/python3
"""smallinit_torch.reference: PyTorch reference for the smallinit Go engine (parity fixtures + speed baseline).

Run as /usr/bin/python3 python/torchref.py SUBCOMMAND (a shim) or python -m smallinit_torch.reference SUBCOMMAND.
The model itself is smallinit_torch.model (see its docstring).

Subcommands (run with /usr/bin/python3 python/torchref.py SUBCOMMAND ...):
  golden   --model DIR --inputs INPUTS.safetensors --out GOLDEN.safetensors
           Load DIR/{config.json,model.safetensors}, upcast to float64, read `tokens` (I32 [B,T+1]) and
           write `loss` (F64 [1], MoE: including the auxiliary loss, also written alone as `aux_loss`),
           `logits` (F32 [B,T,V]) and `grad.<name>` (F32) for every parameter.
  fixtures [--out testdata/parity]
           Regenerate the committed parity fixtures (one directory per case in CASES below, each with
           config.json, model.safetensors, inputs.safetensors, golden.safetensors) and their README.md.
  selfcheck [--dir testdata/parity]
           Check the fixtures independently: a naive loop-per-head (MoE: loop-per-token) float64
           re-implementation (logits, loss and central finite differences vs the stored gradients),
           torch.autograd.gradcheck on micro models (MoE included), float32 vs float64 loss and routing,
           loss ~ ln(V) at gamma=1, the top-k tie rule, and the bench kernels vs the reference.
  adamw    [--out testdata/adamw]
           Write adamw.safetensors: 20 float32 steps of torch.optim.AdamW with clip_grad_norm_(1.0) and the
           engine's cosine schedule on pseudo-random gradients (inputs, lr, params after every step, moments).
  bench    --preset tiny|small|medium|tiny-moe|small-moe [--steps 20] [--warmup 3] [--threads 2] [--default-settings]
           [--precision f32|bf16]
           [--gate none|headwise|elementwise] [--norm rmsnorm|layernorm] [--tied] [--matmul blas|onednn] [--json]
           Train on random tokens in float32 (AdamW lr 3e-4, betas (0.9,0.95), eps 1e-8, wd 0.1, clip 1.0)
           and print median tokens/s, step/forward/backward/optimizer seconds and model FLOP/s
           (FLOPs/token = 6*N_matmul + 12*L*T*d, share of 225 GFLOP/s). "Best settings" (default):
           OMP_WAIT_POLICY=PASSIVE and OPENBLAS_CORETYPE from the CPU flags (SkylakeX with AVX-512, Haswell with
           AVX2; both set before torch is imported), torch.set_num_threads(threads),
           torch's private fused scaled-dot-product attention, foreach AdamW; --default-settings uses
           torch's defaults (threads, manual attention, for-loop AdamW).
           --matmul onednn runs every GEMM (linear layers and attention) as oneDNN 1x1 convolutions
           instead of BLAS: same math, but Debian's torch uses the generic libblas.so.3, which is the
           slow netlib reference BLAS unless OpenBLAS is installed (the bench reports which one it loaded).
           The -moe presets (E=8, top-2, expert width d_ff/2, norm_topk_prob, alpha 0.01) group each expert's
           tokens with one index_select and one index_add; FLOPs count the active parameters only.
"""
import argparse
import sys

from .bench import PRESETS, bench
from .fixtures import adamw_fixture, fixtures, golden
from .selfcheck import selfcheck

# The subcommands live in fixtures.py (golden, fixtures, adamw), selfcheck.py and bench.py.

# ----------------------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("golden")
    g.add_argument("--model", required=True)
    g.add_argument("--inputs", required=True)
    g.add_argument("--out", required=True)
    sub.add_parser("fixtures").add_argument("--out", default="testdata/parity")
    sub.add_parser("selfcheck").add_argument("--dir", default="testdata/parity")
    sub.add_parser("adamw").add_argument("--out", default="testdata/adamw")
    b = sub.add_parser("bench")
    b.add_argument("--preset", choices=PRESETS, required=True)
    b.add_argument("--steps", type=int, default=20)
    b.add_argument("--warmup", type=int, default=3)
    b.add_argument("--threads", type=int, default=2)
    b.add_argument("--default-settings", action="store_true")
    b.add_argument("--gate", choices=("none", "headwise", "elementwise"), default="none")
    b.add_argument("--norm", choices=("rmsnorm", "layernorm"), default="rmsnorm")
    b.add_argument("--tied", action="store_true")
    b.add_argument("--matmul", choices=("blas", "onednn"), default="blas")
    b.add_argument("--precision", choices=("f32", "bf16"), default="f32",
                   help="bf16: the forward under torch.autocast('cpu', bfloat16) (PyTorch's mixed precision)")
    b.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.cmd == "golden":
        golden(a.model, a.inputs, a.out)
    elif a.cmd == "fixtures":
        fixtures(a.out)
    elif a.cmd == "selfcheck":
        sys.exit(0 if selfcheck(a.dir) else 1)
    elif a.cmd == "adamw":
        adamw_fixture(a.out)
    else:
        bench(a)


if __name__ == "__main__":
    main()

