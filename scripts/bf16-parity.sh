#!/usr/bin/env bash
# bf16 numerics protocol (issue 21): tiny for 1,000 steps × 3 seeds and small for 300 steps × 1 seed, γ 0.5 and 1
# with both fixes, float32 and bf16 matmuls, on the embedded corpus (plans in scripts/bf16-parity/), then the
# comparison: every bf16 evaluation against the float32 seeds' spread, and the diagnostics (stable rank, sink
# rate) likewise. Resumable: run it again after an interruption. About 40 minutes on an idle 2-core machine.
#
#   scripts/bf16-parity.sh [OUT]            (default OUT: bf16-parity)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bf16-parity}
go build -o /tmp/smallinit-parity ./cmd/smallinit
/tmp/smallinit-parity study scripts/bf16-parity/tiny.toml --steps 1000 --jobs auto --out "$out/tiny"
/tmp/smallinit-parity study scripts/bf16-parity/small.toml --steps 300 --jobs auto --out "$out/small"
/usr/bin/python3 scripts/bf16-parity/compare.py "$out/tiny" "$out/small"
