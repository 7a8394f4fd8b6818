"""The GPU check of the PyTorch trainer, in under 5 minutes on one GPU (scripts/gpu/check.sh runs it). Each check
prints one line, PASS or FAIL with its numbers, and the summary goes to $OUT/check.json:

  1. cpu-vs-cuda-f32: 20 steps of the same run (a width-128 model, batch 8 x 128, the same step-0 weights and
     batches) on the CPU and on the GPU at f32 with TF32 off (--no-tf32): per-step losses within 1e-4 relative;
     and gamma_init_'s draws on the GPU equal the CPU's bit for bit;
  2. bf16: the same 20 steps under bf16 autocast where the one-matmul probe finds float32 accumulation (else it is
     refused with the probe's reason, which passes); losses finite and within 2e-2 of f32's;
  3. resume-across-adamw: 20 steps stopped at step 10 with the fused AdamW (foreach where there is no fused one)
     and resumed with the foreach one (single): losses equal the uninterrupted run's within 1e-5 relative;
  4. out-of-memory: a batch far past the GPU's memory stops with one line `smallinit_torch: ...` and exit 1;
  5. sigterm: SIGTERM after the first logged step: exit 143, a checkpoint, and --resume finishes the run with the
     uninterrupted run's losses;
  6. throughput: tokens/s of the fast step on the width-128 and width-256 models, with the launch count (kernels a
     step, from the profiler where it works) that bounds a small model's step by the host.

    bash scripts/gpu/check.sh [--device cuda] [--out DIR]      # --device cpu: the same checks CPU against CPU
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402

from smallinit_torch.data import write_tokens  # noqa: E402
from smallinit_torch.device import adamw_kind, bf16_problem, parse_device  # noqa: E402

T, BATCH, STEPS, LAYERS, VOCAB, WIDTHS = 128, 8, 20, 4, 4096, (128, 256)


def smoke() -> None:
    """--smoke: a model small enough to run every check on a CPU in a few minutes (the script's own test)."""
    global T, BATCH, LAYERS, VOCAB, WIDTHS
    T, BATCH, LAYERS, VOCAB, WIDTHS = 16, 4, 2, 256, (32, 64)


def model_config(width: int) -> dict:
    ffn = (8 * width // 3 + 63) // 64 * 64
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": VOCAB, "hidden_size": width,
            "intermediate_size": ffn, "num_hidden_layers": LAYERS, "num_attention_heads": 4, "num_key_value_heads": 4,
            "max_position_embeddings": T, "rms_norm_eps": 1e-12, "rope_theta": 10000.0, "tie_word_embeddings": False,
            "hidden_act": "silu", "attn_gate": "elementwise", "norm": "rmsnorm"}


class Checker:
    def __init__(self, device: str, work: str, py: str) -> None:
        self.device, self.work, self.py, self.results = device, work, py, []
        self.env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "4"))
        g = torch.Generator().manual_seed(0)
        self.data = os.path.join(work, "data")
        os.makedirs(self.data)
        write_tokens(os.path.join(self.data, "train.tok"), torch.randint(0, VOCAB, (200_000,), generator=g).tolist())
        write_tokens(os.path.join(self.data, "val.tok"), torch.randint(0, VOCAB, (20_000,), generator=g).tolist())
        self.models = {}

    def model(self, width: int) -> str:
        """A model directory with step-0 weights drawn on the CPU (both devices start from the same weights)."""
        if width not in self.models:
            d = os.path.join(self.work, f"model-{width}")
            os.makedirs(d)
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(model_config(width), f)
            self.models[width] = d
        return self.models[width]

    def config(self, name: str, steps: int = STEPS, batch: int = BATCH, precision: str = "f32", log: int = 1) -> str:
        p = os.path.join(self.work, name + ".toml")
        with open(p, "w") as f:
            f.write(f"seed = 0\n[schedule]\nlr = 3e-3\nwarmup_steps = 4\n[data]\ntrain = {json.dumps(self.data + '/train.tok')}\n"
                    f"val = {json.dumps(self.data + '/val.tok')}\n[train]\nbatch_size = {batch}\nsteps = {steps}\n"
                    f"log_interval = {log}\neval_interval = 0\ncheckpoint_interval = 5\nkeep_checkpoints = 2\n"
                    f"diagnostics_interval = 0\nthreads = 0\nprecision = \"{precision}\"\n")
        return p

    def train(self, name: str, *flags: str, device: "str | None" = None, cfg: "str | None" = None, width: int = 0,
              resume: bool = False, timeout: float = 240, width_: int = 0) -> "tuple[subprocess.CompletedProcess, str]":
        out = os.path.join(self.work, name)
        args = ["--resume", out] if resume else ["--model", self.model(width or WIDTHS[0]), "--config", cfg or self.config(name), "--out", out]
        r = subprocess.run([self.py, "-m", "smallinit_torch", "train", *args, "--device", device or self.device, "--quiet", *flags],
                           env=self.env, capture_output=True, text=True, timeout=timeout)
        return r, out

    def losses(self, out: str) -> "list[float]":
        with open(os.path.join(out, "metrics.jsonl")) as f:
            return [m["loss"] for m in map(json.loads, f) if "loss" in m]

    def record(self, name: str, ok: bool, what: str) -> None:
        self.results.append({"check": name, "pass": ok, "detail": what})
        print(f"{'PASS' if ok else 'FAIL'} {name}: {what}", flush=True)

    def run(self, name, f) -> None:
        t0 = time.time()
        try:
            f()
        except Exception as e:  # a check that crashes is a failed check, and the others still run
            self.record(name, False, f"{type(e).__name__}: {e}")
        self.results[-1]["seconds"] = round(time.time() - t0, 1) if self.results else None

    # -- the checks --

    def cpu_vs_device(self) -> None:
        from smallinit_torch.init import gamma_init_
        from smallinit_torch.model import Llama, Config
        c = Config(model_config(WIDTHS[0]))
        a, b = Llama(c), Llama(c).to(parse_device(self.device))
        gamma_init_(a, gamma=1.0, seed=3)
        gamma_init_(b, gamma=1.0, seed=3)
        same = all(torch.equal(p.cpu(), q.detach().cpu()) for p, q in zip(a.parameters(), b.parameters()))
        rc, outc = self.train("f32-cpu", device="cpu")
        rd, outd = self.train("f32-dev", "--no-tf32")
        if rc.returncode or rd.returncode:
            return self.record("cpu-vs-cuda-f32", False, (rc.stderr + rd.stderr).strip()[-400:])
        lc, ld = self.losses(outc), self.losses(outd)
        worst = max(abs(x - y) / abs(x) for x, y in zip(lc, ld))
        self.record("cpu-vs-cuda-f32", same and len(lc) == len(ld) == STEPS and worst <= 1e-4,
                    f"{len(ld)} steps, largest relative loss difference {worst:.2e} (bound 1e-4); gamma_init_ draws "
                    f"{'equal' if same else 'DIFFER'} on cpu and {self.device}")
        self.f32 = ld

    def bf16(self) -> None:
        why = bf16_problem(parse_device(self.device))
        r, out = self.train("bf16", cfg=self.config("bf16", precision="bf16"))
        if why:
            ok = r.returncode == 1 and "sums bf16 matmuls" in r.stderr
            return self.record("bf16", ok, f"refused, as it should be: {why}")
        if r.returncode:
            return self.record("bf16", False, r.stderr.strip()[-400:])
        lb = self.losses(out)
        worst = max(abs(x - y) for x, y in zip(lb, getattr(self, "f32", lb)))
        self.record("bf16", all(map(math.isfinite, lb)) and worst <= 2e-2,
                    f"{len(lb)} steps, largest |bf16 - f32| loss {worst:.2e} (bound 2e-2)")

    def resume_across_adamw(self) -> None:
        dev = parse_device(self.device)
        first = "fused" if adamw_kind(dev) == "fused" else "foreach"
        second = "foreach" if first == "fused" else "single"
        cfg = self.config("adamw")
        rw, whole = self.train("adamw-whole", "--adamw", first, cfg=cfg)
        r1, cut = self.train("adamw-cut", "--adamw", first, "--max-steps", "10", cfg=cfg)
        r2, _ = self.train("adamw-cut", "--adamw", second, resume=True)
        if rw.returncode or r1.returncode or r2.returncode:
            return self.record("resume-across-adamw", False, (rw.stderr + r1.stderr + r2.stderr).strip()[-400:])
        a, b = self.losses(whole), self.losses(cut)
        worst = max(abs(x - y) / abs(x) for x, y in zip(a, b))
        self.record("resume-across-adamw", len(a) == len(b) == STEPS and worst <= 1e-5,
                    f"{first} to step 10, then {second}: largest relative loss difference {worst:.2e} (bound 1e-5)")

    def out_of_memory(self) -> None:
        if parse_device(self.device).type != "cuda":
            return self.record("out-of-memory", True, "skipped: not a GPU")
        total = torch.cuda.get_device_properties(parse_device(self.device)).total_memory
        batch = 1 << max(10, math.ceil(math.log2(total / (T * VOCAB * 4 * 8))))  # logits alone several times the memory
        r, out = self.train("oom", cfg=self.config("oom", steps=2, batch=batch), width=WIDTHS[1])
        lines = r.stderr.strip().splitlines()
        ok = r.returncode == 1 and len(lines) == 1 and lines[0].startswith("smallinit_torch: ") and "memory" in lines[0]
        self.record("out-of-memory", ok, f"batch {batch}: exit {r.returncode}, {len(lines)} line(s): {lines[-1] if lines else ''}")

    def sigterm(self) -> None:
        cfg = self.config("term", steps=60 if T < 128 else 200, log=1)
        rw, whole = self.train("term-whole", cfg=cfg)
        out = os.path.join(self.work, "term")
        p = subprocess.Popen([self.py, "-m", "smallinit_torch", "train", "--model", self.model(WIDTHS[0]), "--config", cfg,
                              "--out", out, "--device", self.device, "--quiet"], env=self.env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 180
        while time.time() < deadline and p.poll() is None:
            if os.path.exists(os.path.join(out, "metrics.jsonl")) and os.path.getsize(os.path.join(out, "metrics.jsonl")) > 0:
                break
            time.sleep(0.05)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=120)
        cks = os.listdir(os.path.join(out, "checkpoints")) if os.path.isdir(os.path.join(out, "checkpoints")) else []
        r2, _ = self.train("term", resume=True)
        same = not rw.returncode and not r2.returncode and self.losses(whole) == self.losses(out)
        self.record("sigterm", p.returncode == 143 and bool(cks) and same,
                    f"exit {p.returncode} with checkpoint(s) {sorted(cks)}; resumed run's losses "
                    f"{'equal' if same else 'DIFFER from'} the uninterrupted run's")

    def throughput(self) -> None:
        parts = []
        for width in WIDTHS:
            r, out = self.train(f"speed-{width}", cfg=self.config(f"speed-{width}", steps=30 if T < 128 else 300, batch=16, log=10 if T < 128 else 50), width=width)
            if r.returncode:
                return self.record("throughput", False, r.stderr.strip()[-400:])
            with open(os.path.join(out, "metrics.jsonl")) as f:
                tps = [m["tokens_per_s"] for m in map(json.loads, f) if m.get("tokens_per_s")]
            parts.append(f"width {width}: {max(tps[1:] or tps):.0f} tokens/s")
        launches = kernel_launches(self.device)
        self.record("throughput", True, "; ".join(parts) + f"; {launches} a step at width {WIDTHS[0]} (batch 16)")


