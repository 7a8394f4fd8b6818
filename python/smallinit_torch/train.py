"""`python -m smallinit_torch train`: data-parallel training of a smallinit model directory, with the Go trainer's
run config, batches, optimizer and run-directory layout, so that smallinit's report, analyze, compare and audit
read the run unchanged.

    python -m smallinit_torch train --model MODEL_DIR --config run.toml --out RUN [--grad-accum K] [--spawn N]
    python -m smallinit_torch train --resume RUN

What is the Go trainer's (train/run.go, train/checkpoint.go, optim/):
  - run.toml: the sections seed, [init], [optimizer], [schedule], [data], [train] with the Go keys and defaults
    (recipe.Default, read from train_defaults.json, which Go writes; see smallinit_torch.runconfig); the model's
    shape comes from MODEL_DIR/config.json (every key a [model] section gives must agree with it);
  - batches: train.batch_size windows of T+1 tokens per step in train.Sampler's order (a PCG Fisher-Yates per
    epoch, reproduced bit for bit by smallinit_torch.gorand); rank r of W takes windows [r B/W, (r+1) B/W) of each
    global batch, split into K micro-batches (gradient accumulation); gradients are averaged over ranks
    (DistributedDataParallel) and micro-batches, so the update is that of the global batch;
  - AdamW as optim.AdamW (PyTorch's, decoupled weight decay on every matrix, none on gains and biases), the
    warmup + cosine / WSD / constant schedule of recipe.Schedule, and gradient clipping by the global norm with
    optim.ClipScale's factor min(1, clip / (norm + 1e-6)); a non-finite loss or gradient stops the run (or skips
    the batch with train.skip_nonfinite);
  - the run directory: config.toml (the resolved config: every [model] key from config.json, the [init] recipe
    the weights follow), init.json, init/ (the step-0 weights), metrics.jsonl (Go's keys),
    diagnostics.jsonl (every train.diagnostics_interval steps, smallinit_torch.diagnostics), checkpoints/step-NNNNNN/
    (model.safetensors + config.json, optimizer.safetensors with exp_avg.<name> / exp_avg_sq.<name>, state.json),
    final/ (tokenizer.json, model.safetensors, config.json last); every file is written atomically and a
    checkpoint directory is renamed into place whole; --resume continues from the newest checkpoint exactly.
Plus pytorch.json: the PyTorch-side settings (model directory, gradient accumulation, world size) that --resume uses.

Processes: one per rank, started by torchrun or srun (env:// rendezvous: MASTER_ADDR, MASTER_PORT, WORLD_SIZE,
RANK, LOCAL_RANK), or --spawn N (torch.multiprocessing.spawn on one machine). The backend is NCCL when CUDA is
available (each rank on cuda:LOCAL_RANK), else gloo on the CPU. Not here: FSDP/tensor parallelism (the model is
replicated), and the MoE auxiliary loss is computed per rank's
micro-batch rather than over the global batch (identical with one process and no accumulation)."""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import signal
import socket
import sys
import time

import torch
import torch.distributed as dist

from .data import Sampler, num_windows, open_tokens
from .device import (adamw_kind, adamw_options, bf16_problem, device_error_line, features, has_compile,
                     has_foreach_clip, is_device_error, parse_device, sdpa)
from .files import MAX_TENSORS, USER_ERRORS, error_line, open_regular, read_json
from .init import gamma_init_, std_for
from .model import Llama, balance_routers, check_memory, load_weights, read_config, reset_router_loads
from .runconfig import defaults, encode_toml, load_run_config, lr_at, resolve_model, total_steps  # noqa: F401
from .runlock import LockWatch, RunLock, die_with_parent
from .safetensors import read_model_weights, read_safetensors, sync_dir, write_file_atomic, write_safetensors


# DEVICE_TOKENS_MAX is the largest token file the fast step keeps on a GPU (in its own width): beyond it the
# windows are gathered from the memory-mapped file on the host and copied over.
DEVICE_TOKENS_MAX = 4 << 30


def clip_scale(norm, max_norm):
    """optim.ClipScale: the factor the gradients are multiplied by (as float32)."""
    if max_norm <= 0 or norm == 0:
        return 1.0
    c = max_norm / (norm + 1e-6)
    return 1.0 if c >= 1 else float(torch.tensor(c, dtype=torch.float32))


