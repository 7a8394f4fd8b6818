"""The width-128 H1 replica on one GPU, in one command of bounded wall time (scripts/gpu/h1-replica.sh runs it).

Arms (the reproduce plan's γ grid corner, docs/definitions.md §7): width 128 (the tiny preset: 4 layers, 4 heads,
d_ff 384, vocabulary 4096, T = 128, batch 16) with both fixes (ε = 1e-12, elementwise gate), cosine schedule,
    γ ∈ {0.5, 1} × learning rates {2e-3, 4e-3} × seeds {0, 1}, and γ = 1 at 1e-3 (seed 0),
each trained for 20 tokens per non-embedding parameter (model.NonEmbeddingParams), all at once as separate
`python -m smallinit_torch train` processes sharing the GPU; then, if time allows, a width-256 pair (γ 0.5 and 1,
lr 2e-3, seed 0) at the same tokens per parameter.

Time: after every run has logged once, a throughput probe (--probe-seconds, 30) measures each run's steps per
second; the runs the remaining time cannot finish are dropped, lowest priority first (the width-256 pair, then
γ = 1 at 1e-3, then seed 1, ...), on the assumption that the GPU's throughput is shared evenly among the runs
left. At the deadline (--minutes) every run still going gets SIGTERM: it checkpoints and stops. Every run
evaluates every 10% of its steps (and at the end), so a cut run still reports its last validation loss.

Data: --data DIR, a directory `smallinit data prepare` wrote (train.tok, val.tok, tokenizer.json): the H1 result
trained on the bilingual corpus (docs/data.md; v2, 24.2M training tokens, where a width-128 run sees 0.76 epochs
and the width-256 pair 2.88, so it is not started; v1, 30.0M: 0.61 and 2.32).
Without --data only a smoke run (--steps) may use the embedded corpus, prepared here with Go. A run that would
see more than one epoch of the training file is not started (it would measure memorisation, not H1): the plan
printed first says so, and --plan prints the plan alone.

Scoring: the trainer's validation loss during a run reads the first 64 windows of val.tok only (its
eval_windows). H1 is read as the Go study reads it (docs/definitions.md §7, "Which loss"): every finished run's
final model is scored on the whole validation split on the device, per language where the corpus has per-language
files (stats.json `train_by_lang`, val.LANG.tok), and the mixture at the **training mix**, Σ w·L_lang with w the
language's share of the training tokens (on the bilingual corpus v2 the validation split is 88% English against
20% in training, so val.tok's own mixture would weigh English four times over). Without per-language files the
whole of val.tok is the score. A run whose scoring did not finish falls back to its last validation loss, marked.

Numerics: f32 by default (TF32 matmuls on CUDA), the numerics of the Go runs the result is compared with;
--precision bf16 is bf16 autocast, refused where the device sums bf16 matmuls in bf16 (device.bf16_problem).

Preflight: before anything is started, the interpreter ($PYTHON, else this one, else /usr/bin/python3) must
import torch and smallinit_torch and see the device (`python -m smallinit_torch preflight`); else one line.

Output (under --out, default $OUT, else ./h1-replica-out): summary.md, summary.json and runs.tar.gz (every run's
config.toml, init.json, pytorch.json, metrics.jsonl and log; the newest checkpoint of a run cut at the deadline, so
that it can be resumed with `python -m smallinit_torch train --resume`): three files. summary.md counts the runs
done, cut, dropped and failed, and quotes each failed run's last log line."""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import struct
import subprocess
import sys
import tarfile
import tempfile
import time

TINY = {"vocab_size": 4096, "hidden_size": 128, "intermediate_size": 384, "num_hidden_layers": 4,
        "num_attention_heads": 4, "max_position_embeddings": 128}
BATCH = 16


