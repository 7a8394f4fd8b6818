#!/bin/bash
# The horizon measurement of docs/results/2026-12-02-horizon.md: the plan horizon.toml (γ ∈ {0.5, 1}, width 128,
# both fixes, shared LR 2e-3, cosine, seeds 0-1) at 600, 1,200 and 2,400 steps, then each final model scored on
# the whole validation split and the table. Resumable: rerunning continues each study from its checkpoints.
#   OUT=/tmp/horizon scripts/horizon/run.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-horizon}
mkdir -p "$out"
for s in 600 1200 2400; do
  smallinit study "$here/horizon.toml" --steps "$s" --jobs 2 --out "$out/s$s" > "$out/s$s.log" 2>&1 || { echo "s$s failed, see $out/s$s.log" >&2; exit 1; }
  for r in "$out/s$s"/gamma/runs/*; do
    echo "$r $(smallinit eval --model "$r/final" --tokens "$out/s$s/data/val.tok" | tail -1)"
  done
done
python3 "$here/analyse.py" "$out/s600" "$out/s1200" "$out/s2400"