def metrics_line(m):
    """One metrics.jsonl line with rundir.Metrics's keys, in its order, zero fields left out as Go's omitempty."""
    out = {"step": m["step"], "tokens": m["tokens"]}
    for k in defaults()["metric_keys"][2:]:
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
        self.device = parse_device(device_arg, self.local)
        if self.world > 1 and self.device.type == "cuda" and device_arg.startswith("cuda:"):
            raise ValueError(f"--device {device_arg}: with {self.world} ranks each rank takes cuda:LOCAL_RANK; "
                             f"pass --device cuda")
        cuda = self.device.type == "cuda"
        if cuda:
            torch.cuda.set_device(self.device)
        self._flags = None
        if self.world > 1:
            dist.init_process_group("nccl" if cuda else "gloo", init_method="env://", rank=self.rank,
                                    world_size=self.world)
            self._flags = dist.new_group(backend="gloo") if cuda else dist.group.WORLD

    def any(self, flag: bool) -> bool:
        """Whether flag is set on any rank: one all-reduce of a CPU integer (over gloo, so that on GPUs it does not
        wait for the device), so that every rank takes the same decision at the same step."""
        if self.world == 1:
            return flag
        t = torch.tensor([int(flag)], dtype=torch.int64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self._flags)
        return bool(t[0])

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
    write_model_dir(d, state_dict_named(model), config_json)


def write_model_dir(d, weights, config_json):
    """save_model_dir of weights given as name -> tensor (in the model's parameter order)."""
    os.makedirs(d, exist_ok=True)
    write_safetensors(os.path.join(d, "model.safetensors"), {n: t.float().cpu() for n, t in weights.items()},
                      {"format": "pt"}, atomic=True)
    write_file_atomic(os.path.join(d, "config.json"), json.dumps(config_json, indent=2) + "\n")


def save_checkpoint(run, model, opt, params, st, config_json, keep):
    moments = {}
    for n, p in params:
        s = opt.state.get(p, {})
        moments["exp_avg." + n] = s["exp_avg"] if "exp_avg" in s else torch.zeros_like(p, device="cpu")
        moments["exp_avg_sq." + n] = s["exp_avg_sq"] if "exp_avg_sq" in s else torch.zeros_like(p, device="cpu")
    return write_checkpoint(run, state_dict_named(model), moments, st, config_json, keep)


def write_checkpoint(run, weights, moments, st, config_json, keep):
    """checkpoints/step-NNNNNN/ of weights and AdamW moments (exp_avg.<name>, exp_avg_sq.<name>) given as
    name -> tensor, renamed into place whole; then all but the newest keep checkpoints are removed."""
    root = os.path.join(run, "checkpoints")
    os.makedirs(root, exist_ok=True)
    final = os.path.join(root, checkpoint_name(st["step"]))
    tmp = os.path.join(root, ".tmp-" + checkpoint_name(st["step"]))
    shutil.rmtree(tmp, ignore_errors=True)
    write_model_dir(tmp, weights, config_json)
    moments = {n: t.float().cpu() for n, t in moments.items()}
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


STATE_INTS = ("step", "tokens", "epoch", "pos", "adam_step", "skipped", "loss_count", "metrics_bytes",
              "diagnostics_bytes", "seed")


def read_state(ck: str) -> dict:
    """A checkpoint's state.json, every field checked (non-negative integers, a finite loss sum)."""
    path = os.path.join(ck, "state.json")
    st = read_json(path)
    for k in STATE_INTS:
        v = st.get(k)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"{path}: {k} = {v!r}, want a non-negative integer")
    if isinstance(st.get("loss_sum"), bool) or not isinstance(st.get("loss_sum"), (int, float)) or not math.isfinite(st["loss_sum"]):
        raise ValueError(f"{path}: loss_sum = {st.get('loss_sum')!r}, want a finite number")
    if checkpoint_name(st["step"]) != os.path.basename(ck):
        raise ValueError(f"{path}: step {st['step']}, but the checkpoint is {os.path.basename(ck)}")
    return st


def load_checkpoint(ck, model, opt, params, step_on_device=False):
    """Restore a checkpoint's weights, AdamW moments and step into model and opt; returns its state.json.
    step_on_device: the fused AdamW keeps its step count on the parameter's device, the others on the CPU."""
    st = read_state(ck)
    load_weights(model, read_model_weights(ck), ck)
    adam_step, mom = read_moments(ck, st, params)
    if adam_step > 0:
        for n, p in params:
            opt.state[p] = {"step": torch.tensor(float(adam_step), device=p.device if step_on_device else "cpu"),
                            "exp_avg": mom["exp_avg." + n].to(p.device, p.dtype).clone(),
                            "exp_avg_sq": mom["exp_avg_sq." + n].to(p.device, p.dtype).clone()}
    return st


