#!/usr/bin/python3
"""Compare the bf16 parity runs (scripts/bf16-parity.sh) with their float32 twins.

For each study directory (runs/<γ arm>-<precision>-<N>steps-seed<S>/) and γ it prints, at every evaluation,
the float32 seeds' validation-loss range, the bf16 seeds' mean and whether it lies inside that range, and the
paired difference bf16 − f32 (same seed: same init, same data order); then the same for two diagnostics, the
mean stable rank over all weight matrices and the sink rate, at every diagnostics step. A study with one seed
has no seed spread of its own: its paired differences are printed against the other study's spread. Last, the
bf16 rounding error of the initial weights per γ (‖bf16(W) − W‖ / ‖W‖ over all matrices, round to nearest
even as the engine does) and their smallest non-zero |W|.

    /usr/bin/python3 scripts/bf16-parity/compare.py OUT/tiny OUT/small
"""
import json
import os
import re
import statistics
import struct
import sys

import torch

RUN = re.compile(r"^gamma(?P<g>[0-9.]+)-(?P<p>f32|bf16)-(?P<n>\d+)steps-seed(?P<s>\d+)$")


def jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def runs(study):
    out = {}
    for name in sorted(os.listdir(os.path.join(study, "runs"))):
        m = RUN.match(name)
        d = os.path.join(study, "runs", name)
        if not m or not os.path.exists(os.path.join(d, "final", "model.safetensors")):
            continue
        val = {r["step"]: r["val_loss"] for r in jsonl(os.path.join(d, "metrics.jsonl")) if "val_loss" in r}
        diag = {}
        dpath = os.path.join(d, "diagnostics.jsonl")
        if os.path.exists(dpath):
            for r in jsonl(dpath):
                w = r["diagnostics"]["weights"]
                diag[r["step"]] = (statistics.fmean(x["stable_rank"] for x in w), r["diagnostics"]["activations"]["sink_rate"])
        out.setdefault(float(m["g"]), {}).setdefault(m["p"], {})[int(m["s"])] = dict(dir=d, val=val, diag=diag)
    return out


def compare(title, f32, bf16, key, spread_from=None):
    """Rows of (step, f32 min, f32 max, bf16 mean, inside, paired mean, paired max |Δ|) for series key."""
    steps = sorted(set.intersection(*(set(r[key]) for r in list(f32.values()) + list(bf16.values()))))
    seeds = sorted(set(f32) & set(bf16))
    rows, inside_all = [], True
    for st in steps:
        fv = [f32[s][key][st] for s in f32]
        bv = [bf16[s][key][st] for s in bf16]
        lo, hi = min(fv), max(fv)
        if spread_from is not None:
            lo, hi = spread_from.get(st, (lo, hi))
        bm = statistics.fmean(bv)
        inside = lo - 1e-12 <= bm <= hi + 1e-12 if len(fv) > 1 or spread_from else None
        if inside is False:
            inside_all = False
        d = [bf16[s][key][st] - f32[s][key][st] for s in seeds]
        rows.append((st, min(fv), max(fv), bm, inside, statistics.fmean(d), max(abs(x) for x in d)))
    return steps, rows, inside_all


def table(title, rows, fmt):
    print(f"\n{title}")
    print("| step | f32 min | f32 max | bf16 mean | inside | paired Δ mean | max |Δ| |")
    print("|---|---|---|---|---|---|---|")
    for st, lo, hi, bm, ins, dm, dmax in rows:
        flag = {True: "yes", False: "**no**", None: "n/a (1 seed)"}[ins]
        print(f"| {st} | {lo:{fmt}} | {hi:{fmt}} | {bm:{fmt}} | {flag} | {dm:+{fmt}} | {dmax:{fmt}} |")


def safetensors_matrices(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        blob = f.read()
    for name, t in head.items():
        if name == "__metadata__" or t["dtype"] != "F32" or len(t["shape"]) != 2:
            continue
        a, b = t["data_offsets"]
        yield name, torch.frombuffer(bytearray(blob[a:b]), dtype=torch.float32).reshape(t["shape"])


def rounding(run_dir):
    num = den = 0.0
    smallest = float("inf")
    for _, w in safetensors_matrices(os.path.join(run_dir, "init", "model.safetensors")):
        r = w.to(torch.bfloat16).to(torch.float32)
        num += float(((r - w).double() ** 2).sum())
        den += float((w.double() ** 2).sum())
        nz = w.abs()[w != 0]
        if nz.numel():
            smallest = min(smallest, float(nz.min()))
    return (num / den) ** 0.5, smallest


def main(studies):
    spreads = {}  # γ → step → (lo, hi) of the first study with several seeds, for one-seed studies
    verdict, dverdict = True, True  # validation loss; diagnostics
    for study in studies:
        rs = runs(study)
        print(f"\n## {study}")
        for g in sorted(rs):
            f32, bf16 = rs[g].get("f32", {}), rs[g].get("bf16", {})
            if not f32 or not bf16:
                print(f"\nγ = {g}: missing runs (f32 seeds {sorted(f32)}, bf16 seeds {sorted(bf16)})")
                verdict = False
                continue
            one = len(f32) == 1
            _, rows, ok = compare("val", f32, bf16, "val")
            table(f"γ = {g}: validation loss, f32 seeds {sorted(f32)}, bf16 seeds {sorted(bf16)}" +
                  (" (one seed: no spread of its own)" if one else ""), rows, ".4f")
            if not one:
                verdict &= ok
                spreads.setdefault(g, {st: (lo, hi) for st, lo, hi, *_ in rows})
                print(f"\nbf16 mean inside the f32 seed range at every evaluation: {'yes' if ok else 'NO'}")
            for i, name in enumerate(("mean stable rank", "sink rate")):
                f = {s: dict(d=({st: v[i] for st, v in r["diag"].items()})) for s, r in f32.items()}
                b = {s: dict(d=({st: v[i] for st, v in r["diag"].items()})) for s, r in bf16.items()}
                if not any(r["d"] for r in f.values()):
                    continue
                _, drows, dok = compare(name, f, b, "d")
                table(f"γ = {g}: {name} (diagnostics.jsonl)", drows, ".4g")
                if not one:
                    dverdict &= dok
                    print(f"\nbf16 mean inside the f32 seed range at every diagnostics step: {'yes' if dok else 'NO'}")
            if one and g in spreads:
                width = statistics.fmean(hi - lo for lo, hi in spreads[g].values())
                dmax = max(r[6] for r in rows)
                print(f"\none seed: max paired |Δ| {dmax:.4f} against the multi-seed study's mean f32 seed range {width:.4f} at γ = {g}")
        for g in sorted(rs):
            if "f32" in rs[g]:
                s0 = min(rs[g]["f32"])
                rel, small = rounding(rs[g]["f32"][s0]["dir"])
                print(f"\nγ = {g}: bf16 rounding of the initial weights (seed {s0}): ‖bf16(W) − W‖/‖W‖ = {rel:.5f}, smallest |W| {small:.3g}")
    print(f"\nverdict, validation loss: {'bf16 within the float32 seed spread at every evaluation of every multi-seed study' if verdict else 'bf16 OUTSIDE the float32 seed spread somewhere (see the tables)'}")
    print(f"verdict, diagnostics: {'bf16 within the float32 seed spread at every diagnostics step of every multi-seed study' if dverdict else 'bf16 OUTSIDE the float32 seed spread somewhere (see the tables)'}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
