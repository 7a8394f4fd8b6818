#!/usr/bin/env bash
# Training throughput of the PyTorch trainer (python -m smallinit_torch train) beside smallinit's own trainer
# (smallinit train), smallinit bench and torchref.py bench, on the same preset, data and machine, alternating
# the four so that they see the same machine state; prints the median tokens/s of each.
#
#   scripts/bench-pytorch-trainer.sh [rounds] [presets...]      (default: 3 rounds of tiny small)
#
# Both trainers run 2 threads on the embedded corpus (vocabulary 4096) with the preset's batch, log every step
# and skip evaluation and checkpoints until the end; their tokens/s is the median over steps 3..12 of
# metrics.jsonl. OMP_WAIT_POLICY=PASSIVE and OPENBLAS_CORETYPE=SkylakeX are set for PyTorch (the bench sets
# them itself). The PyTorch trainer uses the reference attention and single-tensor AdamW (the ones the parity
# fixtures pin), not torchref.py bench's fused attention and foreach AdamW.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
shift || true
presets=${*:-tiny small}
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX} OMP_WAIT_POLICY=PASSIVE PYTHONPATH=$PWD/python
out=$(mktemp -d)
go build -o "$out/smallinit" ./cmd/smallinit
"$out/smallinit" data prepare --out "$out/data" --vocab 4096 >/dev/null
for p in $presets; do
  "$out/smallinit" init --preset "$p" --seed 1 --out "$out/m-$p" >/dev/null
  cat >"$out/$p.toml" <<TOML
seed = 1
[model]
preset = "$p"
[schedule]
warmup_steps = 2
[data]
train = "$out/data/train.tok"
[train]
steps = 12
log_interval = 1
eval_interval = 0
checkpoint_interval = 0
threads = 2
TOML
  for r in $(seq "$rounds"); do
    "$out/smallinit" bench --preset "$p" --steps 10 --json >>"$out/gobench-$p.jsonl"
    "$out/smallinit" train --config "$out/$p.toml" --out "$out/go-$p-$r" >/dev/null 2>&1
    /usr/bin/python3 python/torchref.py bench --preset "$p" --steps 10 --warmup 2 --json >>"$out/torchbench-$p.jsonl" 2>/dev/null
    /usr/bin/python3 -m smallinit_torch train --model "$out/m-$p" --config "$out/go-$p-$r/config.toml" --out "$out/py-$p-$r" --quiet
  done
done
/usr/bin/python3 - "$out" "$rounds" $presets <<'PY'
import json, statistics, sys
out, rounds, presets = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def trainer(kind, p):
    v = []
    for r in range(1, rounds + 1):
        ms = [json.loads(l) for l in open(f"{out}/{kind}-{p}-{r}/metrics.jsonl")]
        v += [m["tokens_per_s"] for m in ms if m.get("tokens_per_s") and m["step"] >= 3]
    return statistics.median(v)
def bench(kind, p):
    return statistics.median(json.loads(l)["tokens_per_s"] for l in open(f"{out}/{kind}-{p}.jsonl"))
print(f"{'preset':7} {'smallinit bench':>15} {'smallinit train':>15} {'torchref bench':>14} {'PyTorch trainer':>15} {'PyTorch trainer / smallinit train':>34}")
for p in presets:
    gb, gt, tb, pt = bench("gobench", p), trainer("go", p), bench("torchbench", p), trainer("py", p)
    print(f"{p:7} {gb:15.0f} {gt:15.0f} {tb:14.0f} {pt:15.0f} {pt / gt:34.2f}")
PY