def default_ffn(d: int) -> int:
    """arch.DefaultFFN: 8d/3 rounded up to a multiple of 64."""
    return (8 * d // 3 + 63) // 64 * 64


def model_config(width: int) -> dict:
    """config.json of the replica's model at a width (heads and depth fixed, d_ff following the width)."""
    c = dict(TINY, hidden_size=width, intermediate_size=default_ffn(width))
    c.update({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_key_value_heads": c["num_attention_heads"],
              "rms_norm_eps": 1e-12, "rope_theta": 10000.0, "tie_word_embeddings": False, "hidden_act": "silu",
              "attn_gate": "elementwise", "norm": "rmsnorm"})
    return c


def non_embedding_params(c: dict) -> int:
    """model.NonEmbeddingParams of a dense, untied model with the elementwise gate."""
    d, f, L = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    return L * (2 * d + 5 * d * d + 3 * d * f) + d


def arms(widths256: bool) -> "list[dict]":
    """The runs in priority order (the first is dropped last)."""
    out = []
    for seed in (0, 1):
        for lr in (2e-3, 4e-3):
            for gamma in (0.5, 1.0):
                out.append({"width": 128, "gamma": gamma, "lr": lr, "seed": seed})
    out.append({"width": 128, "gamma": 1.0, "lr": 1e-3, "seed": 0})
    if widths256:
        out += [{"width": 256, "gamma": g, "lr": 2e-3, "seed": 0} for g in (0.5, 1.0)]
    for a in out:
        a["name"] = f"d{a['width']}-g{a['gamma']:g}-lr{a['lr']:g}-s{a['seed']}"
    return out


def token_count(path: str) -> int:
    with open(path, "rb") as f:
        hdr = f.read(24)
    if len(hdr) < 24 or hdr[:8] != b"SITOKENS":
        raise SystemExit(f"h1-replica: {path}: not a token file")
    return struct.unpack("<IIQ", hdr[8:24])[2]


def find_data(arg: "str | None", root: str, work: str, smoke: bool) -> "tuple[str, str]":
    """(data directory, what it is): --data, else (a smoke run) the embedded corpus prepared by Go into work."""
    if not arg and not smoke:
        raise SystemExit("h1-replica: --data DIR is required: the prepared bilingual corpus (docs/data.md; "
                         "docs/pytorch.md shows carrying it to the GPU machine); only a smoke run (--steps N) may use "
                         "the embedded corpus, of which a width-128 run would see 10 epochs")
    if arg:
        for f in ("train.tok", "val.tok"):
            if not os.path.isfile(os.path.join(arg, f)):
                raise SystemExit(f"h1-replica: --data {arg}: no {f} (want a directory `smallinit data prepare` wrote)")
        return arg, f"prepared corpus {arg}"
    if shutil.which("go") is None:
        raise SystemExit("h1-replica: no --data DIR and no Go toolchain to prepare the embedded corpus: prepare it "
                         "elsewhere (`go run ./cmd/smallinit data prepare --out DIR --vocab 4096`) and pass --data DIR")
    d = os.path.join(work, "data")
    bin_ = os.path.join(work, "smallinit")
    subprocess.run(["go", "build", "-o", bin_, "./cmd/smallinit"], cwd=root, check=True)
    subprocess.run([bin_, "data", "prepare", "--out", d, "--vocab", "4096"], check=True, stdout=subprocess.DEVNULL)
    return d, "the embedded corpus (prepared here by `smallinit data prepare --vocab 4096`)"


def run_toml(a: dict, data: str, steps: int, extra: dict) -> str:
    every = max(1, steps // 10)
    lines = [f"seed = {a['seed']}", "", "[init]", 'rule = "gamma"', f"gamma = {a['gamma']!r}", "",
             "[schedule]", 'kind = "cosine"', f"lr = {a['lr']!r}", "", "[data]",
             f'train = {json.dumps(os.path.join(data, "train.tok"))}', f'val = {json.dumps(os.path.join(data, "val.tok"))}',
             "", "[train]", f"batch_size = {BATCH}", f"steps = {steps}", f"log_interval = {min(25, every)}",
             f"eval_interval = {every}", "eval_windows = 64", f"checkpoint_interval = {every}", "keep_checkpoints = 1",
             "diagnostics_interval = 0", "threads = 1", f'precision = "{extra["precision"]}"']
    return "\n".join(lines) + "\n"


def read_metrics(run: str) -> "list[dict]":
    try:
        with open(os.path.join(run, "metrics.jsonl")) as f:
            return [json.loads(l) for l in f if l.strip().endswith("}")]
    except (OSError, ValueError):
        return []


def last_step(run: str) -> int:
    ms = read_metrics(run)
    return ms[-1]["step"] if ms else 0


def score_files(data: str) -> "list[tuple[str, str, float]]":
    """(language, token file, weight) of the final scoring: each language's validation file weighted by its share
    of the training tokens (stats.json train_by_lang) where the corpus has them all, else val.tok alone."""
    try:
        with open(os.path.join(data, "stats.json")) as f:
            by_lang = json.load(f).get("train_by_lang") or {}
    except (OSError, ValueError):
        by_lang = {}
    files = [(lang, os.path.join(data, f"val.{lang}.tok"), float(s.get("tokens", 0))) for lang, s in sorted(by_lang.items())]
    total = sum(w for _, _, w in files)
    if not files or total <= 0 or not all(os.path.isfile(p) for _, p, _ in files):
        return [("all", os.path.join(data, "val.tok"), 1.0)]
    return [(lang, p, w / total) for lang, p, w in files]


# SCORE scores model directories on token files, every window of each file (windows of T+1 tokens at k*T, as the
# trainer's validation and Go's data.NumWindows), 64 windows a forward pass, on one device; prints
# {"MODEL": {"FILE": mean loss}}. Run with the trainer's interpreter: DEVICE FILE... -- MODEL...
SCORE = r"""
import json, sys, torch
from smallinit_torch.data import num_windows, open_tokens
from smallinit_torch.model import load_model
a = sys.argv[1:]
device, files, models = torch.device(a[0]), a[1:a.index("--")], a[a.index("--") + 1:]
out = {}
with torch.no_grad():
    for md in models:
        c, m = load_model(md, torch.float32)
        m = m.to(device).eval()
        T, res = c.max_position_embeddings, {}
        for f in files:
            toks = open_tokens(f, c.vocab_size)
            n, s = num_windows(len(toks), T), torch.zeros((), dtype=torch.float64, device=device)
            for k0 in range(0, n, 64):
                ks = list(range(k0, min(k0 + 64, n)))
                x, y = toks.windows(ks, T, device)
                s += m(x, y)[1].double() * len(ks)
            res[f] = float(s) / max(n, 1)
        out[md] = res
        del m
print(json.dumps(out))
"""


def score_runs(py: str, env: dict, device: str, finals: "dict[str, str]", files, timeout: float) -> "tuple[dict, str]":
    """Each finished run's scores ({name: {"mix": L, lang: L_lang, ...}}) and "" or why scoring failed."""
    if not finals:
        return {}, ""
    cmd = [py, "-c", SCORE, device] + [p for _, p, _ in files] + ["--"] + list(finals.values())
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=max(timeout, 5))
    except subprocess.TimeoutExpired:
        return {}, f"the final scoring did not finish in {max(timeout, 5):.0f} s"
    if r.returncode != 0:
        return {}, "the final scoring failed: " + ((r.stderr.strip().splitlines() or ["no output"])[-1])
    got = json.loads(r.stdout)
    out = {}
    for name, md in finals.items():
        per = {lang: got[md][p] for lang, p, _ in files}
        out[name] = dict(per, mix=sum(w * got[md][p] for _, p, w in files))
    return out, ""


def preflight(py: "str | None", device: str, precision: str, env: dict) -> "tuple[str, dict]":
    """The interpreter that imports torch and smallinit_torch and sees device (python -m smallinit_torch preflight),
    and its probe; else SystemExit with one line naming what to fix. bf16 where the probe finds bf16 sums is refused."""
    cands = [py] if py else [sys.executable, "/usr/bin/python3"]
    whys = []
    for c in cands:
        try:
            r = subprocess.run([c, "-m", "smallinit_torch", "preflight", "--device", device], env=env,
                               capture_output=True, text=True, timeout=300)
        except OSError as e:
            whys.append(f"{c}: {e.strerror}")
            continue
        if r.returncode == 0:
            probe = json.loads(r.stdout)
            if precision == "bf16" and probe["bf16"]:
                raise SystemExit(f"h1-replica: --precision bf16 on {probe['device']}: {probe['bf16']}")
            return c, probe
        last = (r.stderr.strip().splitlines() or ["no output"])[-1]
        if r.returncode == 2:  # the device, not the interpreter
            raise SystemExit(f"h1-replica: {c}: {last.removeprefix('smallinit_torch: ')}")
        whys.append(f"{c}: {last}")
    raise SystemExit("h1-replica: no interpreter imports torch and smallinit_torch (" + "; ".join(whys) +
                     "): set PYTHON to one that does")


def plan(todo: "list[dict]", steps_arg: int, tokens_per_param: float, train_tokens: int) -> "list[dict]":
    """Size every arm (params, steps, tokens, epochs of the training file) and mark those past one epoch refused."""
    for arm in todo:
        c = model_config(arm["width"])
        n = non_embedding_params(c)
        steps = steps_arg or math.ceil(tokens_per_param * n / (BATCH * c["max_position_embeddings"]))
        arm.update(params=n, steps=steps, tokens=steps * BATCH * c["max_position_embeddings"])
        arm["epochs"] = arm["tokens"] / max(train_tokens, 1)
        if arm["epochs"] > 1:
            arm["status"] = f"not started: {arm['epochs']:.2f} epochs of the training file (more than 1)"
    return todo


def print_plan(todo, data_what, train_tokens, a) -> None:
    print(f"h1-replica plan: {data_what}, {train_tokens} training tokens; {a.tokens_per_param:g} tokens per "
          f"non-embedding parameter, batch {BATCH} x 128, precision {a.precision}, device {a.device}, {a.minutes:g} minutes")
    for arm in todo:
        print(f"  {arm['name']:24s} params {arm['params']:>8d}  steps {arm['steps']:>6d}  tokens {arm['tokens']:>9d}  "
              f"epochs {arm['epochs']:.2f}" + (f"  -- {arm['status']}" if arm.get("status") else ""), flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.environ.get("DATA") or None,
                    help="prepared data directory, the bilingual corpus (required but for a --steps smoke run)")
    ap.add_argument("--out", default=os.environ.get("OUT") or "h1-replica-out", help="where the summary and tarball go ($OUT)")
    ap.add_argument("--device", default="cuda", help="the trainer's --device (cuda; cpu for the smoke test)")
    ap.add_argument("--minutes", type=float, default=7.0, help="wall-time budget of the whole command")
    ap.add_argument("--probe-seconds", type=float, default=30.0)
    ap.add_argument("--tokens-per-param", type=float, default=20.0)
    ap.add_argument("--steps", type=int, default=0, help="steps per run instead of the tokens-per-parameter horizon (smoke)")
    ap.add_argument("--only", type=int, default=0, help="run only the first N arms by priority (smoke)")
    ap.add_argument("--no-256", action="store_true", help="leave out the width-256 pair")
    ap.add_argument("--precision", default="f32", choices=("f32", "bf16"),
                    help="f32 (TF32 matmuls on CUDA; the Go runs' numerics) or bf16 autocast")
    ap.add_argument("--plan", action="store_true", help="print the plan (runs, steps, epochs) and exit")
    ap.add_argument("--compile", action="store_true", help="pass --compile to every run (torch >= 2)")
    a = ap.parse_args(argv)
    t_start = time.time()
    end_by = t_start + a.minutes * 60 - 10  # the summary and tarball need a few seconds
    deadline = end_by - 15 - min(30.0, a.minutes * 6)  # and the final scoring: torch's start, under 1 s a model on a GPU
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.path.join(root, "python") + (":" + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""),
               OMP_NUM_THREADS="1")
    py, probe_dev = (None, None) if a.plan else preflight(os.environ.get("PYTHON"), a.device, a.precision, env)
    work = tempfile.mkdtemp(prefix="h1-replica-")
    data, data_what = find_data(a.data, root, work, smoke=a.steps > 0)
    train_tokens = token_count(os.path.join(data, "train.tok"))
    todo = arms(not a.no_256)
    if a.only:
        todo = todo[:a.only]
    todo = plan(todo, a.steps, a.tokens_per_param, train_tokens)
    print_plan(todo, data_what, train_tokens, a)
    if a.plan:
        shutil.rmtree(work, ignore_errors=True)
        return 0
    print(f"h1-replica: {py}, torch {probe_dev['torch']}, device {probe_dev['device']} ({probe_dev['device_name']})", flush=True)
    if not any(not arm.get("status") for arm in todo):
        shutil.rmtree(work, ignore_errors=True)
        raise SystemExit("h1-replica: every run would see more than one epoch of the training file: pass a larger --data")
    procs, skipped = {}, [arm for arm in todo if arm.get("status")]
    for arm in todo:
        if arm.get("status"):
            continue
        c = model_config(arm["width"])
        mdir, run = os.path.join(work, "models", arm["name"]), os.path.join(work, "runs", arm["name"])
        os.makedirs(mdir)
        with open(os.path.join(mdir, "config.json"), "w") as f:
            json.dump(c, f, indent=2)
        cfg = os.path.join(work, "models", arm["name"] + ".toml")
        with open(cfg, "w") as f:
            f.write(run_toml(arm, data, arm["steps"], {"precision": a.precision}))
        log = open(os.path.join(work, "models", arm["name"] + ".log"), "w")
        cmd = [py, "-m", "smallinit_torch", "train", "--model", mdir, "--config", cfg, "--out", run,
               "--device", a.device, "--quiet"] + (["--compile"] if a.compile else [])
        procs[arm["name"]] = (subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT), log, run, arm)
        arm["status"] = "running"
    print(f"h1-replica: {len(procs)} runs on {a.device}, data: {data_what} ({train_tokens} training tokens)", flush=True)

    def alive():
        return [k for k, (p, _, _, _) in procs.items() if p.poll() is None]

    def stop(name, why):
        p, _, run, arm = procs[name]
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            arm["status"] = why

    # the throughput probe: from the moment every run has logged once (or a minute has passed)
    probe = {}
    while alive() and time.time() < deadline and time.time() - t_start < 60:
        if all(last_step(procs[k][2]) > 0 for k in alive()):
            break
        time.sleep(0.5)
    s0, t0 = {k: last_step(procs[k][2]) for k in procs}, time.time()
    while alive() and time.time() < min(deadline, t0 + a.probe_seconds):
        time.sleep(0.5)
    s1, t1 = {k: last_step(procs[k][2]) for k in procs}, time.time()
    running = alive()
    for k in procs:
        probe[k] = (s1[k] - s0[k]) / max(t1 - t0, 1e-9)
    for k in running:  # no step logged during the probe: take the median rate of its width, else keep it
        if probe[k] <= 0:
            same = sorted(probe[j] for j in running if probe[j] > 0 and procs[j][3]["width"] == procs[k][3]["width"])
            probe[k] = same[len(same) // 2] if same else math.inf
    if running:
        left = deadline - time.time()
        keep = list(running)
        n0 = len(running)

        def eta(ks):  # the GPU's throughput shared evenly among the runs kept
            return max(((procs[k][3]["steps"] - s1[k]) / (probe[k] * n0 / len(ks)) for k in ks), default=0)
        order = [arm["name"] for arm in todo if arm["name"] in keep]
        while len(keep) > 1 and eta(keep) > left:
            victim = next(k for k in reversed(order) if k in keep)
            keep.remove(victim)
            stop(victim, f"dropped by the throughput probe at step {s1[victim]}")
        print(f"h1-replica: probe {t1 - t0:.0f} s: steps/s " + ", ".join(f"{k} {probe[k]:.1f}" for k in running)
              + f"; keeping {len(keep)} of {len(running)} (estimated {eta(keep):.0f} s of {left:.0f} s left)", flush=True)
    while alive() and time.time() < deadline:
        time.sleep(1)
    for k in alive():
        stop(k, "cut at the deadline")
    end = time.time() + 20
    while alive() and time.time() < end:
        time.sleep(0.5)
    for k in alive():
        procs[k][0].kill()
        procs[k][3]["status"] = "killed at the deadline"
    for k, (p, log, run, arm) in procs.items():
        p.wait()
        log.close()
        if arm["status"] == "running":
            arm["status"] = "done" if p.returncode == 0 else f"failed (exit {p.returncode}): {last_log_line(log.name)}"
        elif p.returncode == 0 and os.path.isfile(os.path.join(run, "final", "config.json")):
            arm["status"] = "done"  # it finished before the SIGTERM reached it
    files = score_files(data)
    finals = {k: os.path.join(run, "final") for k, (p, log, run, arm) in procs.items() if arm["status"] == "done"}
    scores, why = score_runs(py, env, a.device, finals, files, end_by - time.time())
    if why:
        print(f"h1-replica: {why}; H1 falls back to the runs' last validation loss (64 windows of val.tok)", flush=True)
    return summarise(a, procs, probe, data_what, train_tokens, work, time.time() - t_start, skipped, probe_dev,
                     scores=scores, files=files, score_note=why)


def last_log_line(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            ls = [l.strip() for l in f if l.strip()]
    except OSError:
        return ""
    return ls[-1] if ls else "(its log is empty)"


def summarise(a, procs, probe, data_what, train_tokens, work, wall, skipped=(), probe_dev=None, scores=None, files=(),
              score_note="") -> int:
    scores = scores or {}
    rows = []
    for k, (p, log, run, arm) in procs.items():
        ms = read_metrics(run)
        val = [m for m in ms if m.get("val_loss") is not None]
        tps = [m["tokens_per_s"] for m in ms if m.get("tokens_per_s")]
        sc = scores.get(k)
        rows.append(dict(arm, steps_done=ms[-1]["step"] if ms else 0, val_loss=val[-1]["val_loss"] if val else None,
                         val_step=val[-1]["step"] if val else None, train_loss=next((m["loss"] for m in reversed(ms) if "loss" in m), None),
                         tokens_per_s=sum(tps[1:]) / len(tps[1:]) if len(tps) > 1 else (tps[0] if tps else None),
                         probe_steps_per_s=probe[k] if math.isfinite(probe.get(k, math.nan)) else None,
                         score=sc, h1_loss=sc["mix"] if sc else (val[-1]["val_loss"] if val else None),
                         h1_loss_of="the whole split at the training mix" if sc else "the last validation loss (64 windows)"))
    # H1 at each matched rate: the paired gain L(γ=0.5) − L(γ=1) per seed, width 128, complete runs only, on the
    # final scoring's training-mix loss (else, where scoring failed, the last validation loss, marked)
    h1 = []
    for lr in sorted({r["lr"] for r in rows if r["width"] == 128}):
        gains, of = [], set()
        for seed in sorted({r["seed"] for r in rows}):
            pair = {r["gamma"]: r for r in rows if r["width"] == 128 and r["lr"] == lr and r["seed"] == seed}
            if 0.5 in pair and 1.0 in pair and all(pair[g]["status"] == "done" and pair[g]["h1_loss"] is not None for g in pair):
                gains.append(pair[0.5]["h1_loss"] - pair[1.0]["h1_loss"])
                of |= {pair[g]["h1_loss_of"] for g in pair}
        if gains:
            h1.append({"lr": lr, "seeds": len(gains), "gains": gains, "mean_gain": sum(gains) / len(gains), "loss": " and ".join(sorted(of))})
    rows += [dict(arm, steps_done=0, val_loss=None, val_step=None, train_loss=None, tokens_per_s=None,
                  probe_steps_per_s=None, score=None, h1_loss=None, h1_loss_of=None) for arm in skipped]
    agg = sum(r["tokens_per_s"] or 0 for r in rows if r["status"] == "done")
    kinds = {"done": 0, "cut": 0, "dropped": 0, "failed": 0, "not started": 0, "killed": 0}
    for r in rows:
        kinds[next((k for k in kinds if r["status"].startswith(k)), "failed")] += 1
    doc = {"device": a.device, "data": data_what, "train_tokens": train_tokens, "wall_s": wall, "minutes": a.minutes,
           "tokens_per_param": a.tokens_per_param, "precision": a.precision, "runs": rows, "h1_matched_lr": h1,
           "aggregate_tokens_per_s_of_finished_runs": agg, "counts": kinds, "torch": (probe_dev or {}).get("torch"),
           "device_name": (probe_dev or {}).get("device_name"),
           "scoring": {"files": [{"lang": l, "file": os.path.basename(p), "weight": w} for l, p, w in files], "failed": score_note}}
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(doc, f, indent=2)
    md = [f"# H1 replica (width 128, {a.tokens_per_param:g} tokens per non-embedding parameter)", "",
          f"Device {a.device}, precision {a.precision}, wall {wall:.0f} s of a {a.minutes:g}-minute budget. Data: {data_what}, "
          f"{train_tokens} training tokens.", "",
          "Runs: " + ", ".join(f"{v} {k}" for k, v in kinds.items() if v) + ".", "",
          "Final scoring: " + (", ".join(f"{os.path.basename(p)} (weight {w:.3f})" for _, p, w in files) if files else "none")
          + ("; " + score_note if score_note else "") + ".", "",
          "| run | params | steps | done | epochs | status | val loss (at step) | scored: mix" + "".join(f" / {l}" for l, _, _ in files)
          + " | tokens/s |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        vl = f"{r['val_loss']:.4f} ({r['val_step']})" if r["val_loss"] is not None else "-"
        sc = " / ".join(f"{r['score'][k]:.4f}" for k in ["mix"] + [l for l, _, _ in files]) if r.get("score") else "-"
        tps = f"{r['tokens_per_s']:.0f}" if r["tokens_per_s"] else "-"
        md.append(f"| {r['name']} | {r['params']} | {r['steps']} | {r['steps_done']} | {r['epochs']:.2f} | {r['status']} | {vl} | {sc} | {tps} |")
    md += ["", "H1 at matched learning rates (paired gain L(γ=0.5) − L(γ=1) per seed, finished runs only; positive: γ = 1 better):", ""]
    md += [f"- lr {h['lr']:g}: mean {h['mean_gain']:+.4f} over {h['seeds']} seed(s) ({', '.join(f'{g:+.4f}' for g in h['gains'])}), on {h['loss']}" for h in h1] or ["- no finished pair"]
    md += ["", f"Sum of the finished runs' mean tokens/s (running concurrently): {agg:.0f}.", ""]
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write("\n".join(md))
    with tarfile.open(os.path.join(a.out, "runs.tar.gz"), "w:gz") as tar:
        for k, (p, log, run, arm) in procs.items():
            for name in ("config.toml", "init.json", "pytorch.json", "metrics.jsonl"):
                path = os.path.join(run, name)
                if os.path.isfile(path):
                    tar.add(path, arcname=f"{k}/{name}")
            tar.add(log.name, arcname=f"{k}/train.log")
            if arm["status"].startswith(("cut", "killed", "dropped")):  # kept, so that it can be resumed
                steps = sorted(n for n in os.listdir(os.path.join(run, "checkpoints")) if n.startswith("step-")) \
                    if os.path.isdir(os.path.join(run, "checkpoints")) else []
                if steps:
                    tar.add(os.path.join(run, "checkpoints", steps[-1]), arcname=f"{k}/checkpoints/{steps[-1]}")
    shutil.rmtree(work, ignore_errors=True)
    print("\n".join(md), flush=True)
    return 0 if any(r["status"] == "done" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
