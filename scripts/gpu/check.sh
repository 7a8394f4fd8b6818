#!/bin/bash
# The PyTorch trainer's GPU check, under 5 minutes on one GPU (scripts/gpu/check.py says what it checks): CPU
# against CUDA at f32 with TF32 off, bf16, a resume across fused and foreach AdamW, an out-of-memory, SIGTERM and
# throughput. From the repository root, on a machine with PyTorch 2.x and a GPU:
#   bash scripts/gpu/check.sh [--device cuda] [--out DIR]
# It prints one line per check and writes check.json to $OUT (or --out, or ./gpu-check-out).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-}
if [ -z "$py" ]; then  # the first python3 on PATH may lack torch where the system's has it
  for c in python3 /usr/bin/python3; do
    if "$c" -c 'import torch' 2>/dev/null; then py=$c; break; fi
  done
fi
if [ -z "$py" ]; then
  echo "check.sh: no python3 here imports torch: set PYTHON to one that does" >&2
  exit 2
fi
exec "$py" "$here/check.py" "$@"
