#!/usr/bin/env bash
# Side-by-side training speed of smallinit (float32 and bf16 matmuls) and PyTorch on the same presets and
# machine, alternating the three so that all see the same machine state, and printing the median tokens/s of
# each and their ratios. bf16 needs AVX512_BF16 (skipped elsewhere). PyTorch's bench has no bf16 mode; its best
# setting here is float32, which the script checks on the largest training matmul (4096×1408×512, float32 and
# bfloat16 alternating, median of 7) and prints.
#
#   scripts/bench-vs-pytorch.sh [rounds] [presets...]      (default: 3 rounds of tiny small medium)
#   STEPS=4 scripts/bench-vs-pytorch.sh ...                  (timed steps per run; default 10, medium 5)
#
# PyTorch runs python/torchref.py bench at its best settings (OMP_WAIT_POLICY=PASSIVE, 2 threads, fused
# attention, foreach AdamW, OPENBLAS_CORETYPE from the CPU flags). Debian's python3-torch calls the system
# libblas.so.3: install OpenBLAS (apt-get install libopenblas0-pthread) or PyTorch runs on the slow reference
# BLAS; the last line prints which BLAS and which OpenBLAS kernel PyTorch ran on.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
shift || true
presets=${*:-tiny small medium}
go build -o /tmp/smallinit-bench ./cmd/smallinit
out=$(mktemp -d)
for p in $presets; do
  steps=${STEPS:-10}; [ "$p" = medium ] && steps=${STEPS:-5}
  for r in $(seq "$rounds"); do
    /tmp/smallinit-bench bench --preset "$p" --steps "$steps" --json >>"$out/go-$p.jsonl"
    if grep -qw avx512_bf16 /proc/cpuinfo; then
      /tmp/smallinit-bench bench --preset "$p" --steps "$steps" --precision bf16 --json >>"$out/bf16-$p.jsonl"
    fi
    /usr/bin/python3 python/torchref.py bench --preset "$p" --steps "$steps" --warmup 2 --json >>"$out/torch-$p.jsonl" 2>/dev/null
  done
done
OMP_WAIT_POLICY=PASSIVE OPENBLAS_CORETYPE=$(grep -qw avx512f /proc/cpuinfo && echo SkylakeX || echo Haswell) \
  /usr/bin/python3 - >"$out/torch-matmul.txt" <<'PY'
import time, statistics, torch
torch.set_num_threads(2)
ops = {str(dt).split(".")[1]: (torch.randn(4096, 1408).to(dt), torch.randn(1408, 512).to(dt))
       for dt in (torch.float32, torch.bfloat16)}
ts = {k: [] for k in ops}
for r in range(8):  # alternating, the first round untimed
    for k, (a, b) in ops.items():
        t0 = time.perf_counter(); a @ b
        if r:
            ts[k].append(time.perf_counter() - t0)
res = {k: 2 * 4096 * 1408 * 512 / statistics.median(v) / 1e9 for k, v in ts.items()}
print("PyTorch 4096x1408x512 matmul GFLOP/s: " + ", ".join(f"{k} {v:.0f}" for k, v in res.items()))
PY
/usr/bin/python3 - "$out" $presets <<'PY'
import json, os, statistics, sys
out, presets = sys.argv[1], sys.argv[2:]
def med(p, key):
    f = f"{out}/{p}.jsonl"
    if not os.path.exists(f):
        return float("nan")
    return statistics.median(json.loads(l)[key] for l in open(f))
print(f"{'preset':8} {'f32 tok/s':>10} {'GFLOP/s':>8} {'bf16 tok/s':>11} {'GFLOP/s':>8} {'PyTorch tok/s':>14} {'GFLOP/s':>8}"
      f" {'bf16/f32':>9} {'f32/torch':>10} {'bf16/torch':>11}")
for p in presets:
    g, b, t = (med(f"{k}-{p}", "tokens_per_s") for k in ("go", "bf16", "torch"))
    gf, bf, tf = (med(f"{k}-{p}", "model_gflops") for k in ("go", "bf16", "torch"))
    print(f"{p:8} {g:10.0f} {gf:8.1f} {b:11.0f} {bf:8.1f} {t:14.0f} {tf:8.1f} {b/g:9.2f} {g/t:10.2f} {b/t:11.2f}")
th = json.loads(open(f"{out}/torch-{presets[-1]}.jsonl").readline())
print("PyTorch", th["torch"], "BLAS:", th["blas"])
print(open(f"{out}/torch-matmul.txt").read().strip())
PY
