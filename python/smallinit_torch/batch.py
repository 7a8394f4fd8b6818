"""`python -m smallinit_torch train-batch`: several runs of one shape trained in one process as one batched model.

    python -m smallinit_torch train-batch --run MODEL_DIR CONFIG OUT [--run MODEL_DIR CONFIG OUT ...]
    python -m smallinit_torch train-batch --resume OUT [--resume OUT ...]

A study's small runs (width 64-256) leave a GPU idle between kernel launches: one process per run pays the
same ~500 launches a step for a tiny matmul each, and the processes time-slice the device. Here the N runs of a
group are one model whose every parameter has a leading run axis ([N, *shape]): a linear layer is one torch.bmm
for all runs, attention runs over N*B sequences, and one AdamW step updates every run. The launches a step
are those of one run, whatever N.

What may differ between the runs of a group (and what may not): the seed (weights and batch order), the [init]
recipe (γ, rule, overrides), schedule.lr, optimizer.weight_decay and train.grad_clip, each run's own; every
other key of the resolved run config (the model's shape, the batch, the steps, the schedule's form, the
data) is the group's but train.threads (the process's: --threads), and a run that differs is refused naming
the key. The Go engine hands a study's runs here with `study --engine torch --torch-batch N`
(train.TorchBatcher). Each run's step is the one
`python -m smallinit_torch train` takes (its default fast step, one process, no gradient accumulation): the
same windows in the same order, the same AdamW with its own learning rate and weight decay, its own gradient
norm and clip factor, so its losses are its solo run's within float32 rounding (the batched matmuls sum in
another order; tests/test_batch.py holds them to 1e-6 relative).

Each run's directory is the one `train` writes (config.toml, init.json, init/, pytorch.json, metrics.jsonl,
diagnostics.jsonl, checkpoints/step-NNNNNN/, final/), so a run started here resumes alone with
`train --resume OUT`, and a group whose runs stand at one checkpoint step resumes here. tokens_per_s in a run's
metrics is that run's own tokens over the wall time (the process trains N times as many).

Not here (refused with the reason): mixture-of-experts and QK-norm models, bf16, train.skip_nonfinite, several
ranks and gradient accumulation. A non-finite loss or gradient in any run stops the group at the next log
step or checkpoint, naming the run, as it stops a solo run."""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

from .data import Sampler, num_windows, open_tokens
from .device import features, parse_device, sdpa
from .kernels import KERNELS
from .model import Llama, attention_manual, check_memory, load_weights, read_config, rotate_half
from .runconfig import load_run_config, lr_at, resolve_model, total_steps
from .runlock import die_with_parent
from .safetensors import read_model_weights, write_file_atomic
from .train import (Owner, Stop, Stopped, check_log, checkpoint_name, exit_on_errors, initialise,
                    list_checkpoints, metrics_line, read_moments, read_pytorch_json, read_state, start_run_dir, truncate,
                    write_checkpoint, write_model_dir)

# PER_RUN are the run-config keys in which the runs of a group may differ (each run's own); PROCESS those the
# process decides (train.threads: --threads, else the first run's); every other key is the group's.
PER_RUN = (("seed",), ("init",), ("schedule", "lr"), ("optimizer", "weight_decay"), ("train", "grad_clip"))
PROCESS = (("train", "threads"),)


def group_keys(c: dict) -> dict:
    """The flattened keys ("section.key" -> value) of a resolved run config that the runs of a group share."""
    out = {}
    for sec, v in c.items():
        if (sec,) in PER_RUN:
            continue
        if not isinstance(v, dict):
            out[sec] = v
            continue
        for k, x in v.items():
            if (sec, k) not in PER_RUN and (sec, k) not in PROCESS:
                out[f"{sec}.{k}"] = x
    return out


def check_supported(c: dict, mc, cfg_path: str) -> None:
    """Refuse what the batched step does not do, naming the key."""
    if mc.moe:
        raise ValueError(f"{cfg_path}: a mixture-of-experts model: train its runs one per process (train)")
    if mc.qk_norm:
        raise ValueError(f"{cfg_path}: model.qk_norm: train its runs one per process (train)")
    t = c["train"]
    if (t.get("precision") or "f32") not in ("f32", "auto"):
        raise ValueError(f"{cfg_path}: train.precision = {t['precision']!r}: the batched trainer trains in f32 only")
    if t["skip_nonfinite"]:
        raise ValueError(f"{cfg_path}: train.skip_nonfinite: the batched trainer stops on a non-finite step; "
                         f"train its runs one per process (train)")