def read_moments(ck, st, params):
    """(adam_step, name -> tensor) of a checkpoint's optimizer.safetensors: every exp_avg.<name> and
    exp_avg_sq.<name> of params (name, tensor of the shape wanted) present, floating-point and of its shape, and
    its adam_step the one of state.json st."""
    opath = os.path.join(ck, "optimizer.safetensors")
    mom, meta = read_safetensors(opath, with_metadata=True)
    try:
        adam_step = int(meta.get("adam_step", st["adam_step"]))
    except ValueError:
        raise ValueError(f"{opath}: adam_step {meta.get('adam_step')!r} is not an integer") from None
    if adam_step != st["adam_step"]:
        raise ValueError(f"{opath}: adam_step {adam_step}, but state.json says {st['adam_step']}")
    for n, p in params:
        for k in ("exp_avg." + n, "exp_avg_sq." + n):
            t = mom.get(k)
            if t is None:
                raise ValueError(f"{opath}: lacks {k}")
            if not t.is_floating_point() or tuple(t.shape) != tuple(p.shape):
                raise ValueError(f"{opath}: {k} is {t.dtype} {list(t.shape)}, want floating-point {list(p.shape)}")
    return adam_step, mom


def check_log(path: str, n: int) -> None:
    """Refuse to resume when a log that a checkpoint says held n bytes holds fewer, or when cutting it at n
    would cut a line in half: the run directory was edited or damaged (Go's trainer refuses both too)."""
    if not os.path.lexists(path):
        if n:
            raise ValueError(f"{path}: missing, but the checkpoint says it had {n} bytes")
        return
    with open_regular(path, MAX_TENSORS) as f:
        size = os.fstat(f.fileno()).st_size
        if size < n:
            raise ValueError(f"{path}: {size} bytes, fewer than the {n} the checkpoint recorded: not resuming a "
                             f"damaged run")
        if n:
            f.seek(n - 1)
            if f.read(1) != b"\n":
                raise ValueError(f"{path}: byte {n} that the checkpoint recorded is not the end of a line")


def truncate(path, n):
    check_log(path, n)
    if os.path.exists(path):
        os.truncate(path, n)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Stop:
    """SIGTERM as a request to stop: the handler only sets a flag; the loop checkpoints at the end of the step
    it is in and returns, so that a preempted run resumes exactly (--resume). The previous handler is put
    back by close()."""

    def __init__(self) -> None:
        self.requested, self._old = False, None
        import threading
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGTERM, self._handle)

    def _handle(self, signum, frame) -> None:
        self.requested = True

    def close(self) -> None:
        if self._old is not None:
            signal.signal(signal.SIGTERM, self._old)
            self._old = None


class LockLost(ValueError):
    """The run's lock was taken over, or the parent that held it for this trainer died: the run stops at once,
    without a checkpoint (its directory has another owner, whose checkpoints this one's pruning could delete)."""


class Stopped(Exception):
    """The run stopped early at a checkpoint (SIGTERM); main exits with 143 (128 + SIGTERM) after saying where."""


def resolve_precision(p: str, dev: torch.device) -> str:
    """train.precision for the PyTorch trainer: f32, or bf16 (torch.autocast with float32 master weights, where
    bf16_problem finds the matmuls accumulating in float32); auto is bf16 on a CUDA GPU that has it and passes
    that probe, else f32."""
    p = p or "f32"
    if p == "auto":
        ok = dev.type == "cuda" and torch.cuda.is_bf16_supported() and not bf16_problem(dev)
        return "bf16" if ok else "f32"
    return p


class Owner:
    """Rank 0's hold on the run directory: its lock (RunLock), or with --lock-held the watch on the lock its
    parent holds (LockWatch). take() is called before the first write; check() every step."""

    def __init__(self, held: bool) -> None:
        self.held, self.lock = held, None

    def take(self, out: str) -> None:
        os.makedirs(out, exist_ok=True)
        self.lock = LockWatch(out, os.getppid()) if self.held else RunLock.acquire(out)

    def check(self, out: str) -> None:
        if self.lock is not None and self.lock.lost:
            raise LockLost(f"{out}: its lock was taken over or the process holding it died: stopped without a "
                           f"checkpoint (another process owns the run now)")

    def release(self) -> None:
        if self.lock is not None:
            self.lock.release()
            self.lock = None


def run(args):
    """Train (every rank calls this); returns the list of metrics dicts rank 0 logged."""
    D = Dist(args.device)
    stop = Stop()
    own = Owner(getattr(args, "lock_held", False))
    try:
        return _run(args, D, stop, own)
    finally:
        own.release()
        stop.close()
        D.close()


def start_run_dir(out: str, model, c: dict, config_json: dict, init_doc: dict, record: dict) -> None:
    """A new run's files, as Go's trainer starts a run: init.json (init_doc), pytorch.json (record), init/ (the
    step-0 weights of model), empty metrics.jsonl and diagnostics.jsonl, and config.toml last (its presence
    marks the run started)."""
    os.makedirs(out, exist_ok=True)
    write_file_atomic(os.path.join(out, "init.json"), json.dumps(init_doc, indent=2) + "\n")
    write_file_atomic(os.path.join(out, "pytorch.json"), json.dumps(record, indent=2) + "\n")
    save_init_dir(out, model, config_json)
    for p in ("metrics.jsonl", "diagnostics.jsonl"):
        open(os.path.join(out, p), "w").close()
    write_file_atomic(os.path.join(out, "config.toml"), encode_toml(c))


