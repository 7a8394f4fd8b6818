"""`python -m smallinit_torch train`: data-parallel training of a smallinit model directory, with the Go trainer's
run config, batches, optimizer and run-directory layout, so that smallinit's report, analyze, compare and audit
read the run unchanged.

    python -m smallinit_torch train --model MODEL_DIR --config run.toml --out RUN [--grad-accum K] [--spawn N]
    python -m smallinit_torch train --resume RUN

What is the Go trainer's (train/run.go, train/checkpoint.go, optim/):
  - run.toml: the sections seed, [init], [optimizer], [schedule], [data], [train] with the Go keys and defaults
    (train.Default); the model's shape comes from MODEL_DIR/config.json (a [model] section must agree with it);
  - batches: train.batch_size windows of T+1 tokens per step in train.Sampler's order (a PCG Fisher-Yates per
    epoch, reproduced bit for bit by smallinit_torch.gorand); rank r of W takes windows [r B/W, (r+1) B/W) of each
    global batch, split into K micro-batches (gradient accumulation); gradients are averaged over ranks
    (DistributedDataParallel) and micro-batches, so the update is that of the global batch;
  - AdamW as optim.AdamW (PyTorch's, decoupled weight decay on every matrix, none on gains and biases), the
    warmup + cosine / WSD / constant schedule of optim.Schedule, and gradient clipping by the global norm with
    optim.ClipScale's factor min(1, clip / (norm + 1e-6)); a non-finite loss or gradient stops the run (or skips
    the batch with train.skip_nonfinite);
  - the run directory: config.toml (the run config as given), init.json, metrics.jsonl (Go's keys),
    diagnostics.jsonl (every train.diagnostics_interval steps, smallinit_torch.diagnostics), checkpoints/step-NNNNNN/
    (model.safetensors + config.json, optimizer.safetensors with exp_avg.<name> / exp_avg_sq.<name>, state.json),
    final/ (tokenizer.json, model.safetensors, config.json last); every file is written atomically and a
    checkpoint directory is renamed into place whole; --resume continues from the newest checkpoint exactly.
Plus pytorch.json: the PyTorch-side settings (model directory, gradient accumulation, world size) that --resume uses.

Processes: one per rank, started by torchrun or srun (env:// rendezvous: MASTER_ADDR, MASTER_PORT, WORLD_SIZE,
RANK, LOCAL_RANK), or --spawn N (torch.multiprocessing.spawn on one machine). The backend is NCCL when CUDA is
available (each rank on cuda:LOCAL_RANK), else gloo on the CPU. Not here: FSDP/tensor parallelism (the model is
replicated), MoE router_bias_update_rate > 0 (refused), and the MoE auxiliary loss is computed per rank's
micro-batch rather than over the global batch (identical with one process and no accumulation)."""
import argparse
import contextlib
import json
import math
import os
import shutil
import socket
import sys
import time

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

import torch
import torch.distributed as dist

from .data import Sampler, read_tokens, window, num_windows
from .init import gamma_init_, std_for
from .model import Llama, read_config
from .safetensors import read_model_weights, read_safetensors, sync_dir, write_file_atomic, write_safetensors

# train.Default() (train/config.go), optim.DefaultAdamW(), the tiny preset's batch: the keys a run.toml may omit
DEFAULTS = {
    "seed": 0,
    "init": {"rule": "gamma", "gamma": 1.0, "std": 0.0, "depth_scale": False, "classes": {}},
    "optimizer": {"beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.1},
    "schedule": {"kind": "cosine", "lr": 3e-3, "warmup_steps": 50, "min_lr_ratio": 0.1, "decay_steps": 0},
    "data": {"train": "", "val": ""},
    "train": {"batch_size": 16, "steps": 500, "tokens": 0, "grad_clip": 1.0, "log_interval": 10, "eval_interval": 100,
              "eval_windows": 64, "checkpoint_interval": 100, "keep_checkpoints": 2, "skip_nonfinite": False,
              "threads": 0, "diagnostics_interval": 0},
}
MODEL_KEYS = {"vocab_size": "vocab_size", "hidden_size": "hidden_size", "intermediate_size": "intermediate_size",
              "num_hidden_layers": "num_hidden_layers", "num_attention_heads": "num_attention_heads",
              "max_position_embeddings": "max_position_embeddings"}


def load_run_config(path):
    """The run config of a TOML file with Go's keys, over Go's defaults; unknown sections or keys are errors."""
    with open(path, "rb") as f:
        try:
            doc = tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"run config {path}: {e}") from None
    c = json.loads(json.dumps(DEFAULTS))
    for k, v in doc.items():
        if k == "model":
            c["model"] = v
        elif k == "seed":
            c["seed"] = int(v)
        elif k in c and isinstance(v, dict):
            for kk, vv in v.items():
                if kk not in c[k]:
                    raise ValueError(f"run config {path}: unknown key {k}.{kk}")
                c[k][kk] = vv
        else:
            raise ValueError(f"run config {path}: unknown key {k}")
    t = c["train"]
    if t["batch_size"] < 1 or t["log_interval"] < 1 or t["keep_checkpoints"] < 1:
        raise ValueError(f"run config {path}: train.batch_size, log_interval and keep_checkpoints must be >= 1")
    if not c["data"]["train"]:
        raise ValueError(f"run config {path}: data.train: no training token file given")
    return c


