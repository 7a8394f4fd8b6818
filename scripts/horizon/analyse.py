#!/usr/bin/env python3
"""Tabulates a horizon measurement: for each study directory (one per horizon) and each run of its γ group,
the final validation loss on the training-time slice, the paired gap L(γ=0.5) − L(γ=1) per seed, γ's mean
stable rank trajectory, the relative spread of its last three diagnostics (the plateau check of
docs/definitions.md §7) and the spike statistic of the training loss.

    python3 scripts/horizon/analyse.py OUT/s600 OUT/s1200 OUT/s2400
"""
import json
import os
import sys

BLOCK = {"q", "k", "v", "o", "ffn_gate", "ffn_up", "ffn_down"}


def lines(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def run_stats(d):
    ms = lines(os.path.join(d, "metrics.jsonl"))
    cfg = open(os.path.join(d, "config.toml")).read()
    losses = [m["loss"] for m in ms if m.get("loss")]
    val = [m["val_loss"] for m in ms if m.get("val_loss") is not None]
    best, spike = float("inf"), 0.0
    for l in losses:
        best = min(best, l)
        spike = max(spike, l - best)
    traj = []
    for rec in lines(os.path.join(d, "diagnostics.jsonl")):
        cls = [c for c in rec.get("diagnostics", {}).get("classes", []) if c["class"] in BLOCK]
        if cls:
            traj.append((rec["step"], sum(c["stable_rank"] for c in cls) / len(cls)))
    tail = [v for _, v in traj[-3:]]
    spread = (max(tail) - min(tail)) / max(tail) if len(tail) == 3 else float("nan")
    gamma = [l.split("=")[1].strip() for l in cfg.splitlines() if l.strip().startswith("gamma")][0]
    seed = [l.split("=")[1].strip() for l in cfg.splitlines() if l.strip().startswith("seed")][0]
    steps = ms[-1]["step"]
    tokens = ms[-1]["tokens"]
    return dict(gamma=float(gamma), seed=int(seed), steps=steps, tokens=tokens, val=val[-1], spike=spike,
                traj=traj, spread=spread, min=min(v for _, v in traj))


def main(dirs):
    print("| horizon (steps) | tokens | γ | seed | final val loss (64-window slice) | stable rank: start → min → end | last-3 spread | plateau (≤ 5%) | spike |")
    print("|---|---|---|---|---|---|---|---|---|")
    gaps = []
    for d in dirs:
        runs_dir = os.path.join(d, "gamma", "runs")
        rs = [run_stats(os.path.join(runs_dir, r)) for r in sorted(os.listdir(runs_dir))]
        for r in rs:
            t = r["traj"]
            print(f"| {r['steps']} | {r['tokens']:,} | {r['gamma']:g} | {r['seed']} | {r['val']:.4f} | {t[0][1]:.1f} → {r['min']:.1f} → {t[-1][1]:.1f} | {r['spread']:.3f} | {'yes' if r['spread'] <= 0.05 else 'no'} | {r['spike']:.3f} |")
        by = {(r["gamma"], r["seed"]): r for r in rs}
        for s in sorted({r["seed"] for r in rs}):
            if (0.5, s) in by and (1.0, s) in by:
                gaps.append((rs[0]["steps"], s, by[(0.5, s)]["val"] - by[(1.0, s)]["val"]))
    print()
    print("| horizon (steps) | seed | gap L(γ=0.5) − L(γ=1) |")
    print("|---|---|---|")
    for st, s, g in gaps:
        print(f"| {st} | {s} | {g:+.4f} |")
    print()
    print("γ = 1 mean stable rank trajectories (step: value):")
    for d in dirs:
        runs_dir = os.path.join(d, "gamma", "runs")
        for r in sorted(os.listdir(runs_dir)):
            x = run_stats(os.path.join(runs_dir, r))
            if x["gamma"] == 1:
                print(f"  {x['steps']} steps, seed {x['seed']}: " + " ".join(f"{st}:{v:.1f}" for st, v in x["traj"]))


if __name__ == "__main__":
    main(sys.argv[1:])