def read_pytorch_json(out: str) -> "tuple[str, int]":
    """(model directory, gradient accumulation) of a run's pytorch.json, checked."""
    path = os.path.join(out, "pytorch.json")
    pj = read_json(path)
    model_dir, accum = pj.get("model"), pj.get("grad_accum")
    if not isinstance(model_dir, str) or not model_dir:
        raise ValueError(f"{path}: model = {model_dir!r}, want the model directory")
    if isinstance(accum, bool) or not isinstance(accum, int) or accum < 1:
        raise ValueError(f"{path}: grad_accum = {accum!r}, want an integer >= 1")
    return model_dir, accum


def _run(args, D, stop=None, own=None):
    if args.resume:
        out = args.resume
        model_dir, accum = read_pytorch_json(out)
        cfg_path = os.path.join(out, "config.toml")
    else:
        out, model_dir, accum, cfg_path = args.out, args.model, args.grad_accum, args.config
        exists = os.path.exists(os.path.join(out, "config.toml"))  # every rank checks, before rank 0 writes it
        D.barrier()
        if exists:
            raise ValueError(f"{out}: already holds a run: resume it with --resume {out} or choose another --out")
    c, given = load_run_config(cfg_path)
    mc, config_json = read_config(model_dir)
    c["model"] = resolve_model(c, mc, config_json, cfg_path, model_dir)
    t = c["train"]
    T, B = mc.max_position_embeddings, t["batch_size"]
    if B % (D.world * accum):
        raise ValueError(f"{cfg_path}: train.batch_size = {B} is not divisible by {D.world} ranks x {accum} micro-batches")
    micro = B // (D.world * accum)
    total = total_steps(c, T)
    if total < 1:
        raise ValueError(f"{cfg_path}: train.tokens = {t['tokens']} is less than one step of batch_size x "
                         f"max_position_embeddings = {B} x {T} tokens")
    if t["threads"] > 0:
        torch.set_num_threads(t["threads"])
    fast = args.step == "fast"
    precision = resolve_precision(t.get("precision"), D.device)
    if precision == "bf16":
        why = bf16_problem(D.device)
        if why:
            raise ValueError(f"{cfg_path}: train.precision = bf16: {why}; use precision = \"f32\"")
    if args.compile and not has_compile():
        raise ValueError(f"--compile: torch.compile needs torch 2.0 or later (this is torch {torch.__version__})")
    if fast and D.device.type == "cuda" and precision == "f32":  # TF32 matmuls for f32 (the GPU-grade step)
        torch.set_float32_matmul_precision("highest" if args.no_tf32 else "high")  # public on torch 1.12 and later
    train_toks = open_tokens(c["data"]["train"], mc.vocab_size)
    val_toks = open_tokens(c["data"]["val"], mc.vocab_size) if c["data"]["val"] else None
    if val_toks is not None and num_windows(len(val_toks), T) == 0:
        raise ValueError(f"{c['data']['val']}: {len(val_toks)} tokens, need at least {T + 1} for one validation window")
    if num_windows(len(train_toks), T) == 0:
        raise ValueError(f"{c['data']['train']}: {len(train_toks)} tokens, need at least {T + 1} for one training window")
    on_device = [tk for tk in (train_toks, val_toks)  # the token files the fast step keeps on a GPU
                 if fast and D.device.type == "cuda" and tk is not None and tk.nbytes <= DEVICE_TOKENS_MAX]
    check_memory(mc, micro, f"{model_dir}/config.json: model", D.device, extra=sum(tk.nbytes for tk in on_device),
                 extra_what=f"and {sum(tk.nbytes for tk in on_device) / 1e9:.3g} GB of token files on the device")

    torch.manual_seed(0)
    model = Llama(mc).to(D.device)
    params = list(model.named_parameters())
    matrices = [p for _, p in params if p.dim() == 2]
    others = [p for _, p in params if p.dim() != 2]
    o = c["optimizer"]
    # The optimizer's path changes no state: the moments are saved by parameter name, so a checkpoint of either
    # path resumes in the other (load_checkpoint writes the state every path reads).
    opt_kind = (args.adamw if args.adamw != "auto" else adamw_kind(D.device)) if fast else "single"
    if opt_kind == "fused" and adamw_kind(D.device) != "fused":
        raise ValueError(f"--adamw fused: this torch ({torch.__version__}) has no fused AdamW on {D.device}")
    opt = torch.optim.AdamW([{"params": matrices, "weight_decay": o["weight_decay"]}, {"params": others, "weight_decay": 0.0}],
                            lr=c["schedule"]["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"], **adamw_options(opt_kind))
    if fast:
        model.use_fused_attention(sdpa())
    st = {"step": 0, "tokens": 0, "epoch": 0, "pos": 0, "adam_step": 0, "skipped": 0, "loss_sum": 0.0, "loss_count": 0,
          "metrics_bytes": 0, "diagnostics_bytes": 0, "seed": c["seed"]}
    if own is not None and D.rank == 0:
        own.take(out)  # before the first write; then, under the lock, check again that --out holds no run
        if not args.resume and os.path.exists(os.path.join(out, "config.toml")):
            raise ValueError(f"{out}: already holds a run: resume it with --resume {out} or choose another --out")
    D.barrier()
    steps = list_checkpoints(out) if args.resume else []
    metrics_path, diag_path = os.path.join(out, "metrics.jsonl"), os.path.join(out, "diagnostics.jsonl")
    if steps:
        ck = os.path.join(out, "checkpoints", checkpoint_name(steps[-1]))
        st = load_checkpoint(ck, model, opt, params, step_on_device=opt_kind == "fused")
        if st["seed"] != c["seed"]:
            raise ValueError(f"{cfg_path}: seed = {c['seed']}, but {ck}/state.json was written by seed {st['seed']}")
        if st["step"] > total:
            raise ValueError(f"{cfg_path}: {total} steps, but {ck} is at step {st['step']}")
        check_log(metrics_path, st["metrics_bytes"])
        check_log(diag_path, st["diagnostics_bytes"])
        D.barrier()
        if D.rank == 0:
            truncate(metrics_path, st["metrics_bytes"])
            truncate(diag_path, st["diagnostics_bytes"])
            if not args.quiet:
                print(f"resuming {out} from {ck}", file=sys.stderr)
    else:
        records, recipe, init_seed = initialise(model, model_dir, c, given, config_json)
        c["init"] = recipe
        if D.rank == 0:
            start_run_dir(out, model, c, config_json, {"recipe": recipe, "seed": init_seed, "optimizer": o, "tensors": records},
                          {"model": os.path.abspath(model_dir), "grad_accum": accum, "world_size": D.world,
                           "torch": torch.__version__, "engine": "torch", "step": args.step, "precision": precision,
                           "compile": bool(args.compile), **{"features": features(D.device)}})
    D.barrier()

    ddp = model
    if D.world > 1:
        ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[D.device.index] if D.device.type == "cuda" else None,
                                                        find_unused_parameters=mc.moe)
    fwd = torch.compile(ddp) if args.compile else ddp
    autocast = (lambda: torch.autocast(D.device.type, dtype=torch.bfloat16)) if precision == "bf16" else contextlib.nullcontext
    for toks in on_device:  # token files that fit beside the model are gathered on the GPU
        toks.to_device(D.device)
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
        if st["step"] > 0:
            settle()  # a non-finite step stops the run before its weights are diagnosed
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
        s = torch.zeros((), dtype=torch.float64, device=D.device)
        with torch.no_grad(), autocast():
            for k0 in range(D.rank * micro, nw, D.world * micro):
                ks = list(range(k0, min(k0 + micro, nw)))
                x, y = val_toks.windows(ks, T, D.device)
                _, loss = model(x, y)
                s += loss.detach().double() * len(ks)
        model.train()
        return D.sum([s.item()])[0] / nw

    def forward_backward(x, y, i):
        """One micro-batch's forward and backward (gradients averaged over the K micro-batches); its loss."""
        sync = contextlib.nullcontext() if (i == accum - 1 or D.world == 1) else ddp.no_sync()
        with sync:
            with autocast():
                _, loss = fwd(x, y)
            (loss / accum).backward()
        return loss.detach()

    def step_reference(step, lr):
        """The parity reference (--step reference): the loss, the float64 gradient norm and the clip factor are
        read on the host every step, the update skipped or stopped there (P + 3K + 2 host reads a step)."""
        ids = sampler.next_ids(B)
        mine = ids[D.rank * micro * accum:(D.rank + 1) * micro * accum]
        loss_sum = 0.0
        for i in range(accum):
            x, y = sampler.batch(mine[i * micro:(i + 1) * micro])
            loss_sum += forward_backward(x.to(D.device), y.to(D.device), i).item() / accum
        loss_v = D.sum([loss_sum])[0] / D.world
        gsq = sum(float(p.grad.double().pow(2).sum()) for _, p in params if p.grad is not None)
        gn = math.sqrt(gsq)
        if not (math.isfinite(loss_v) and math.isfinite(gn)):
            if not t["skip_nonfinite"]:
                raise FloatingPointError(f"step {step}: non-finite loss {loss_v} or gradient norm {gn}")
            st["skipped"] += 1
            reset_router_loads(model)
        else:
            sc = clip_scale(gn, t["grad_clip"])
            for g in opt.param_groups:
                g["lr"] = lr
            if sc != 1.0:
                for _, p in params:
                    if p.grad is not None:
                        p.grad.mul_(sc)
            opt.step()
            balance_routers(model, reduce_loads)
            st["adam_step"] += 1
            st["loss_sum"] += loss_v
            st["loss_count"] += 1
        opt.zero_grad(set_to_none=True)
        return gn

    foreach_clip = D.device.type == "cuda" and has_foreach_clip()
    reduce_loads = dist.all_reduce if D.world > 1 else None  # MoE loads of the global batch (balance_routers)
    dev_loss = torch.zeros((), dtype=torch.float64, device=D.device)  # the fast step's sum of step losses
    first_bad = torch.full((), -1, dtype=torch.int64, device=D.device)  # its first non-finite step, or -1

    def step_fast(step, lr):
        """The GPU-grade step (--step fast, the default): the loss, the gradient norm (float64, as the
        reference's) and the non-finite flag stay on the device; the clip factor min(1, clip / (norm + 1e-6))
        (optim.ClipScale) multiplies the gradients there. Nothing is read on the host between log steps, except
        with train.skip_nonfinite, whose decision to skip needs the flag every step. Without it a non-finite
        step is found at the next log step or checkpoint, which stops the run naming that step, as the
        reference would have at the step itself."""
        nonlocal dev_loss, first_bad
        ids = sampler.next_ids(B)
        mine = ids[D.rank * micro * accum:(D.rank + 1) * micro * accum]
        loss = torch.zeros((), dtype=torch.float64, device=D.device)
        for i in range(accum):
            x, y = sampler.batch(mine[i * micro:(i + 1) * micro], D.device)
            loss += forward_backward(x, y, i).double() / accum
        if D.world > 1:
            dist.all_reduce(loss)
            loss /= D.world
        grads = [p.grad for _, p in params if p.grad is not None]
        if t["skip_nonfinite"] or not foreach_clip:
            gn = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g, dtype=torch.float64) for g in grads]))
        else:  # torch >= 2 on CUDA: the same factor min(1, clip / (norm + 1e-6)) in a few foreach kernels (float32 norm)
            gn = torch.nn.utils.clip_grad_norm_([p for _, p in params if p.grad is not None],
                                                t["grad_clip"] if t["grad_clip"] > 0 else math.inf, foreach=True).double()
        bad = ~(torch.isfinite(loss) & torch.isfinite(gn))
        if t["skip_nonfinite"] and bool(bad):
            st["skipped"] += 1
            reset_router_loads(model)
            opt.zero_grad(set_to_none=True)
            return gn
        if t["grad_clip"] > 0 and (t["skip_nonfinite"] or not foreach_clip):
            c64 = t["grad_clip"] / (gn + 1e-6)
            sc = torch.where(c64 >= 1, torch.ones_like(c64), c64).float()
            for g in grads:
                g.mul_(sc.to(g.dtype))
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()
        balance_routers(model, reduce_loads)
        opt.zero_grad(set_to_none=True)
        first_bad = torch.where(bad & (first_bad < 0), torch.full_like(first_bad, step), first_bad)
        dev_loss += loss
        st["adam_step"] += 1
        st["loss_count"] += 1
        return gn

    def settle():
        """Read the fast step's device values into st (one host read): the loss sum; a non-finite step stops
        the run as the reference does."""
        nonlocal dev_loss
        if not fast:
            return
        bad, loss_sum = int(first_bad), float(dev_loss)
        if bad >= 0:
            raise FloatingPointError(f"step {bad}: non-finite loss or gradient norm (found at step {st['step']})")
        st["loss_sum"] += loss_sum
        dev_loss = torch.zeros_like(dev_loss)

    try:
        if st["step"] == 0:
            diagnose()
            if t["eval_interval"] > 0 and val_toks is not None:
                v = evaluate()
                write_metrics({"step": 0, "tokens": 0, "val_loss": v if math.isfinite(v) else None})
        interval_start, interval_tokens, start_step, t0 = time.time(), 0, st["step"], time.time()
        stop_at = min(total, args.max_steps) if args.max_steps else total
        gn = 0.0
        while st["step"] < stop_at:
            if own is not None:
                own.check(out)
            step = st["step"]
            lr = lr_at(c["schedule"], step, total)
            gn = (step_fast if fast else step_reference)(step, lr)
            st["step"] += 1
            st["tokens"] += B * T
            st["epoch"], st["pos"] = sampler.epoch, sampler.pos
            interval_tokens += B * T
            done = st["step"] == total
            eval_now = val_toks is not None and ((t["eval_interval"] > 0 and st["step"] % t["eval_interval"] == 0) or done)
            if st["step"] % t["log_interval"] == 0 or done or eval_now:
                settle()
                gn = float(gn)
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
            stopping = D.any(stop is not None and stop.requested)
            if done or st["step"] == stop_at or stopping or (every > 0 and st["step"] % every == 0):
                settle()
                if D.rank == 0:
                    if mf:
                        os.fsync(mf.fileno())
                    save_checkpoint(out, model, opt, params, st, config_json, t["keep_checkpoints"])
                D.barrier()
            if stopping and not done:
                raise Stopped(f"{out}: stopped by SIGTERM at step {st['step']} of {total}, checkpoint written: "
                              f"continue with --resume {out}")
        if st["step"] < total and D.rank == 0 and not args.quiet:
            print(f"stopped at step {st['step']} of {total} (--max-steps {args.max_steps}), checkpoint written: "
                  f"continue with --resume {out}", file=sys.stderr)
    finally:  # an error (a non-finite step, SIGTERM) leaves no open log
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