def total_steps(c, T):
    t = c["train"]
    return t["steps"] if t["steps"] > 0 else t["tokens"] // (t["batch_size"] * T)


def lr_at(s, step, total):
    """optim.Schedule.LR: step is 0-based."""
    peak, warm, floor = s["lr"], s["warmup_steps"], s["min_lr_ratio"] * s["lr"]
    if step < warm:
        return peak * (step + 1) / warm
    if s["kind"] == "cosine":
        span = total - warm
        if span <= 1:
            return peak
        frac = min(1.0, (step - warm) / (span - 1))
        return floor + (peak - floor) * 0.5 * (1 + math.cos(math.pi * frac))
    if s["kind"] == "wsd":
        start = total - s["decay_steps"]
        if step < start or s["decay_steps"] == 0:
            return peak
        frac = min(1.0, (step - start + 1) / s["decay_steps"])
        return peak + (floor - peak) * frac
    if s["kind"] == "constant":
        return peak
    raise ValueError(f"schedule.kind = {s['kind']!r}: want cosine, wsd or constant")


def clip_scale(norm, max_norm):
    """optim.ClipScale: the factor the gradients are multiplied by (as float32)."""
    if max_norm <= 0 or norm == 0:
        return 1.0
    c = max_norm / (norm + 1e-6)
    return 1.0 if c >= 1 else float(torch.tensor(c, dtype=torch.float32))


def metrics_line(m):
    """One metrics.jsonl line with train.Metrics's keys, in its order, zero fields left out as Go's omitempty."""
    out = {"step": m["step"], "tokens": m["tokens"]}
    for k in ("loss", "lr", "grad_norm", "val_loss", "skipped", "tokens_per_s"):
        v = m.get(k)
        if v is None or (k != "val_loss" and v == 0):
            continue
        out[k] = v
    return json.dumps(out, separators=(",", ":")) + "\n"


class Dist:
    """This process's place in the run: rank, world size, device; all_reduce helpers that are no-ops alone."""

    def __init__(self, device_arg):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local = int(os.environ.get("LOCAL_RANK", os.environ.get("SLURM_LOCALID", "0")))
        cuda = torch.cuda.is_available() if device_arg == "auto" else device_arg == "cuda"
        self.device = torch.device(f"cuda:{self.local}" if cuda else "cpu")
        if cuda:
            torch.cuda.set_device(self.device)
        if self.world > 1:
            dist.init_process_group("nccl" if cuda else "gloo", init_method="env://", rank=self.rank,
                                    world_size=self.world)

    def sum(self, values):
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        if self.world > 1:
            dist.all_reduce(t)
        return t.tolist()

    def barrier(self):
        if self.world > 1:
            dist.barrier()

    def close(self):
        if self.world > 1:
            dist.destroy_process_group()


def checkpoint_name(step):
    return f"step-{step:06d}"


def list_checkpoints(run):
    root = os.path.join(run, "checkpoints")
    if not os.path.isdir(root):
        return []
    steps = []
    for n in os.listdir(root):
        if n.startswith("step-") and n[5:].isdigit() and n == checkpoint_name(int(n[5:])):
            if os.path.isdir(os.path.join(root, n)):
                steps.append(int(n[5:]))
    return sorted(steps)


def state_dict_named(model):
    """name -> tensor of every parameter (a tied head once, as the engine stores it)."""
    return {n: p.detach() for n, p in model.named_parameters()}


