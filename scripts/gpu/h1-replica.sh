#!/bin/bash
# The width-128 H1 replica on one GPU in one command of at most 7 minutes (scripts/gpu/h1_replica.py says what it
# runs): γ ∈ {0.5, 1} × rates {2e-3, 4e-3} × seeds {0, 1}, plus γ = 1 at 1e-3, at 20 tokens per non-embedding
# parameter, all at once through the PyTorch trainer; a width-256 pair if the throughput probe says it fits.
# From the repository root, on a machine with PyTorch (2.x on the GPU; Debian's 1.13 for the CPU smoke test):
#   bash scripts/gpu/h1-replica.sh [--data DIR] [--device cuda] [--minutes 7]
# It writes summary.md, summary.json and runs.tar.gz to $OUT (or --out, or ./h1-replica-out).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# The script itself needs only Python's standard library; $PYTHON names the trainer's interpreter (else the
# first of this python3 and /usr/bin/python3 that imports torch), which the script preflights.
exec python3 "$here/h1_replica.py" "$@"