def _recipe(r: dict) -> dict:
    """A recipe with every key: rule, gamma, std, depth_scale, classes (the [init] section's). std is kept only
    when the rule reads it (fixed): a γ-rule recipe that `smallinit init` recorded with its std = 0.02 default
    writes std = 0 to config.toml, as Go's trainer does, so that a Go run and a PyTorch run of one arm land in
    one report arm."""
    from .init import rules
    rule = r.get("rule") or "gamma"
    std = float(r.get("std") or 0.0) if rules().get(rule, {}).get("param") == "std" else 0.0
    return {"rule": rule, "gamma": float(r.get("gamma", 1.0)), "std": std,
            "depth_scale": bool(r.get("depth_scale", False)), "classes": r.get("classes") or {}}


def _effective(r: dict) -> tuple:
    """What of a recipe decides the draws: the γ of the γ rule, the std of the fixed rule, depth scaling, overrides."""
    return (r["rule"], r["gamma"] if r["rule"] == "gamma" else None, r["std"] if r["rule"] == "fixed" else None,
            r["depth_scale"], json.dumps(r["classes"], sort_keys=True))


def save_init_dir(out: str, model: torch.nn.Module, config_json: dict) -> None:
    """RUN/init/: the step-0 weights as a model directory, whole or not at all (as Go's trainer writes it)."""
    final, tmp = os.path.join(out, "init"), os.path.join(out, ".tmp-init")
    shutil.rmtree(tmp, ignore_errors=True)
    save_model_dir(tmp, model, config_json)
    sync_dir(tmp)
    shutil.rmtree(final, ignore_errors=True)
    os.rename(tmp, final)
    sync_dir(out)