def save_model_dir(d, model, config_json):
    """model.safetensors, then config.json (whose presence marks the directory complete), both atomic."""
    os.makedirs(d, exist_ok=True)
    write_safetensors(os.path.join(d, "model.safetensors"), {n: t.float().cpu() for n, t in state_dict_named(model).items()},
                      {"format": "pt"}, atomic=True)
    write_file_atomic(os.path.join(d, "config.json"), json.dumps(config_json, indent=2) + "\n")


def save_checkpoint(run, model, opt, params, st, config_json, keep):
    root = os.path.join(run, "checkpoints")
    os.makedirs(root, exist_ok=True)
    final = os.path.join(root, checkpoint_name(st["step"]))
    tmp = os.path.join(root, ".tmp-" + checkpoint_name(st["step"]))
    shutil.rmtree(tmp, ignore_errors=True)
    save_model_dir(tmp, model, config_json)
    moments = {}
    for n, p in params:
        s = opt.state.get(p, {})
        moments["exp_avg." + n] = s["exp_avg"].float().cpu() if "exp_avg" in s else torch.zeros_like(p, device="cpu")
        moments["exp_avg_sq." + n] = s["exp_avg_sq"].float().cpu() if "exp_avg_sq" in s else torch.zeros_like(p, device="cpu")
    write_safetensors(os.path.join(tmp, "optimizer.safetensors"), moments, {"adam_step": st["adam_step"]}, atomic=True)
    write_file_atomic(os.path.join(tmp, "state.json"), json.dumps(st, indent=2) + "\n")
    sync_dir(tmp)
    shutil.rmtree(final, ignore_errors=True)
    os.rename(tmp, final)
    sync_dir(root)
    steps = list_checkpoints(run)
    for s in steps[:max(0, len(steps) - keep)]:
        shutil.rmtree(os.path.join(root, checkpoint_name(s)), ignore_errors=True)
    return final


def load_checkpoint(ck, model, opt, params):
    with open(os.path.join(ck, "state.json")) as f:
        st = json.load(f)
    sd = read_model_weights(ck)
    missing = set(n for n, _ in params) - set(sd)
    if missing:
        raise ValueError(f"resume {ck}: model.safetensors lacks {sorted(missing)[:5]}")
    with torch.no_grad():
        for n, p in params:
            p.copy_(sd[n].to(p.dtype))
    mom, meta = read_safetensors(os.path.join(ck, "optimizer.safetensors"), with_metadata=True)
    adam_step = int(meta.get("adam_step", st["adam_step"]))
    for n, p in params:
        if "exp_avg." + n not in mom or "exp_avg_sq." + n not in mom:
            raise ValueError(f"resume {ck}: optimizer.safetensors lacks the moments of {n}")
        if adam_step > 0:
            opt.state[p] = {"step": torch.tensor(float(adam_step)),
                            "exp_avg": mom["exp_avg." + n].to(p.device, p.dtype).clone(),
                            "exp_avg_sq": mom["exp_avg_sq." + n].to(p.device, p.dtype).clone()}
    return st


def truncate(path, n):
    if os.path.exists(path):
        os.truncate(path, n)
    elif n:
        raise ValueError(f"resume: {path} is missing but its checkpoint says it had {n} bytes")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(args):
    """Train (every rank calls this); returns the list of metrics dicts rank 0 logged."""
    D = Dist(args.device)
    try:
        return _run(args, D)
    finally:
        D.close()


