#!/usr/bin/env bash
# Side-by-side training speed of smallinit and PyTorch on the same presets and machine, alternating the two
# so that both see the same machine state, and printing the median tokens/s of each and their ratio.
#
#   scripts/bench-vs-pytorch.sh [rounds] [presets...]      (default: 3 rounds of tiny small medium)
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
  steps=10; [ "$p" = medium ] && steps=5
  for r in $(seq "$rounds"); do
    /tmp/smallinit-bench bench --preset "$p" --steps "$steps" --json >>"$out/go-$p.jsonl"
    /usr/bin/python3 python/torchref.py bench --preset "$p" --steps "$steps" --warmup 2 --json >>"$out/torch-$p.jsonl" 2>/dev/null
  done
done
/usr/bin/python3 - "$out" $presets <<'PY'
import json, statistics, sys
out, presets = sys.argv[1], sys.argv[2:]
print(f"{'preset':8} {'smallinit tok/s':>16} {'GFLOP/s':>8} {'PyTorch tok/s':>14} {'GFLOP/s':>8} {'ratio':>6}")
for p in presets:
    go = [json.loads(l) for l in open(f"{out}/go-{p}.jsonl")]
    th = [json.loads(l) for l in open(f"{out}/torch-{p}.jsonl")]
    g, t = statistics.median(x["tokens_per_s"] for x in go), statistics.median(x["tokens_per_s"] for x in th)
    gf, tf = statistics.median(x["model_gflops"] for x in go), statistics.median(x["model_gflops"] for x in th)
    print(f"{p:8} {g:16.0f} {gf:8.1f} {t:14.0f} {tf:8.1f} {g/t:6.2f}")
print("PyTorch", th[0]["torch"], "BLAS:", th[0]["blas"])
PY