class Stack:
    """The parameters of N models of one Config, named as Llama's (params: name -> [N, *shape]), and their
    batched forward: losses(idx, targets) is the [N] vector of each run's mean next-token cross-entropy, run i
    reading only params[name][i] and idx[i]. The arithmetic is model.Llama's, op for op, with torch.bmm for
    each run's F.linear.

    Every parameter is a view of one buffer flat [N, total] (run i's parameters are row i, the matrices first:
    the first n_decayed columns), so that the gradient norms, the clip and AdamW are a few whole-buffer
    operations however many tensors the model has (a GPU launches them once a step, not once a tensor)."""

    def __init__(self, c, shapes: "dict[str, tuple]", n: int, device: torch.device) -> None:
        self.c, self.n = c, n
        order = [k for k, s in shapes.items() if len(s) == 2] + [k for k, s in shapes.items() if len(s) != 2]
        size = {k: math.prod(s) for k, s in shapes.items()}
        self.n_decayed = sum(size[k] for k, s in shapes.items() if len(s) == 2)
        self.flat = torch.zeros(n, sum(size.values()), device=device)
        self.order, self.slices, off = order, {}, 0
        for k in order:
            self.slices[k] = slice(off, off + size[k])
            off += size[k]
        self.params = {}
        for k, s in shapes.items():  # the model's order (checkpoints list tensors in it)
            self.params[k] = self.flat[:, self.slices[k]].view((n,) + tuple(s)).requires_grad_(True)
        self.attention = sdpa() or KERNELS["attention"] or attention_manual  # the solo fast step's
        self.rope = {}

    rope_table = Llama.rope_table  # the solo model's table, cached per (T, dtype, device) in self.rope

    def grad(self) -> torch.Tensor:
        """The gradients as one [N, total] tensor in flat's layout (one copy); the parameters' own are cleared."""
        g = torch.cat([self.params[k].grad.reshape(self.n, -1) for k in self.order], dim=1)
        for p in self.params.values():
            p.grad = None
        return g

    def view(self, buf: torch.Tensor, i: int) -> "dict[str, torch.Tensor]":
        """Run i's tensors of a buffer in flat's layout (the weights, or an AdamW moment), name -> tensor."""
        return {k: buf[i, self.slices[k]].view(p.shape[1:]) for k, p in self.params.items()}

    def lin(self, x: torch.Tensor, name: str) -> torch.Tensor:
        """Each run's F.linear(x[i], W[i]) (+ bias): x [N, M, in] -> [N, M, out]."""
        y = torch.bmm(x, self.params[name + ".weight"].transpose(1, 2))
        b = self.params.get(name + ".bias")
        return y if b is None else y + b[:, None, :]

    def norm(self, x: torch.Tensor, name: str) -> torch.Tensor:
        w = self.params[name + ".weight"][:, None, :]
        if self.c.norm == "rmsnorm":
            return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.c.eps))
        return F.layer_norm(x, x.shape[-1:], eps=self.c.eps) * w + self.params[name + ".bias"][:, None, :]

    def attn(self, n: torch.Tensor, pre: str, B: int, T: int, cos, sin) -> torch.Tensor:
        c, N = self.c, self.n
        H, KV, dh = c.n_head, c.n_kv_head, c.head_dim
        q = self.lin(n, pre + "q_proj").view(N * B, T, H, dh).transpose(1, 2)
        k, v = (self.lin(n, pre + p).view(N * B, T, KV, dh).transpose(1, 2) for p in ("k_proj", "v_proj"))
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        if KV != H:
            k, v = k.repeat_interleave(H // KV, dim=1), v.repeat_interleave(H // KV, dim=1)
        y = self.attention(q, k, v).transpose(1, 2)  # [N*B, T, H, dh]
        if c.attn_gate != "none":
            g = torch.sigmoid(self.lin(n, pre + "g_proj"))
            y = y * (g.view(N * B, T, H).unsqueeze(-1) if c.attn_gate == "headwise" else g.view(N * B, T, H, dh))
        return self.lin(y.reshape(N, B * T, H * dh), pre + "o_proj")

    def mlp(self, m: torch.Tensor, pre: str) -> torch.Tensor:
        return self.lin(F.silu(self.lin(m, pre + "gate_proj")) * self.lin(m, pre + "up_proj"), pre + "down_proj")

    def losses(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        c, N = self.c, self.n
        _, B, T = idx.shape
        E = self.params["model.embed_tokens.weight"]
        V, d = E.shape[1], E.shape[2]
        off = torch.arange(N, device=idx.device).view(N, 1, 1) * V
        x = F.embedding(idx + off, E.reshape(N * V, d)).view(N, B * T, d)
        cos, sin = self.rope_table(T, x.dtype, x.device)
        for l in range(c.num_hidden_layers):
            pre = f"model.layers.{l}."
            x = x + self.attn(self.norm(x, pre + "input_layernorm"), pre + "self_attn.", B, T, cos, sin)
            x = x + self.mlp(self.norm(x, pre + "post_attention_layernorm"), pre + "mlp.")
        x = self.norm(x, "model.norm")
        head = E if c.tie_word_embeddings else self.params["lm_head.weight"]
        logits = torch.bmm(x, head.transpose(1, 2))
        ce = F.cross_entropy(logits.reshape(N * B * T, V), targets.reshape(-1), reduction="none")
        return ce.view(N, B * T).mean(1)

    def run(self, i: int) -> "dict[str, torch.Tensor]":
        """Run i's parameters, name -> tensor (views)."""
        return self.view(self.flat, i)

    def set_run(self, i: int, weights: "dict[str, torch.Tensor]") -> None:
        with torch.no_grad():
            for k, w in self.run(i).items():
                w.copy_(weights[k])


class AdamW:
    """torch.optim.AdamW's update (its single-tensor and foreach paths, op for op) on a Stack's flat buffer, each
    run with its own learning rate and weight decay: p *= 1 - lr wd (the matrices only, as the solo trainer's
    two parameter groups); m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g²;
    p += (-lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps). m and v are in the flat layout."""

    def __init__(self, stack: Stack, betas, eps: float) -> None:
        self.stack, (self.b1, self.b2), self.eps = stack, betas, eps
        self.m, self.v = torch.zeros_like(stack.flat), torch.zeros_like(stack.flat)
        self.t = 0

    def step(self, g: torch.Tensor, lrs: "list[float]", wds: "list[float]") -> None:
        """One update with the gradient g [N, total] (flat's layout)."""
        self.t += 1
        bc1, bc2 = 1 - self.b1 ** self.t, 1 - self.b2 ** self.t
        p, dev = self.stack.flat, self.stack.flat.device
        decay = torch.tensor([[1 - lr * wd] for lr, wd in zip(lrs, wds)], dtype=torch.float32, device=dev)
        neg_step = torch.tensor([[-(lr / bc1)] for lr in lrs], dtype=torch.float32, device=dev)
        with torch.no_grad():
            p[:, :self.stack.n_decayed].mul_(decay)
            self.m.mul_(self.b1).add_(g, alpha=1 - self.b1)
            self.v.mul_(self.b2).addcmul_(g, g, value=1 - self.b2)
            denom = (self.v.sqrt() / math.sqrt(bc2)).add_(self.eps)
            p.add_((self.m * neg_step).div_(denom))  # addcdiv's (value * m) / denom


class Member:
    """One run of the group: its directory, config, sampler, state and logs."""

    def __init__(self, i: int, out: str, model_dir: str, cfg_path: str, resume: bool) -> None:
        self.i, self.out, self.model_dir, self.cfg_path, self.resume = i, out, model_dir, cfg_path, resume
        self.c, self.given = load_run_config(cfg_path)
        self.mc, self.config_json = read_config(model_dir)
        self.c["model"] = resolve_model(self.c, self.mc, self.config_json, cfg_path, model_dir)
        check_supported(self.c, self.mc, cfg_path)
        self.total = total_steps(self.c, self.mc.max_position_embeddings)
        self.logged, self.mf, self.own = [], None, None
        self.st = {"step": 0, "tokens": 0, "epoch": 0, "pos": 0, "adam_step": 0, "skipped": 0, "loss_sum": 0.0,
                   "loss_count": 0, "metrics_bytes": 0, "diagnostics_bytes": 0, "seed": self.c["seed"]}

    def write_metrics(self, m: dict) -> None:
        self.logged.append(m)
        self.mf.write(metrics_line(m))
        self.mf.flush()
        self.st["metrics_bytes"] = self.mf.tell()


def members_of(args) -> "list[Member]":
    ms = []
    for out in args.resume or []:
        model_dir, accum = read_pytorch_json(out)
        if accum != 1:
            raise ValueError(f"{out}/pytorch.json: grad_accum = {accum}: the batched trainer takes no gradient accumulation")
        ms.append(Member(len(ms), out, model_dir, os.path.join(out, "config.toml"), True))
    for model_dir, cfg, out in args.run or []:
        if os.path.exists(os.path.join(out, "config.toml")):
            raise ValueError(f"{out}: already holds a run: resume it with --resume {out} or choose another OUT")
        ms.append(Member(len(ms), out, model_dir, cfg, False))
    if not ms:
        raise ValueError("train-batch: no runs: give --run MODEL_DIR CONFIG OUT or --resume OUT")
    if args.resume and args.run:
        raise ValueError("train-batch: new runs (--run) and resumed ones (--resume) stand at different steps: "
                         "start the new ones in a batch of their own")
    outs = [os.path.realpath(m.out) for m in ms]
    if len(set(outs)) != len(outs):
        raise ValueError(f"train-batch: a run directory is named twice ({', '.join(m.out for m in ms)})")
    first = group_keys(ms[0].c)
    for m in ms[1:]:
        keys = group_keys(m.c)
        for k in sorted(set(first) | set(keys)):
            if first.get(k) != keys.get(k):
                raise ValueError(f"{m.cfg_path}: {k} = {keys.get(k)!r}, but {ms[0].cfg_path} has {first.get(k)!r}: "
                                 f"the runs of a batch share every key but {', '.join('.'.join(p) for p in PER_RUN)}")
    return ms


def run_batch(args) -> "list[list[dict]]":
    """Train the group; returns each run's logged metrics dicts."""
    stop = Stop()
    ms = []
    try:
        ms = members_of(args)
        return _run_batch(args, ms, stop)
    finally:
        for m in ms:
            if m.mf is not None:
                m.mf.close()
            if m.own is not None:
                m.own.release()
        stop.close()


def _run_batch(args, ms: "list[Member]", stop: Stop) -> "list[list[dict]]":
    c0, mc = ms[0].c, ms[0].mc
    t, N = c0["train"], len(ms)
    T, B, total = mc.max_position_embeddings, t["batch_size"], ms[0].total
    if total < 1:
        raise ValueError(f"{ms[0].cfg_path}: train.tokens = {t['tokens']} is less than one step of batch_size x "
                         f"max_position_embeddings = {B} x {T} tokens")
    device = parse_device(args.device)
    threads = args.threads or t["threads"]
    if threads > 0:
        torch.set_num_threads(threads)
    if device.type == "cuda":
        torch.cuda.set_device(device)
        torch.set_float32_matmul_precision("highest" if args.no_tf32 else "high")
    train_toks = open_tokens(c0["data"]["train"], mc.vocab_size)
    val_toks = open_tokens(c0["data"]["val"], mc.vocab_size) if c0["data"]["val"] else None
    if num_windows(len(train_toks), T) == 0:
        raise ValueError(f"{c0['data']['train']}: {len(train_toks)} tokens, need at least {T + 1} for one training window")
    if val_toks is not None and num_windows(len(val_toks), T) == 0:
        raise ValueError(f"{c0['data']['val']}: {len(val_toks)} tokens, need at least {T + 1} for one validation window")
    check_memory(mc, B * N, f"{ms[0].model_dir}/config.json: {N} models", device, extra=20 * mc.num_params() * (N - 1),
                 extra_what=f"and {N - 1} more models' weights, gradients and moments")

    torch.manual_seed(0)
    template = Llama(mc)  # the solo model: draws the step-0 weights, reads checkpoints, runs the diagnostics
    shapes = {n: tuple(p.shape) for n, p in template.named_parameters()}
    stack = Stack(mc, shapes, N, device)
    o = c0["optimizer"]
    opt = AdamW(stack, (o["beta1"], o["beta2"]), o["eps"])
    for m in ms:
        m.own = Owner(getattr(args, "lock_held", False))
        m.own.take(m.out)
        if not m.resume and os.path.exists(os.path.join(m.out, "config.toml")):
            raise ValueError(f"{m.out}: already holds a run: resume it with --resume {m.out} or choose another OUT")
        if m.resume:
            resume_member(m, stack, opt, template, args.quiet)
        else:
            records, recipe, init_seed = initialise(template, m.model_dir, m.c, m.given, m.config_json)
            m.c["init"] = recipe
            start_run_dir(m.out, template, m.c, m.config_json,
                          {"recipe": recipe, "seed": init_seed, "optimizer": m.c["optimizer"], "tensors": records},
                          {"model": os.path.abspath(m.model_dir), "grad_accum": 1, "world_size": 1,
                           "torch": torch.__version__, "engine": "torch", "step": "fast", "precision": "f32",
                           "compile": False, "batch": N, "features": features(device)})
            stack.set_run(m.i, dict(template.named_parameters()))
    steps = {m.st["step"] for m in ms}
    if len(steps) != 1:
        raise ValueError("train-batch: the runs stand at different steps (" + ", ".join(f"{m.out}: {m.st['step']}" for m in ms) +
                         "): resume them one per process (train --resume)")
    opt.t = ms[0].st["adam_step"]
    if any(m.st["adam_step"] != opt.t for m in ms):
        raise ValueError("train-batch: the runs made different numbers of AdamW steps: resume them one per process")
    if device.type == "cuda":
        for toks in (train_toks, val_toks):
            if toks is not None:
                toks.to_device(device)
    for m in ms:
        m.sampler = Sampler(train_toks, T, m.c["seed"], m.st["epoch"], m.st["pos"])
        m.mf = open(os.path.join(m.out, "metrics.jsonl"), "a")
    wds = [m.c["optimizer"]["weight_decay"] for m in ms]
    clip = torch.tensor([m.c["train"]["grad_clip"] for m in ms], dtype=torch.float64, device=device)
    dev_loss = torch.zeros(N, dtype=torch.float64, device=device)
    first_bad = torch.full((N,), -1, dtype=torch.int64, device=device)
    diag_every = t["diagnostics_interval"]

    def diagnose(step):
        if diag_every <= 0 or step % diag_every:
            return
        if step > 0:
            settle()
        from .diagnostics import training_record
        probe = val_toks if val_toks is not None else train_toks
        for m in ms:
            load_weights(template, {n: w.cpu() for n, w in stack.run(m.i).items()}, m.out)
            line = json.dumps({"step": step, "diagnostics": training_record(template, probe, B)}, allow_nan=False)
            with open(os.path.join(m.out, "diagnostics.jsonl"), "a") as f:
                f.write(line + "\n")
                m.st["diagnostics_bytes"] = f.tell()

    def evaluate() -> "list[float]":
        nw = num_windows(len(val_toks), T)
        if t["eval_windows"] > 0:
            nw = min(nw, t["eval_windows"])
        s = torch.zeros(N, dtype=torch.float64, device=device)
        with torch.no_grad():
            for k0 in range(0, nw, B):
                ks = list(range(k0, min(k0 + B, nw)))
                x, y = val_toks.windows(ks, T, device)
                s += stack.losses(x.expand(N, -1, -1), y.expand(N, -1, -1)).double() * len(ks)
        return (s / nw).tolist()

    def settle():
        nonlocal dev_loss
        bad, sums = first_bad.tolist(), dev_loss.tolist()
        for m, b in zip(ms, bad):
            if b >= 0:
                raise FloatingPointError(f"{m.out}: step {b}: non-finite loss or gradient norm (found at step "
                                         f"{m.st['step']}; the batch of {N} runs stops)")
        for m, s in zip(ms, sums):
            m.st["loss_sum"] += s
        dev_loss = torch.zeros_like(dev_loss)

    def step_batch(step: int, lrs: "list[float]"):
        """One step of every run: each run's batch, forward and backward; its float64 gradient norm and clip
        factor; one AdamW update. Nothing is read on the host."""
        nonlocal dev_loss, first_bad
        xs, ys = zip(*(m.sampler.batch(m.sampler.next_ids(B), device) for m in ms))
        loss = stack.losses(torch.stack(xs), torch.stack(ys))
        loss.sum().backward()  # run i's gradient is that of its own loss alone
        g = stack.grad()
        gn = torch.linalg.vector_norm(g, dim=1, dtype=torch.float64)
        lossd = loss.detach().double()
        bad = ~(torch.isfinite(lossd) & torch.isfinite(gn))
        c64 = clip / (gn + 1e-6)
        g.mul_(torch.where((clip <= 0) | (c64 >= 1), torch.ones_like(c64), c64).float()[:, None])
        opt.step(g, lrs, wds)
        first_bad = torch.where(bad & (first_bad < 0), torch.full_like(first_bad, step), first_bad)
        dev_loss += lossd
        for m in ms:
            m.st["adam_step"] += 1
            m.st["loss_count"] += 1
        return gn

    st0 = ms[0].st
    if st0["step"] == 0:
        diagnose(0)
        if t["eval_interval"] > 0 and val_toks is not None:
            for m, v in zip(ms, evaluate()):
                m.write_metrics({"step": 0, "tokens": 0, "val_loss": v if math.isfinite(v) else None})
    interval_start, interval_tokens, start_step, t0 = time.time(), 0, st0["step"], time.time()
    stop_at = min(total, args.max_steps) if args.max_steps else total
    while st0["step"] < stop_at:
        for m in ms:
            m.own.check(m.out)
        step = st0["step"]
        lrs = [lr_at(m.c["schedule"], step, total) for m in ms]
        gn = step_batch(step, lrs)
        for m in ms:
            st = m.st
            st["step"] += 1
            st["tokens"] += B * T
            st["epoch"], st["pos"] = m.sampler.epoch, m.sampler.pos
        interval_tokens += B * T
        done = st0["step"] == total
        eval_now = val_toks is not None and ((t["eval_interval"] > 0 and st0["step"] % t["eval_interval"] == 0) or done)
        if st0["step"] % t["log_interval"] == 0 or done or eval_now:
            settle()
            gns = gn.tolist()
            vals = evaluate() if eval_now else None
            tps = interval_tokens / max(time.time() - interval_start, 1e-9)
            for m, g, lr in zip(ms, gns, lrs):
                st = m.st
                rec = {"step": st["step"], "tokens": st["tokens"], "lr": lr, "grad_norm": g if math.isfinite(g) else 0,
                       "skipped": st["skipped"]}
                if st["loss_count"]:
                    rec["loss"] = st["loss_sum"] / st["loss_count"]
                rec["tokens_per_s"] = tps
                if vals is not None:
                    rec["val_loss"] = vals[m.i] if math.isfinite(vals[m.i]) else None
                m.write_metrics(rec)
                st["loss_sum"], st["loss_count"] = 0.0, 0
            if not args.quiet:
                print(f"step {st0['step']:6d}/{total}  {N} runs  loss " +
                      " ".join(f"{m.logged[-1].get('loss', float('nan')):.4f}" for m in ms) +
                      f"  {N * tps:.0f} tok/s in all", file=sys.stderr)
            interval_start, interval_tokens = time.time(), 0
        diagnose(st0["step"])
        every = t["checkpoint_interval"]
        stopping = stop.requested
        if done or st0["step"] == stop_at or stopping or (every > 0 and st0["step"] % every == 0):
            settle()
            for m in ms:
                os.fsync(m.mf.fileno())
                moments = {"exp_avg." + k: t for k, t in stack.view(opt.m, m.i).items()}
                moments.update({"exp_avg_sq." + k: t for k, t in stack.view(opt.v, m.i).items()})
                write_checkpoint(m.out, stack.run(m.i), moments, m.st, m.config_json, t["keep_checkpoints"])
        if stopping and not done:
            raise Stopped(f"{', '.join(m.out for m in ms)}: stopped by SIGTERM at step {st0['step']} of {total}, "
                          f"checkpoints written: continue with train-batch --resume for each")
    if st0["step"] == total:
        for m in ms:
            final = os.path.join(m.out, "final")
            os.makedirs(final, exist_ok=True)
            tok = os.path.join(os.path.dirname(m.c["data"]["train"]), "tokenizer.json")
            if os.path.isfile(tok):
                with open(tok, "rb") as f:
                    write_file_atomic(os.path.join(final, "tokenizer.json"), f.read())
            write_model_dir(final, stack.run(m.i), m.config_json)
        if not args.quiet:
            tps = N * (st0["tokens"] - start_step * B * T) / max(time.time() - t0, 1e-9)
            print(f"done: {N} runs of {st0['step']} steps, {tps:.0f} tokens/s in all", file=sys.stderr)
    elif not args.quiet:
        print(f"stopped at step {st0['step']} of {total} (--max-steps {args.max_steps}), checkpoints written: "
              f"continue with train-batch --resume for each", file=sys.stderr)
    return [m.logged for m in ms]


def resume_member(m: Member, stack: Stack, opt: AdamW, template: Llama, quiet: bool) -> None:
    """Load run m's newest checkpoint into its slot of stack and opt, and cut its logs back to it."""
    steps = list_checkpoints(m.out)
    if not steps:
        raise ValueError(f"{m.out}: no checkpoint to resume from: start it again (remove the directory)")
    ck = os.path.join(m.out, "checkpoints", checkpoint_name(steps[-1]))
    st = read_state(ck)
    if st["seed"] != m.c["seed"]:
        raise ValueError(f"{m.cfg_path}: seed = {m.c['seed']}, but {ck}/state.json was written by seed {st['seed']}")
    if st["step"] > m.total:
        raise ValueError(f"{m.cfg_path}: {m.total} steps, but {ck} is at step {st['step']}")
    load_weights(template, read_model_weights(ck), ck)
    adam_step, mom = read_moments(ck, st, list(template.named_parameters()))
    stack.set_run(m.i, dict(template.named_parameters()))
    for buf, prefix in ((opt.m, "exp_avg."), (opt.v, "exp_avg_sq.")):
        for k, t in stack.view(buf, m.i).items():
            t.copy_(mom[prefix + k])
    for name, key in (("metrics.jsonl", "metrics_bytes"), ("diagnostics.jsonl", "diagnostics_bytes")):
        path = os.path.join(m.out, name)
        check_log(path, st[key])
        truncate(path, st[key])
    m.st = st
    if not quiet:
        print(f"resuming {m.out} from {ck}", file=sys.stderr)


def parser():
    ap = argparse.ArgumentParser(prog="python -m smallinit_torch train-batch", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", nargs=3, action="append", metavar=("MODEL_DIR", "CONFIG", "OUT"),
                    help="a new run: model directory, run config, run directory (repeat for each run)")
    ap.add_argument("--resume", action="append", metavar="OUT", help="continue this run from its newest checkpoint (repeat)")
    ap.add_argument("--device", default="auto", help="auto (a CUDA GPU when there is one), cpu, cuda or cuda:N")
    ap.add_argument("--no-tf32", action="store_true", help="f32 on CUDA in full float32 matmuls (TF32 off)")
    ap.add_argument("--max-steps", type=int, default=0, help="stop (with checkpoints) after this step, as an interruption")
    ap.add_argument("--threads", type=int, default=0, help="torch threads of the process (0: the first run's train.threads)")
    ap.add_argument("--quiet", action="store_true", help="print errors only")
    ap.add_argument("--lock-held", action="store_true",
                    help="the parent process holds every run's lock (the Go engine): watch it instead of taking it")
    return ap


def main(argv=None):
    args = parser().parse_args(argv)
    for flag, v in (("--max-steps", args.max_steps), ("--threads", args.threads)):
        if v < 0:
            sys.exit(f"smallinit_torch: {flag} = {v}: must be >= 0")
    if args.lock_held:
        die_with_parent()
    exit_on_errors(run_batch, args)