def _run(args, D):
    if args.resume:
        out = args.resume
        with open(os.path.join(out, "pytorch.json")) as f:
            pj = json.load(f)
        model_dir, accum = pj["model"], pj["grad_accum"]
        cfg_path = os.path.join(out, "config.toml")
    else:
        out, model_dir, accum, cfg_path = args.out, args.model, args.grad_accum, args.config
        exists = os.path.exists(os.path.join(out, "config.toml"))  # every rank checks, before rank 0 writes it
        D.barrier()
        if exists:
            raise ValueError(f"{out} already holds a run: resume it with --resume {out} or choose another --out")
    c = load_run_config(cfg_path)
    mc, config_json = read_config(model_dir)
    for k, hf in MODEL_KEYS.items():
        v = (c.get("model") or {}).get(k)
        if v is not None and v != config_json.get(hf):
            raise ValueError(f"run config {cfg_path}: model.{k} = {v}, but {model_dir}/config.json has {config_json.get(hf)}")
    if mc.moe and (config_json.get("router_bias_update_rate") or 0) > 0:
        raise ValueError(f"{model_dir}: router_bias_update_rate > 0 (auxiliary-loss-free balancing) is not implemented in PyTorch")
    t = c["train"]
    T, B = mc.max_position_embeddings, t["batch_size"]
    if B % (D.world * accum):
        raise ValueError(f"train.batch_size = {B} is not divisible by {D.world} ranks x {accum} micro-batches")
    micro = B // (D.world * accum)
    if t["threads"] > 0:
        torch.set_num_threads(t["threads"])
    total = total_steps(c, T)
    train_toks = read_tokens(c["data"]["train"], mc.vocab_size)
    val_toks = read_tokens(c["data"]["val"], mc.vocab_size) if c["data"]["val"] else None
    if val_toks is not None and num_windows(len(val_toks), T) == 0:
        raise ValueError(f"data.val {c['data']['val']}: {len(val_toks)} tokens, need at least {T + 1} for one window")

    torch.manual_seed(0)
    model = Llama(mc).to(D.device)
    params = list(model.named_parameters())
    matrices = [p for _, p in params if p.dim() == 2]
    others = [p for _, p in params if p.dim() != 2]
    o = c["optimizer"]
    opt = torch.optim.AdamW([{"params": matrices, "weight_decay": o["weight_decay"]}, {"params": others, "weight_decay": 0.0}],
                            lr=c["schedule"]["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"], foreach=False)
    st = {"step": 0, "tokens": 0, "epoch": 0, "pos": 0, "adam_step": 0, "skipped": 0, "loss_sum": 0.0, "loss_count": 0,
          "metrics_bytes": 0, "diagnostics_bytes": 0, "seed": c["seed"]}
    steps = list_checkpoints(out) if args.resume else []
    metrics_path, diag_path = os.path.join(out, "metrics.jsonl"), os.path.join(out, "diagnostics.jsonl")
    if steps:
        ck = os.path.join(out, "checkpoints", checkpoint_name(steps[-1]))
        st = load_checkpoint(ck, model, opt, params)
        if D.rank == 0:
            truncate(metrics_path, st["metrics_bytes"])
            truncate(diag_path, st["diagnostics_bytes"])
            print(f"resuming {out} from {ck}", file=sys.stderr)
    else:
        records = initialise(model, model_dir, c)
        if D.rank == 0:
            os.makedirs(out, exist_ok=True)
            doc = {"recipe": config_json.get("smallinit_init", {}).get("recipe", c["init"]),
                   "seed": config_json.get("smallinit_init", {}).get("seed", c["seed"]), "optimizer": o, "tensors": records}
            write_file_atomic(os.path.join(out, "init.json"), json.dumps(doc, indent=2) + "\n")
            write_file_atomic(os.path.join(out, "pytorch.json"), json.dumps(
                {"model": os.path.abspath(model_dir), "grad_accum": accum, "world_size": D.world,
                 "torch": torch.__version__}, indent=2) + "\n")
            for p in (metrics_path, diag_path):
                open(p, "w").close()
            with open(cfg_path, "rb") as f:
                write_file_atomic(os.path.join(out, "config.toml"), f.read())
    D.barrier()

    ddp = model
    if D.world > 1:
        ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[D.device.index] if D.device.type == "cuda" else None,
                                                        find_unused_parameters=mc.moe)
    sampler = Sampler(train_toks, T, c["seed"], st["epoch"], st["pos"])
    diag_every = t["diagnostics_interval"]
    logged = []
    mf = open(metrics_path, "a") if D.rank == 0 else None

    def write_metrics(m):
        logged.append(m)
        if mf:
            mf.write(metrics_line(m))
            mf.flush()
            st["metrics_bytes"] = mf.tell()

    def diagnose():
        if diag_every <= 0 or st["step"] % diag_every:
            return
        if D.rank == 0:
            from .diagnostics import training_record
            probe = val_toks if val_toks is not None else train_toks
            line = json.dumps({"step": st["step"], "diagnostics": training_record(model, probe, B)}, allow_nan=False)
            with open(diag_path, "a") as f:
                f.write(line + "\n")
                st["diagnostics_bytes"] = f.tell()
        D.barrier()

    def evaluate():
        model.eval()
        nw = num_windows(len(val_toks), T)
        if t["eval_windows"] > 0:
            nw = min(nw, t["eval_windows"])
        s = 0.0
        with torch.no_grad():
            for k0 in range(D.rank * micro, nw, D.world * micro):
                ks = range(k0, min(k0 + micro, nw))
                x = torch.stack([window(val_toks, k, T)[0] for k in ks]).to(D.device)
                y = torch.stack([window(val_toks, k, T)[1] for k in ks]).to(D.device)
                _, loss = model(x, y)
                s += loss.item() * len(ks)
        model.train()
        return D.sum([s])[0] / nw

    if st["step"] == 0:
        diagnose()
        if t["eval_interval"] > 0 and val_toks is not None:
            v = evaluate()
            write_metrics({"step": 0, "tokens": 0, "val_loss": v if math.isfinite(v) else None})
    interval_start, interval_tokens, start_step, t0 = time.time(), 0, st["step"], time.time()
    stop_at = min(total, args.max_steps) if args.max_steps else total
    while st["step"] < stop_at:
        step = st["step"]
        lr = lr_at(c["schedule"], step, total)
        ids = sampler.next_ids(B)
        mine = ids[D.rank * micro * accum:(D.rank + 1) * micro * accum]
        loss_sum = 0.0
        for i in range(accum):
            x, y = sampler.batch(mine[i * micro:(i + 1) * micro])
            sync = contextlib.nullcontext() if (i == accum - 1 or D.world == 1) else ddp.no_sync()
            with sync:
                _, loss = ddp(x.to(D.device), y.to(D.device))
                (loss / accum).backward()
            loss_sum += loss.item() / accum
        loss_v = D.sum([loss_sum])[0] / D.world
        gsq = sum(float(p.grad.double().pow(2).sum()) for _, p in params if p.grad is not None)
        gn = math.sqrt(gsq)
        if not (math.isfinite(loss_v) and math.isfinite(gn)):
            if not t["skip_nonfinite"]:
                raise FloatingPointError(f"step {step}: non-finite loss {loss_v} or gradient norm {gn}")
            st["skipped"] += 1
        else:
            sc = clip_scale(gn, t["grad_clip"])
            for g in opt.param_groups:
                g["lr"] = lr
            if sc != 1.0:
                for _, p in params:
                    if p.grad is not None:
                        p.grad.mul_(sc)
            opt.step()
            st["adam_step"] += 1
            st["loss_sum"] += loss_v
            st["loss_count"] += 1
        opt.zero_grad(set_to_none=True)
        st["step"] += 1
        st["tokens"] += B * T
        st["epoch"], st["pos"] = sampler.epoch, sampler.pos
        interval_tokens += B * T
        done = st["step"] == total
        eval_now = val_toks is not None and ((t["eval_interval"] > 0 and st["step"] % t["eval_interval"] == 0) or done)
        if st["step"] % t["log_interval"] == 0 or done or eval_now:
            m = {"step": st["step"], "tokens": st["tokens"], "lr": lr, "grad_norm": gn if math.isfinite(gn) else 0,
                 "skipped": st["skipped"]}
            if st["loss_count"]:
                m["loss"] = st["loss_sum"] / st["loss_count"]
            m["tokens_per_s"] = interval_tokens / max(time.time() - interval_start, 1e-9)
            if eval_now:
                v = evaluate()
                m["val_loss"] = v if math.isfinite(v) else None
            write_metrics(m)
            if D.rank == 0 and not args.quiet:
                print(f"step {m['step']:6d}/{total}  loss {m.get('loss', float('nan')):.4f}  lr {lr:.2e}  grad norm {gn:.3f}  "
                      f"{m['tokens_per_s']:.0f} tok/s" + (f"  val loss {m['val_loss']:.4f}" if eval_now else ""), file=sys.stderr)
            st["loss_sum"], st["loss_count"] = 0.0, 0
            interval_start, interval_tokens = time.time(), 0
        diagnose()
        every = t["checkpoint_interval"]
        if done or st["step"] == stop_at or (every > 0 and st["step"] % every == 0):
            if D.rank == 0:
                if mf:
                    os.fsync(mf.fileno())
                save_checkpoint(out, model, opt, params, st, config_json, t["keep_checkpoints"])
            D.barrier()
    if mf:
        mf.close()
    if st["step"] == total and D.rank == 0:
        final = os.path.join(out, "final")
        os.makedirs(final, exist_ok=True)
        tok = os.path.join(os.path.dirname(c["data"]["train"]), "tokenizer.json")
        if os.path.isfile(tok):
            with open(tok, "rb") as f:
                write_file_atomic(os.path.join(final, "tokenizer.json"), f.read())
        save_model_dir(final, model, config_json)
        tps = (st["tokens"] - start_step * B * T) / max(time.time() - t0, 1e-9)
        if not args.quiet:
            print(f"done: {st['step']} steps, train loss {logged[-1].get('loss', float('nan')) if logged else float('nan'):.4f}, "
                  f"{tps:.0f} tokens/s; final model in {final}")
    D.barrier()
    return logged


