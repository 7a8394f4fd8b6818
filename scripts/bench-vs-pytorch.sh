#!/usr/bin/env bash
# Side-by-side training speed of smallinit (float32 and bf16 matmuls) and PyTorch on the same presets and
# machine, alternating the three so that all see the same machine state, and printing the median tokens/s of
# each and their ratios. The "auto" column is the precision `train.precision = "auto"` chooses on this machine
# for the preset (`smallinit bench --precision auto`: its own timing probe, run once per preset before the
# rounds) with that precision's median from the rounds. bf16 needs AVX2+FMA (VDPBF16PS where the CPU has
# AVX512_BF16; SMALLINIT_KERNEL=avx2 forces the AVX2 path, a stand-in for an AVX2-only CPU). PyTorch runs in float32 and in bf16 (its
# mixed precision: the forward under torch.autocast("cpu", bfloat16)); its best setting per preset is whichever
# of the two is faster, and the ratios are against that.
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
out=$(mktemp -d)
bin="$out/smallinit-bench" # a private binary: other checkouts may run this script at the same time
go build -o "$bin" ./cmd/smallinit
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for p in $presets; do
  steps=${STEPS:-10}; [ "$p" = medium ] && steps=${STEPS:-5}
  "$bin" bench --preset "$p" --steps 1 --warmup 0 --precision auto --json >"$out/auto-$p.json"
  for r in $(seq "$rounds"); do
    "$bin" bench --preset "$p" --steps "$steps" --json >>"$out/go-$p.jsonl"
    if grep -qw avx2 /proc/cpuinfo; then
      "$bin" bench --preset "$p" --steps "$steps" --precision bf16 --json >>"$out/bf16-$p.jsonl"
    fi
    /usr/bin/python3 python/torchref.py bench --preset "$p" --steps "$steps" --warmup 2 --json >>"$out/torch-$p.jsonl" 2>/dev/null
    /usr/bin/python3 python/torchref.py bench --preset "$p" --steps "$steps" --warmup 2 --precision bf16 --json >>"$out/torchbf16-$p.jsonl" 2>/dev/null
  done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
/usr/bin/python3 - "$out" "$load0" "$load1" $presets <<'PY'
import json, os, re, statistics, sys, time
out, load0, load1, presets = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
flags = sorted(set(re.findall(r"\b(avx512f|avx512_bf16|avx512_vp2intersect|amx_\w+)\b", open("/proc/cpuinfo").read())))
cpu = json.loads(open(f"{out}/go-{presets[0]}.jsonl").readline())["cpu"]
print(f"{time.strftime('%Y-%m-%d')}, {cpu}, flags {' '.join(flags)}; load average {load0} before, {load1} after")
def med(p, key):
    f = f"{out}/{p}.jsonl"
    if not os.path.exists(f):
        return float("nan")
    return statistics.median(json.loads(l)[key] for l in open(f))
print("tokens/s (medians); PyTorch best = the faster of its float32 and bf16-autocast runs")
print(f"{'preset':8} {'f32':>8} {'bf16':>8} {'auto':>11} {'torch f32':>10} {'torch bf16':>11} {'torch best':>11}"
      f" {'bf16/f32':>9} {'f32/best':>9} {'bf16/best':>10} {'auto/best':>10}")
for p in presets:
    g, b, t, tb = (med(f"{k}-{p}", "tokens_per_s") for k in ("go", "bf16", "torch", "torchbf16"))
    best, which = max((t, "f32"), (tb, "bf16"), key=lambda x: -1 if x[0] != x[0] else x[0])
    choice = json.load(open(f"{out}/auto-{p}.json"))["precision"]
    a = g if choice == "f32" else b
    print(f"{p:8} {g:8.0f} {b:8.0f} {a:6.0f} {choice:>4} {t:10.0f} {tb:11.0f} {best:7.0f} {which:>3}"
          f" {b/g:9.2f} {g/best:9.2f} {b/best:10.2f} {a/best:10.2f}")
th = json.loads(open(f"{out}/torch-{presets[-1]}.jsonl").readline())
print("PyTorch", th["torch"], "BLAS:", th["blas"])
PY
