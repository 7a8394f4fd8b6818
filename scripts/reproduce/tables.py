#!/usr/bin/env python3
"""Markdown tables of a reproduction's claims.json: the primaries with their per-seed values, the ladder per
seed, each run's health (spike, stable-rank plateau), the full-horizon LR grid and its transfer check.

    python3 scripts/reproduce/tables.py OUT/claims.json > tables.md

Reads only claims.json (smallinit reproduce writes it); numbers are printed as recorded, null as "—".
"""
import json
import math
import sys


def fmt(x, digits=4):
    if x is None or (isinstance(x, float) and (math.isnan(x) or math.isinf(x))):
        return "—"
    if isinstance(x, float):
        return f"{x:+.{digits}f}" if digits and abs(x) < 10 else f"{x:.{digits}g}"
    return str(x)


def pval(x):
    if x is None:
        return "—"
    return f"{x:.2g}"


def plain(x, digits=4):
    if x is None:
        return "—"
    return f"{x:.{digits}f}"


def test_row(t):
    e = t["estimate"]
    return "| {} | {} | {} | [{}, {}] | {} | {} | {} | {} | {} | {} |".format(
        t["name"], e.get("n"), fmt(e.get("mean")), fmt(e.get("lo")), fmt(e.get("hi")), e.get("df"),
        fmt(e.get("mde")), pval(e.get("p")), pval(t.get("p_holm")), pval(t.get("p_sign_flip")),
        t.get("decision", ""))


def main(path):
    with open(path) as f:
        res = json.load(f)
    print(f"tier {res.get('tier')}, {res.get('seeds')} seeds, {res.get('runs')} runs, {res.get('steps')} steps per run at the primaries' width\n")
    print("## Verdicts\n")
    print("| claim | verdict | reason |\n|---|---|---|")
    for c in res["claims"]:
        print(f"| {c.get('id') or c['claim']}: {c['text']} | {c['verdict']} | {c.get('reason', '')} |")
    print("\n## Comparisons behind the primaries\n")
    print("| comparison | n | mean | interval | df | MDE | p | Holm p | sign-flip p | decision |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for c in res["claims"]:
        if c.get("id") in ("H1", "H2"):
            for t in c.get("tests", []):
                print(test_row(t))
    ev = res.get("inputs") or {}
    print("\n## Per seed: the paired gain L(γ=0.5) − L(γ=1) on the whole validation split\n")
    ladder = ev.get("ladder") or []
    seeds = sorted({int(s) for r in ladder for s in (r["gamma0.5"].get("seeds") or {})})
    print("| width | N | " + " | ".join(f"seed {s}" for s in seeds) + " |")
    print("|---|---|" + "---|" * len(seeds))
    for r in ladder:
        a, b = r["gamma0.5"].get("seeds") or {}, r["gamma1"].get("seeds") or {}
        cells = []
        for s in seeds:
            x, y = a.get(str(s)), b.get(str(s))
            cells.append(fmt(x["overall"] - y["overall"]) if x and y and x.get("overall") is not None and y.get("overall") is not None else "—")
        print(f"| {r['width']} | {int(r['n'])} | " + " | ".join(cells) + " |")
    print("\n## Per run: validation loss, spike statistic, γ's stable-rank tail spread\n")
    print("| group | arm | seed | width | steps | LR | loss | spike | tail spread |\n|---|---|---|---|---|---|---|---|---|")
    for r in sorted(res.get("runs_scored") or [], key=lambda r: (r["group"], r["arm"], r["seed"])):
        h = r.get("health") or {}
        loss = (((r.get("score") or {}).get("held_out") or {}).get("overall") or {}).get("loss")
        print(f"| {r['group']} | {r['arm']} | {r['seed']} | {r['width']} | {r['steps']} | {r['lr']:g} | {plain(loss)} | {plain(h.get('spike'), 3)} | {plain(h.get('stable_rank_tail_spread'), 3)} |")
    print("\n## The learning-rate grid (full horizon, LR-selection slice)\n")
    print("| γ | width | rate | seed | selection loss | spike | rate vetoed | chosen |\n|---|---|---|---|---|---|---|---|")
    checks = []
    for t in res.get("lr_sweeps") or []:
        g = t.get("grid")
        if not g:
            continue
        vetoed = {r["lr"]: r["vetoed"] for r in g["rates"]}
        for tr in g["trials"]:
            print(f"| {t['gamma']:g} | {t['width']} | {tr['lr']:g} | {tr['seed']} | {plain(tr['loss'])} | {plain(tr['spike'], 3)} | {'yes' if vetoed.get(tr['lr']) else 'no'} | {'←' if tr['lr'] == g['lr'] else ''} |")
        if t.get("transfer"):
            checks.append(t["transfer"])
    if checks:
        print("\n## The transfer rule checked at the ladder's other end\n")
        print("| γ | width | rule rate | best rate | cost (nats) | tolerance | holds |\n|---|---|---|---|---|---|---|")
        for c in checks:
            print(f"| {c['gamma']:g} | {c['width']} | {c['rule_lr']:g} | {c['best_lr']:g} | {fmt(c.get('cost'))} | {c['tolerance']:.4g} | {'yes' if c['pass'] else 'NO'} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: tables.py OUT/claims.json")
    main(sys.argv[1])