def initialise(model, model_dir, c):
    """Load the model directory's weights, or (a directory with only config.json) draw them with gamma_init_ by
    the run config's [init] recipe and seed; returns init.json's per-tensor records."""
    try:
        sd = read_model_weights(model_dir)
    except FileNotFoundError:
        i = c["init"]
        return gamma_init_(model, gamma=i["gamma"], rule=i["rule"], std=i["std"] or 0.02, classes=i["classes"],
                           depth_scale=i["depth_scale"], seed=c["seed"])
    model.load_state_dict({k: v.to(torch.float32) for k, v in sd.items()}, strict=True)
    with open(os.path.join(model_dir, "config.json")) as f:
        rec = (json.load(f).get("smallinit_init") or {}).get("recipe") or c["init"]
    recipe = {"rule": rec.get("rule", "gamma"), "gamma": rec.get("gamma", 1.0), "std": rec.get("std", 0.0),
              "depth_scale": rec.get("depth_scale", False), "classes": rec.get("classes") or {}}
    L = model.c.num_hidden_layers
    from .init import canonical, lookup
    out = []
    for n, p in model.named_parameters():
        ent = lookup(canonical(n) or "")
        if p.dim() != 2 or ent is None or ent["init"] != "normal":
            continue
        s = std_for(recipe, ent["class"], p.shape[1], p.shape[0], L)
        out.append({"name": n, "class": ent["class"], "d_in": p.shape[1], "intended_std": s,
                    "drawn_std": float(p.detach().double().pow(2).mean().sqrt()), "gamma_eff": math.log(1 / s) / math.log(p.shape[1])})
    return out