def initialise(model, model_dir, c, given=frozenset(), config_json=None):
    """Load the model directory's weights, or (a directory with only config.json) draw them with gamma_init_ by
    the run config's [init] recipe and seed. Returns init.json's per-tensor records, the recipe the weights
    follow and the seed they were drawn with. When the weights are drawn here, config_json's smallinit_init is
    set to that recipe, so that final/config.json records the γ that was drawn. An explicit [init] that
    contradicts the recipe the model directory records is refused."""
    cj = config_json if config_json is not None else read_config(model_dir)[1]
    try:
        sd = read_model_weights(model_dir)
    except FileNotFoundError:
        recipe = _recipe(c["init"])
        records = gamma_init_(model, gamma=recipe["gamma"], rule=recipe["rule"], std=recipe["std"] or 0.02,
                              classes=recipe["classes"], depth_scale=recipe["depth_scale"], seed=c["seed"])
        cj["smallinit_init"] = {"recipe": recipe, "seed": c["seed"]}
        return records, recipe, c["seed"]
    load_weights(model, sd, model_dir)
    rec = cj.get("smallinit_init") if isinstance(cj.get("smallinit_init"), dict) else {}
    recipe, seed = _recipe(c["init"]), c["seed"]
    if isinstance(rec.get("recipe"), dict):
        recorded = _recipe(rec["recipe"])
        if any(k == "init" for k, _ in given) and _effective(recorded) != _effective(recipe):
            raise ValueError(f"{model_dir}/config.json: the weights were drawn by {recorded}, but the run config's "
                             f"[init] says {recipe}: [init] draws weights only for a model directory without them")
        recipe = recorded
        if isinstance(rec.get("seed"), int):
            seed = rec["seed"]
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
    return out, recipe, seed


