#!/usr/bin/env bash
# Job packing on this machine: aggregate training tokens/s of one run on all (2) threads against two runs on 1
# thread each at the same time, per preset and precision, alternating the two arrangements round by round so
# that both see the same machine state; prints medians and the packing gain (two 1-thread runs / one 2-thread run).
#
#   scripts/bench-packing.sh [rounds] [models...]      (default: 3 rounds of tiny small, f32 and bf16)
#
# A model is a preset, optionally with model config overrides after a colon: tiny:hidden_size=64 is the tiny
# preset at width 64 (the reproduction's LR-sweep width), tiny:hidden_size=64,num_hidden_layers=2 likewise.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
shift || true
presets=${*:-tiny small}
precisions="f32"
grep -qw avx512_bf16 /proc/cpuinfo && precisions="f32 bf16"
go build -o /tmp/smallinit-pack ./cmd/smallinit
out=$(mktemp -d)
for p in $presets; do
  args=(--preset "${p%%:*}")
  if [[ $p == *:* ]]; then
    IFS=, read -ra sets <<<"${p#*:}"
    for s in "${sets[@]}"; do args+=(--set "$s"); done
  fi
  for prec in $precisions; do
    for r in $(seq "$rounds"); do
      /tmp/smallinit-pack bench "${args[@]}" --steps 8 --threads 2 --precision "$prec" --json >>"$out/one-$p-$prec.jsonl"
      /tmp/smallinit-pack bench "${args[@]}" --steps 8 --threads 1 --precision "$prec" --json >"$out/a.json" &
      /tmp/smallinit-pack bench "${args[@]}" --steps 8 --threads 1 --precision "$prec" --json >"$out/b.json"
      wait
      /usr/bin/python3 -c 'import json,sys; print(json.dumps({"tokens_per_s": sum(json.load(open(f))["tokens_per_s"] for f in sys.argv[1:])}))' \
        "$out/a.json" "$out/b.json" >>"$out/two-$p-$prec.jsonl"
    done
  done
done
/usr/bin/python3 - "$out" "$presets" "$precisions" <<'PY'
import json, statistics, sys
out, presets, precs = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
print(f"{'model':24} {'prec':5} {'1 run x 2 threads':>18} {'2 runs x 1 thread':>18} {'gain':>6}   (aggregate tokens/s, medians)")
for p in presets:
    for q in precs:
        one = statistics.median(json.loads(l)["tokens_per_s"] for l in open(f"{out}/one-{p}-{q}.jsonl"))
        two = statistics.median(json.loads(l)["tokens_per_s"] for l in open(f"{out}/two-{p}-{q}.jsonl"))
        print(f"{p:24} {q:5} {one:18.0f} {two:18.0f} {two/one:6.2f}")
PY