def _spawned(rank, world, port, args):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(world), RANK=str(rank),
                      LOCAL_RANK=str(rank))
    torch.set_num_threads(max(1, args.threads_per_rank))
    try:
        run(args)
    except (ValueError, FileNotFoundError, FloatingPointError) as e:
        if rank == 0:
            print(f"train: {e}", file=sys.stderr)
        sys.exit(1)


def parser(sub=None):
    ap = sub or argparse.ArgumentParser(prog="python -m smallinit_torch train", description=__doc__,
                                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="model directory (config.json, and model.safetensors unless [init] draws it)")
    ap.add_argument("--config", help="run config (TOML, the Go trainer's keys)")
    ap.add_argument("--out", help="run directory to create")
    ap.add_argument("--resume", help="continue the run in this directory from its newest checkpoint")
    ap.add_argument("--grad-accum", type=int, default=1, help="micro-batches per rank and step")
    ap.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    ap.add_argument("--spawn", type=int, default=0, help="start this many local gloo/NCCL processes (instead of torchrun)")
    ap.add_argument("--threads-per-rank", type=int, default=1, help="torch threads of each --spawn process")
    ap.add_argument("--max-steps", type=int, default=0, help="stop (with a checkpoint) after this step, as an interruption")
    ap.add_argument("--quiet", action="store_true")
    return ap


def main(argv=None):
    args = parser().parse_args(argv)
    if args.resume and (args.model or args.config or args.out):
        sys.exit("--resume takes no --model, --config or --out: the run's config.toml and pytorch.json are used")
    if not args.resume and not (args.model and args.config and args.out):
        sys.exit("--model, --config and --out are required (or --resume DIR)")
    if args.grad_accum < 1:
        sys.exit("--grad-accum must be >= 1")
    try:
        if args.spawn > 1:
            import torch.multiprocessing as mp
            try:
                mp.spawn(_spawned, args=(args.spawn, free_port(), args), nprocs=args.spawn, join=True)
            except mp.ProcessExitedException:
                sys.exit(1)
        else:
            run(args)
    except (ValueError, FileNotFoundError, FloatingPointError) as e:
        sys.exit(f"train: {e}")
