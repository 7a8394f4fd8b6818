"""`python -m smallinit_torch throughput --model MODEL_DIR --batch B [--device D]`: the PyTorch trainer's training
tokens/s for a model on a device, the probe that a study's --budget sizes its runs from under --engine torch
(the Go engine's own probe measures the Go trainer on the CPU, which says nothing of a GPU). Prints one JSON
object: {"tokens_per_s": ..., "device": "cuda:0", "steps": 3, "batch": B, "tokens": B*T}.

A step is the trainer's fast step on random tokens: forward and backward (torch's fused attention where it has
one, bf16 autocast with --precision bf16), the float64 gradient norm, the AdamW path the trainer takes on the
device (fused, foreach or single), the device synchronised only around the timed steps; the model's weights
are drawn (γ = 1) whatever the directory holds, since only its shape matters."""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time

import torch

from .device import adamw_kind, adamw_options, bf16_problem, parse_device, sdpa
from .files import USER_ERRORS, error_line
from .init import gamma_init_
from .model import Llama, check_memory, read_config
from .train import resolve_precision


def measure(mc, batch: int, device: torch.device, steps: int = 3, warmup: int = 1, precision: str = "f32") -> float:
    """Training tokens/s of the model of Config mc at batch windows a step on device: warmup untimed steps,
    then steps timed ones."""
    T = mc.max_position_embeddings
    check_memory(mc, batch, "model", device)
    if precision == "bf16":
        why = bf16_problem(device)
        if why:
            raise ValueError(f"--precision bf16: {why}")
    model = Llama(mc).to(device)
    gamma_init_(model, gamma=1.0, seed=0)
    model.use_fused_attention(sdpa())
    params = list(model.parameters())
    opt = torch.optim.AdamW([{"params": [p for p in params if p.dim() == 2], "weight_decay": 0.1},
                             {"params": [p for p in params if p.dim() != 2], "weight_decay": 0.0}],
                            lr=1e-4, **adamw_options(adamw_kind(device)))
    g = torch.Generator().manual_seed(0)
    x = torch.randint(mc.vocab_size, (batch, T), generator=g).to(device)
    y = torch.randint(mc.vocab_size, (batch, T), generator=g).to(device)
    autocast = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) if precision == "bf16" else contextlib.nullcontext
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    def step():
        with autocast():
            _, loss = model(x, y)
        loss.backward()
        torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad, dtype=torch.float64) for p in params]))
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(warmup):
        step()
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    return steps * batch * T / max(time.perf_counter() - t0, 1e-9)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m smallinit_torch throughput", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="model directory (its config.json's shape is what is timed)")
    ap.add_argument("--batch", type=int, required=True, help="windows of max_position_embeddings tokens a step")
    ap.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    ap.add_argument("--steps", type=int, default=3, help="timed steps")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps first")
    ap.add_argument("--precision", choices=("f32", "bf16", "auto"), default="f32",
                    help="as train.precision (auto: bf16 on a CUDA GPU whose bf16 passes the probe, else f32)")
    args = ap.parse_args(argv)
    for flag, v, lo in (("--batch", args.batch, 1), ("--steps", args.steps, 1), ("--warmup", args.warmup, 0)):
        if v < lo:
            print(f"smallinit_torch: {flag} = {v}: must be >= {lo}", file=sys.stderr)
            return 2
    try:
        dev = parse_device(args.device)
        mc, _ = read_config(args.model)
        tps = measure(mc, args.batch, dev, args.steps, args.warmup, resolve_precision(args.precision, dev))
    except USER_ERRORS as e:
        print(error_line(e), file=sys.stderr)
        return 2
    print(json.dumps({"tokens_per_s": tps, "device": str(dev), "steps": args.steps, "batch": args.batch,
                      "tokens": args.batch * mc.max_position_embeddings}))
    return 0
