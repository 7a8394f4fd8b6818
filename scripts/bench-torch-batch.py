#!/usr/bin/env python3
"""Batched runs in one process (python -m smallinit_torch train-batch) against one process per run (train), at a
study's tiny shape, on the CPU; and the operator launches of one training step of each, counted with
torch.profiler, from which the GPU figure is estimated (a step of these sizes is bound by its launches there).

    /usr/bin/python3 scripts/bench-torch-batch.py [--ns 2,4,8] [--steps 20] [--width 64] [--layers 2] [--seq 32]
                                                  [--batch 4] [--launches-only]

Throughput: for each N, N run configs (seeds 0..N-1, γ and lr varied) trained for --steps steps, once as one
train-batch process and once as N train processes started together (as `study --jobs N` starts them), each
with train.threads = 1; the figure is the runs' tokens over the wall time from start to the last exit
(start-up included: both pay it, N times or once), and the runs' tokens per CPU second the processes used
(user + system, from wait4): on a machine shared with other work the wall time favours N processes, which get
N shares of the cores, so the CPU time is the figure to compare there. Launches: the leaf aten operators of one
step, view-only operators that launch no kernel left out: the forward and backward, and the update (gradient
norm, clip, AdamW: the solo step's foreach AdamW, which on the CPU loops over the tensors, and the batched
step's whole-buffer update), for the solo fast step and the batched step at each N."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import torch  # noqa: E402

from smallinit_torch.batch import AdamW, Stack  # noqa: E402
from smallinit_torch.data import write_tokens  # noqa: E402
from smallinit_torch.device import adamw_kind, adamw_options, sdpa  # noqa: E402
from smallinit_torch.model import Config, Llama  # noqa: E402

NO_KERNEL = {"aten::empty", "aten::view", "aten::as_strided", "aten::reshape", "aten::_reshape_alias", "aten::t",
             "aten::transpose", "aten::expand", "aten::unsqueeze", "aten::select", "aten::slice", "aten::detach",
             "aten::empty_strided", "aten::resize_", "aten::alias", "aten::permute", "aten::squeeze", "aten::split",
             "aten::unbind", "aten::narrow", "aten::empty_like", "aten::lift_fresh", "aten::detach_", "aten::item",
             "aten::_local_scalar_dense", "aten::is_nonzero", "aten::result_type", "aten::numpy_T", "aten::chunk",
             "aten::expand_as", "aten::view_as", "aten::flatten", "aten::contiguous", "aten::set_", "aten::to",
             "aten::_to_copy", "aten::scalar_tensor", "aten::resolve_conj", "aten::resolve_neg"}


def config(a):
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 1024, "hidden_size": a.width,
            "intermediate_size": 3 * a.width, "num_hidden_layers": a.layers, "num_attention_heads": 4,
            "max_position_embeddings": a.seq, "rms_norm_eps": 1e-5}


def leaf_ops(fn):
    """The kernel-launching leaf aten operators fn runs (one call, after a warm-up call)."""
    fn()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    n = 0
    for e in prof.events():
        if not e.name.startswith("aten::") or e.name in NO_KERNEL:
            continue
        if any(c.name.startswith("aten::") and c.name not in NO_KERNEL for c in e.cpu_children):
            continue
        n += 1
    return n


def launches(a, ns):
    mc = Config(config(a))
    T, B = mc.max_position_embeddings, a.batch
    torch.manual_seed(0)
    model = Llama(mc)
    model.use_fused_attention(sdpa())
    params = list(model.parameters())
    opt = torch.optim.AdamW([{"params": [p for p in params if p.dim() == 2], "weight_decay": 0.1},
                             {"params": [p for p in params if p.dim() != 2], "weight_decay": 0.0}],
                            lr=1e-3, **adamw_options(adamw_kind(torch.device("cpu"))))
    x = torch.randint(mc.vocab_size, (B, T))

    def solo_fb():
        _, loss = model(x, x)
        loss.backward()

    def solo_update():
        grads = [p.grad for p in params]
        gn = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g, dtype=torch.float64) for g in grads]))
        c64 = 1.0 / (gn + 1e-6)
        sc = torch.where(c64 >= 1, torch.ones_like(c64), c64).float()
        for g in grads:
            g.mul_(sc)
        opt.step()
    solo_fb()
    out = {"tensors": len(params), "solo_forward_backward": leaf_ops(solo_fb), "solo_update": leaf_ops(solo_update)}
    for n in ns:
        st = Stack(mc, {k: tuple(p.shape) for k, p in model.named_parameters()}, n, torch.device("cpu"))
        with torch.no_grad():
            st.flat.normal_(0, 0.02)
        bo = AdamW(st, (0.9, 0.95), 1e-8)
        xs = torch.randint(mc.vocab_size, (n, B, T))
        clip = torch.ones(n, dtype=torch.float64)

        def batched_fb():
            st.losses(xs, xs).sum().backward()

        fb = leaf_ops(batched_fb)
        batched_fb()

        def update():
            g = torch.cat([st.params[k].grad.reshape(n, -1) for k in st.order], dim=1)
            gn = torch.linalg.vector_norm(g, dim=1, dtype=torch.float64)
            c64 = clip / (gn + 1e-6)
            g.mul_(torch.where((clip <= 0) | (c64 >= 1), torch.ones_like(c64), c64).float()[:, None])
            bo.step(g, [1e-3] * n, [0.1] * n)
        out[f"batched{n}_forward_backward"] = fb
        out[f"batched{n}_update"] = leaf_ops(update)
    return out


def write_inputs(d, a, n):
    toks = torch.randint(1024, (200_000,), generator=torch.Generator().manual_seed(1)).tolist()
    write_tokens(os.path.join(d, "train.tok"), toks)
    m = os.path.join(d, "model")
    os.makedirs(m, exist_ok=True)
    with open(os.path.join(m, "config.json"), "w") as f:
        json.dump(config(a), f)
    cfgs = []
    for i in range(n):
        p = os.path.join(d, f"run{i}.toml")
        with open(p, "w") as f:
            f.write(f"""seed = {i}