def kernel_launches(device: str) -> str:
    """Kernels one fast training step launches on the device (torch.profiler), in words."""
    dev = parse_device(device)
    if dev.type != "cuda":
        return "kernel launches not counted (not a GPU)"
    from smallinit_torch.model import Llama, Config
    m = Llama(Config(model_config(WIDTHS[0]))).to(dev)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, **({"fused": True} if adamw_kind(dev) == "fused" else {}))
    x = torch.randint(0, VOCAB, (16, T), device=dev)

    def step():
        _, loss = m(x, x)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        n = sum(1 for e in prof.events() if e.device_type.name == "CUDA")
        return f"{n} kernels"
    except Exception as e:  # a profiler without CUPTI
        return f"kernel launches not counted ({type(e).__name__})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", default=os.environ.get("OUT") or "gpu-check-out")
    ap.add_argument("--only", default="", help="comma-separated check names (default: all)")
    ap.add_argument("--smoke", action="store_true", help="a tiny model (the script's own test on a CPU)")
    a = ap.parse_args(argv)
    if a.smoke:
        smoke()
    try:
        dev = parse_device(a.device)
    except ValueError as e:
        print(f"check: {e}", file=sys.stderr)
        return 2
    print(f"check: {sys.executable}, torch {torch.__version__}, device {dev}"
          + (f" ({torch.cuda.get_device_name(dev)})" if dev.type == "cuda" else ""), flush=True)
    work = tempfile.mkdtemp(prefix="gpu-check-")
    c = Checker(a.device, work, sys.executable)
    checks = {"cpu-vs-cuda-f32": c.cpu_vs_device, "bf16": c.bf16, "resume-across-adamw": c.resume_across_adamw,
              "out-of-memory": c.out_of_memory, "sigterm": c.sigterm, "throughput": c.throughput}
    only = [n for n in a.only.split(",") if n]
    t0 = time.time()
    try:
        for name, f in checks.items():
            if not only or name in only:
                c.run(name, f)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    os.makedirs(a.out, exist_ok=True)
    doc = {"device": str(dev), "torch": torch.__version__, "seconds": round(time.time() - t0, 1), "checks": c.results}
    with open(os.path.join(a.out, "check.json"), "w") as f:
        json.dump(doc, f, indent=2)
    failed = [r["check"] for r in c.results if not r["pass"]]
    print(f"check: {len(c.results) - len(failed)} of {len(c.results)} passed in {doc['seconds']:.0f} s"
          + (f"; failed: {', '.join(failed)}" if failed else ""), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