def _spawned(rank, world, port, args):
    die_with_parent()
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(world), RANK=str(rank),
                      LOCAL_RANK=str(rank))
    torch.set_num_threads(max(1, args.threads_per_rank))
    try:
        run(args)
    except Stopped as e:
        if rank == 0:
            print(f"smallinit_torch: {e}", file=sys.stderr)
        sys.exit(143)
    except USER_ERRORS as e:
        if rank == 0:
            print(error_line(e), file=sys.stderr)
        sys.exit(1)
    except RuntimeError as e:
        if not is_device_error(e):
            raise
        print(device_error_line(e, args.device), file=sys.stderr)
        sys.exit(1)


def spawn(args) -> None:
    """--spawn N: N local ranks (torch.multiprocessing), each dying with this process. A SIGTERM to this process
    is passed to every rank, which stop together at the end of one step with a checkpoint (exit 143)."""
    import torch.multiprocessing as mp
    if args.lock_held:  # the ranks' parent is this process: rank 0 watches the lock through it
        raise ValueError("--lock-held with --spawn: the Go engine runs one process per run")
    ctx = mp.start_processes(_spawned, args=(args.spawn, free_port(), args), nprocs=args.spawn, join=False,
                             start_method="spawn")
    pids = [p.pid for p in ctx.processes]

    def forward(signum, frame):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
    old = signal.signal(signal.SIGTERM, forward)
    try:
        while not ctx.join():
            pass
    except mp.ProcessExitedException as e:
        sys.exit(143 if e.exit_code == 143 else 1)
    except mp.ProcessRaisedException:
        sys.exit(1)
    finally:
        signal.signal(signal.SIGTERM, old)