[init]
gamma = {0.5 + 0.5 * (i % 2)}
[schedule]
lr = {1e-3 * (1 + i % 3)}
warmup_steps = 2
[data]
train = "{d}/train.tok"
[train]
batch_size = {a.batch}
steps = {a.steps}
log_interval = 1
eval_interval = 0
checkpoint_interval = 0
threads = 1
""")
        cfgs.append(p)
    return m, cfgs


def wait_cpu(procs):
    """Wait for procs; their CPU seconds (user + system, from wait4), or an error naming a failed one."""
    cpu = 0.0
    for p in procs:
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode:
            raise SystemExit(f"{' '.join(p.args[:4])} exited {p.returncode}")
        cpu += ru.ru_utime + ru.ru_stime
    return cpu


def throughput(a, n):
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "..", "python"), OMP_NUM_THREADS="1")
    py = [sys.executable, "-m", "smallinit_torch"]
    tokens = n * a.steps * a.batch * a.seq
    with tempfile.TemporaryDirectory() as d:
        m, cfgs = write_inputs(d, a, n)
        argv = py + ["train-batch", "--quiet", "--device", "cpu"]
        for i, c in enumerate(cfgs):
            argv += ["--run", m, c, os.path.join(d, f"b{i}")]
        t0 = time.time()
        cb = wait_cpu([subprocess.Popen(argv, env=env)])
        wb = time.time() - t0
        t0 = time.time()
        cs = wait_cpu([subprocess.Popen(py + ["train", "--quiet", "--device", "cpu", "--model", m, "--config", c, "--out",
                                              os.path.join(d, f"s{i}")], env=env) for i, c in enumerate(cfgs)])
        ws = time.time() - t0
    return {"n": n, "tokens": tokens, "batched_wall_s": round(wb, 1), "batched_cpu_s": round(cb, 1),
            "batched_tokens_per_cpu_s": round(tokens / cb), "solo_wall_s": round(ws, 1), "solo_cpu_s": round(cs, 1),
            "solo_tokens_per_cpu_s": round(tokens / cs), "load": os.getloadavg()[0]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ns", default="2,4,8")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--launches-only", action="store_true")
    a = ap.parse_args()
    ns = [int(x) for x in a.ns.split(",")]
    torch.set_num_threads(1)
    print(json.dumps({"launches_per_step": launches(a, ns)}))
    if a.launches_only:
        return
    print("load average before:", os.getloadavg(), file=sys.stderr)
    for n in ns:
        print(json.dumps(throughput(a, n)), flush=True)
    print("load average after:", os.getloadavg(), file=sys.stderr)


if __name__ == "__main__":
    main()
