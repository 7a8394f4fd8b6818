"""`python -m smallinit_torch preflight --device D`: what the Go engine checks before a study writes anything: that
this interpreter imports torch and the package (the caller runs it through a line that imports torch first, so
that a missing torch is told apart from a missing smallinit_torch), that the device exists, and whether bf16
autocast accumulates in float32 there (device.bf16_problem). Prints one JSON object:

    {"python": sys.executable, "torch": "1.13.0a0", "device": "cpu", "device_name": "...", "auto": "...",
     "bf16": "" or why bf16 is refused, "smallinit_torch": "..."}

A device that is not there is one line on stderr and exit status 2."""
from __future__ import annotations

import json
import platform
import sys

import torch

from . import __version__
from .device import bf16_problem, parse_device


def probe(device: str) -> dict:
    dev = parse_device(device)
    name, auto = platform.processor() or platform.machine(), ""
    if dev.type == "cuda":
        name = torch.cuda.get_device_name(dev)
    if device == "auto" and dev.type == "cpu":
        auto = ("this torch was built without CUDA" if torch.version.cuda is None else "no CUDA GPU is visible")
    return {"python": sys.executable, "torch": torch.__version__, "smallinit_torch": __version__, "device": str(dev),
            "device_name": name, "auto": auto, "bf16": bf16_problem(dev)}


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m smallinit_torch preflight")
    ap.add_argument("--device", default="auto")
    args = ap.parse_args(argv)
    try:
        print(json.dumps(probe(args.device)))
    except (ValueError, RuntimeError) as e:
        print(f"smallinit_torch: {e}", file=sys.stderr)
        return 2
    return 0