def parser(sub=None):
    ap = sub or argparse.ArgumentParser(prog="python -m smallinit_torch train", description=__doc__,
                                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="model directory (config.json, and model.safetensors unless [init] draws it)")
    ap.add_argument("--config", help="run config (TOML, the Go trainer's keys)")
    ap.add_argument("--out", help="run directory to create")
    ap.add_argument("--resume", help="continue the run in this directory from its newest checkpoint")
    ap.add_argument("--grad-accum", type=int, default=1, help="micro-batches per rank and step")
    ap.add_argument("--device", default="auto", help="auto (a CUDA GPU when there is one), cpu, cuda or cuda:N")
    ap.add_argument("--step", choices=("fast", "reference"), default="fast",
                    help="fast: the GPU-grade step (no host reads between log steps, fused attention and AdamW where "
                         "this torch has them); reference: the per-step host path the Go parity tests hold")
    ap.add_argument("--compile", action="store_true", help="run the forward through torch.compile (torch >= 2.0)")
    ap.add_argument("--adamw", choices=("auto", "fused", "foreach", "single"), default="auto",
                    help="the fast step's AdamW path (auto: the fastest this torch has on the device); a checkpoint of "
                         "any path resumes in any other")
    ap.add_argument("--no-tf32", action="store_true",
                    help="f32 on CUDA in full float32 matmuls (TF32 off): for comparisons with the CPU")
    ap.add_argument("--spawn", type=int, default=0, help="start this many local gloo/NCCL processes (instead of torchrun)")
    ap.add_argument("--threads-per-rank", type=int, default=1, help="torch threads of each --spawn process")
    ap.add_argument("--max-steps", type=int, default=0, help="stop (with a checkpoint) after this step, as an interruption")
    ap.add_argument("--quiet", action="store_true", help="print errors only")
    ap.add_argument("--lock-held", action="store_true",
                    help="the parent process holds the run's lock (the Go engine): check that it does, and stop when "
                         "it no longer does or dies, instead of taking the lock")
    return ap


def main(argv=None):
    args = parser().parse_args(argv)
    if args.resume and (args.model or args.config or args.out):
        sys.exit("smallinit_torch: --resume takes no --model, --config or --out: the run's config.toml and pytorch.json are used")
    if not args.resume and not (args.model and args.config and args.out):
        sys.exit("smallinit_torch: --model, --config and --out are required (or --resume DIR)")
    for flag, v, lo in (("--grad-accum", args.grad_accum, 1), ("--spawn", args.spawn, 0),
                        ("--threads-per-rank", args.threads_per_rank, 1), ("--max-steps", args.max_steps, 0)):
        if v < lo:
            sys.exit(f"smallinit_torch: {flag} = {v}: must be >= {lo}")
    if args.lock_held:
        die_with_parent()
    exit_on_errors(spawn if args.spawn > 1 else run, args)


def exit_on_errors(train, args) -> None:
    """train(args), its ends as a command's: a SIGTERM stop is exit 143 after saying where; a user error and a
    device error (a CUDA error, out of device memory) are one line naming the file or device, no traceback."""
    try:
        train(args)
    except Stopped as e:
        print(f"smallinit_torch: {e}", file=sys.stderr)
        sys.exit(143)
    except USER_ERRORS as e:
        sys.exit(error_line(e))
    except RuntimeError as e:
        if not is_device_error(e):
            raise
        sys.exit(device_error_line(e, args.device))
