"""smallinit's diagnostics (docs/definitions.md §4) in PyTorch, with the JSON keys of Go's diag package, so that `smallinit
report`, `analyze` and `compare` read the records of a PyTorch run unchanged.

Weight metrics of every matrix [d_out, d_in] (diag.Weights): stable rank ||W||_F^2 / sigma_max^2, effective rank
exp(H(sigma / sum sigma)), the mean |cos| between rows against the random baseline sqrt(2 / (pi d_in)), the share of
row pairs with |cos| > 0.9. The singular values are exact (float64 SVD); rows beyond 512 are subsampled exactly as
Go does (the same rows: diag.sampleRows's PCG Fisher-Yates), or, for the embedding and the head when a token
file is given, the 512 most frequent tokens' rows (diag.FrequentTokens).

Activation metrics on probe windows (diag.Activations), through forward hooks on the model's modules: per block
the RMS of the residual stream entering it, the saturation eps / (m + eps) and output RMS sqrt(m / (m + eps)) of
both norms (m = mean(x^2), or the variance for LayerNorm), the residual ratios RMS(Attn(Norm x)) / RMS(x) and
RMS(FFN(Norm h)) / RMS(h), per head the first-token mass (mean over queries i >= 1 of A[i, 0]) and the sink alpha
(mean over all queries), gate means, and for MoE blocks the expert load, router entropy and dropped assignments;
the final hidden RMS and norm; the overall first-token mass and sink rate (% of heads with alpha > 0.3).

    d = Diagnostics(model)                        # registers the hooks (smallinit_torch.model.Llama)
    act = d.activations(tokens, probes=16, probe_len=64)
    d.close()
    rec = training_record(model, tokens)          # one diagnostics.jsonl "diagnostics" object

    python -m smallinit_torch analyze --model DIR [--tokens FILE.tok] [--probes 16] [--probe-len 64]
        prints what `smallinit analyze --json` prints.

The hooks expect the engine's module layout (smallinit_torch.model, which is Hugging Face Llama's: model.layers[i]
with input_layernorm, self_attn, post_attention_layernorm, mlp); the attention probabilities are taken from
self_attn.core, the module smallinit_torch.model.Attention calls, so a Hugging Face model gives every metric but the
first-token mass and sink rate (null)."""
from __future__ import annotations

import argparse
import json
import math
import re
import sys

import torch

from .gorand import PCG
from .init import canonical, lookup, table
from .files import USER_ERRORS, error_line
from .gate import OutputGate
from .model import Llama, MoE, attention_probs

MAX_COS_ROWS = 512
EXACT_MAX_DIM = 256
SINK_THRESHOLD = 0.3


def _num(v):
    return None if v is None or not math.isfinite(v) else float(v)


def sample_rows(m, n, seed=0):
    """diag.sampleRows: n distinct row indices of m, ascending (partial Fisher-Yates, PCG(seed, "cosrows"))."""
    rng = PCG(seed, 0x636f73726f7773)
    perm = list(range(m))
    for i in range(n):
        j = i + rng.intn(m - i)
        perm[i], perm[j] = perm[j], perm[i]
    return sorted(perm[:n])


def frequent_tokens(toks: torch.Tensor, vocab: int) -> "list[int]":
    """diag.FrequentTokens: ids by decreasing count, ties lower id first, unseen ids left out."""
    counts = torch.bincount(toks[(toks >= 0) & (toks < vocab)], minlength=vocab)
    ids = [i for i in range(vocab) if counts[i] > 0]
    ids.sort(key=lambda i: -int(counts[i]))
    return ids


def _cos_summary(rows):
    """(mean |cos|, fraction > 0.9, zero rows) over the pairs i < j of the rows (zero rows: cos 0)."""
    r = rows.shape[0]
    norms = rows.norm(dim=1)
    zero = int((norms == 0).sum())
    if r < 2:
        return float("nan"), float("nan"), zero
    inv = torch.where(norms > 0, 1 / norms, torch.zeros_like(norms))
    c = (rows @ rows.t()).abs() * inv[:, None] * inv[None, :]
    c = c.clamp(max=1)
    iu = torch.triu_indices(r, r, 1)
    v = c[iu[0], iu[1]]
    return float(v.mean()), float((v > 0.9).double().mean()), zero


def weight_metrics(w: torch.Tensor, rows_for_cos=None, seed: int = 0) -> dict:
    """The diagrec.WeightStats of a [rows, cols] matrix as Go's JSON keys (less name, class and layer).
    rows_for_cos: the row ids the cosine summaries use (default: all rows up to 512, else Go's subsample)."""
    w = w.detach().to("cpu", torch.float64)
    rows, cols = w.shape
    out = {"rows": rows, "cols": cols, "random_baseline": math.sqrt(2 / (math.pi * cols))}
    if not torch.isfinite(w).all():
        out.update(frobenius_sq=None, sigma_max=None, stable_rank=None, stable_rank_exact=False, effective_rank=None,
                   mean_abs_cos=None, cos_ratio=None, frac_abs_cos_above_0_9=None, zero_rows=0,
                   cos_rows_used=min(rows, MAX_COS_ROWS))
        return out
    frob = float(w.pow(2).sum())
    sv = torch.linalg.svdvals(w)
    smax = float(sv[0])
    out.update(frobenius_sq=frob, sigma_max=smax, stable_rank=frob / smax ** 2 if smax > 0 else 0.0,
               stable_rank_exact=True)
    s = float(sv.sum())
    if s == 0:
        er = 0.0
    else:
        p = sv[sv > 0] / s
        er = math.exp(float(-(p * p.log()).sum()))
    out["effective_rank"] = er
    if rows_for_cos is None:
        rows_for_cos = range(rows) if rows <= MAX_COS_ROWS else sample_rows(rows, MAX_COS_ROWS, seed)
    ids = torch.tensor(list(rows_for_cos), dtype=torch.long)
    mean, frac, zero = _cos_summary(w.index_select(0, ids))
    out.update(mean_abs_cos=_num(mean), cos_ratio=_num(mean / out["random_baseline"]), frac_abs_cos_above_0_9=_num(frac),
               cos_rows_used=len(ids), zero_rows=zero)
    return out


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The model inside DataParallel / DistributedDataParallel (`.module`) and torch.compile (`._orig_mod`)
    wrappers, however nested."""
    while True:
        inner = getattr(model, "_orig_mod", None)
        if inner is None and isinstance(model, (torch.nn.DataParallel, torch.nn.parallel.DistributedDataParallel)):
            inner = model.module
        if not isinstance(inner, torch.nn.Module):
            return model
        model = inner


_LAYER = re.compile(r"(?:^|\.)(?:layers|h)\.(\d+)\.")


def _matrices(name, p, classify):
    """(name, class, [rows, cols] view) of each matrix block of parameter p that the table or classify= names."""
    eng = canonical(name)
    ent = lookup(eng) if eng else None
    if ent is not None:
        if p.dim() == 2 and ent["init"] == "normal":
            yield name, ent["class"], p
        return
    if classify is None or p.dim() != 2:
        return
    cls = classify(name, p)
    if isinstance(cls, list):  # row blocks of a fused matrix, as gamma_init_ draws them
        start = 0
        for c, rows in cls:
            yield f"{name}[{c}]", c, p.narrow(0, start, rows)
            start += rows
        return
    layout = None
    if isinstance(cls, tuple):
        cls, layout = cls
    if cls in table()["classes"]:
        yield name, cls, (p.t() if layout == "transposed" else p)


def weight_report(model: torch.nn.Module, frequent: "list[int] | None" = None, seed: int = 0,
                  classify=None) -> "list[dict]":
    """diag.WeightReport: every matrix of model with its class and layer, in parameter order. classify is
    gamma_init_'s: a matrix of no known naming that it names (a class, (class, "transposed"), or the row blocks
    of a fused matrix) is reported too, as gamma_init_ drew it."""
    out = []
    for name, p in unwrap(model).named_parameters():
        for bname, cls, w in _matrices(name, p, classify):
            rows_for_cos = None
            if cls in ("embed", "head") and frequent:
                rows_for_cos = frequent[:MAX_COS_ROWS]
            m = weight_metrics(w, rows_for_cos, seed)
            eng = canonical(name) or name
            mt = _LAYER.search(eng) or _LAYER.search(name)
            out.append(dict(name=bname, **{"class": cls}, layer=int(mt.group(1)) if mt else -1, **m))
    return out


def summarise_classes(ws: "list[dict]") -> "list[dict]":
    """diagrec.SummariseClasses: per class (first-seen order), the means of the finite metric values."""
    order, acc = [], {}
    keys = (("stable_rank", "stable_rank"), ("mean_abs_cos", "mean_abs_cos"), ("cos_ratio", "cos_ratio"),
            ("frac_abs_cos_above_0_9", "frac_abs_cos_above_0_9"))
    for w in ws:
        if w["class"] not in acc:
            order.append(w["class"])
            acc[w["class"]] = {"n": 0, **{k: [] for k, _ in keys}}
        a = acc[w["class"]]
        a["n"] += 1
        for k, src in keys:
            if w.get(src) is not None and math.isfinite(w[src]):
                a[k].append(w[src])
    return [{"class": c, "tensors": acc[c]["n"],
             **{k: (sum(acc[c][k]) / len(acc[c][k]) if acc[c][k] else None) for k, _ in keys}} for c in order]


def _rms(x):
    return float(x.double().pow(2).mean().sqrt())


def _norm_stat(x, eps, layernorm):
    x = x.double().reshape(-1, x.shape[-1])
    ms = x.var(-1, unbiased=False) if layernorm else x.pow(2).mean(-1)
    return {"saturation": float((eps / (ms + eps)).mean()), "output_rms": float((ms / (ms + eps)).sqrt().mean())}


def _eps(norm):
    for a in ("eps", "variance_epsilon"):
        if hasattr(norm, a):
            return float(getattr(norm, a))
    raise ValueError(f"{type(norm).__name__}: no eps")


class _Unobserve:
    """A removable handle for an OutputGate observer (like a hook handle)."""

    def __init__(self, gate, observer):
        self.gate, self.observer = gate, observer

    def remove(self):
        if self.observer in self.gate.observers:
            self.gate.observers.remove(self.observer)


def _context_length(model) -> int:
    """The model's context length: smallinit's Config, or a Hugging Face config's max_position_embeddings /
    n_positions."""
    c = getattr(model, "c", None) or getattr(model, "config", None)
    for a in ("max_position_embeddings", "n_positions"):
        v = getattr(c, a, None)
        if isinstance(v, int) and v > 0:
            return v
    raise ValueError(f"{type(model).__name__}: no context length (model.c or model.config.max_position_embeddings)")


def _forward_loss(model, x, y):
    """The mean next-token cross-entropy of inputs x against targets y: smallinit's Llama takes (x, y) and
    returns (logits, loss); any other model (Hugging Face's *ForCausalLM) is called as model(x) and its logits
    (a ModelOutput's .logits, or the first element of a tuple) are scored here, so labels= and its internal
    shift are not needed."""
    if isinstance(model, Llama):
        return model(x, y)[1]
    out = model(x)
    logits = getattr(out, "logits", None)
    if logits is None:
        logits = out[0] if isinstance(out, (tuple, list)) else out
    if not torch.is_tensor(logits) or logits.dim() != 3:
        raise ValueError(f"{type(model).__name__}: forward returned no [batch, T, vocab] logits")
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1))


class Diagnostics:
    """Forward hooks that record the activation metrics of one forward pass of model (see the module docstring)."""

    def __init__(self, model: torch.nn.Module) -> None:
        model = unwrap(model)  # hooks go on the modules that run, not on a DataParallel or compile wrapper
        self.model = model
        base = model.model if hasattr(model, "model") else model
        if not hasattr(base, "layers") or not hasattr(base, "norm"):
            raise ValueError(f"Diagnostics: {type(model).__name__} does not have the Llama layout (model.layers[i] "
                             f"with input_layernorm, self_attn, post_attention_layernorm, mlp, and model.norm); "
                             f"GPT-2-style models (transformer.h) are not supported")
        self.blocks = list(base.layers)
        self.final_norm = base.norm
        for l, b in enumerate(self.blocks):
            for part in ("input_layernorm", "self_attn", "post_attention_layernorm", "mlp"):
                if not hasattr(b, part):
                    raise ValueError(f"Diagnostics: layer {l} ({type(b).__name__}) has no {part}")
        self.handles, self.cur = [], None
        for l, b in enumerate(self.blocks):
            self.handles.append(b.register_forward_pre_hook(self._pre(l)))
            self.handles.append(b.register_forward_hook(self._post(l)))
            self.handles.append(b.self_attn.register_forward_hook(self._attn(l)))
            core = getattr(b.self_attn, "core", None)
            if core is not None:
                self.handles.append(core.register_forward_hook(self._core(l)))
            g = getattr(b.self_attn, "g_proj", None)
            if isinstance(g, OutputGate):  # built in, or added by add_output_gate: both call gate_values
                obs = self._gate(l, g.n_heads)
                g.observers.append(obs)
                self.handles.append(_Unobserve(g, obs))
            if isinstance(b.mlp, MoE):
                self.handles.append(b.mlp.register_forward_hook(self._moe(l)))

    def close(self) -> None:
        for h in self.handles:
            h.remove()
        self.handles = []

    def _rec(self, l):
        return self.cur.setdefault(l, {})

    def _pre(self, l):
        def hook(mod, inp):
            if self.cur is not None:
                self._rec(l)["x"] = inp[0].detach()
        return hook

    def _post(self, l):
        def hook(mod, inp, out):
            if self.cur is not None:
                self._rec(l)["out"] = (out[0] if isinstance(out, tuple) else out).detach()
        return hook

    def _attn(self, l):
        def hook(mod, inp, out):
            if self.cur is not None:
                self._rec(l)["attn"] = (out[0] if isinstance(out, tuple) else out).detach()
        return hook

    def _core(self, l):
        def hook(mod, inp, out):
            if self.cur is not None:
                q, k, _ = inp
                a = attention_probs(q.detach().double(), k.detach().double())[..., 0]  # [B, H, T]: A[i, 0]
                self._rec(l)["alpha"] = a.mean((0, 2)).tolist()
                self._rec(l)["mass"] = a[..., 1:].mean((0, 2)).tolist()
        return hook

    def _gate(self, l, H):
        def observe(g):
            if self.cur is not None:
                g = g.detach().double()
                g = g.reshape(-1, H, g.shape[-1] // H)  # [tokens, H, channels per head]
                self._rec(l)["gate"] = g.mean((0, 2)).tolist()
        return observe

    def _moe(self, l):
        def hook(mod, inp, out):
            if self.cur is not None:
                st = mod.stats
                p = st["p"].double()
                N, k = p.shape[0], mod.c.top_k
                ent = -(torch.where(p > 0, p * p.log(), torch.zeros_like(p))).sum() / N
                self._rec(l).update(load=[r / (N * k) for r in st["routed"]], dropped=int(st["dropped"]),
                                    entropy=float(ent))
        return hook

    @torch.no_grad()
    def activations(self, toks: torch.Tensor, probes: int = 16, probe_len: int = 64, max_rows: "int | None" = None) -> dict:
        """diag.Activations on the first probes windows of probe_len tokens of toks (at most max_rows // probe_len
        of them, as Go's forward-pass capacity Batch·SeqLen/probe_len)."""
        T = _context_length(self.model)
        if not 2 <= probe_len <= T:
            raise ValueError(f"probe length {probe_len}: must be in [2, {T}]")
        probes = min(probes, (len(toks) - 1) // probe_len)
        if max_rows:
            probes = min(probes, max_rows // probe_len)
        if probes < 1:
            raise ValueError(f"{len(toks)} tokens: too few for one {probe_len}-token probe")
        x = torch.stack([toks[k * probe_len:(k + 1) * probe_len] for k in range(probes)])
        y = torch.stack([toks[k * probe_len + 1:(k + 1) * probe_len + 1] for k in range(probes)])
        dev = next(self.model.parameters()).device
        was = self.model.training
        self.model.eval()
        self.cur = {}
        final = {}
        h = self.final_norm.register_forward_pre_hook(lambda m, inp: final.__setitem__("x", inp[0].detach()))
        try:
            loss = _forward_loss(self.model, x.to(dev), y.to(dev))
        finally:
            h.remove()
            rec, self.cur = self.cur, None
            self.model.train(was)
        layernorm = isinstance(self.final_norm, torch.nn.LayerNorm)
        st = {"probe_windows": probes, "probe_len": probe_len, "probe_loss": float(loss), "layers": []}
        sinks = heads = 0
        mass_sum = 0.0
        have_mass = True
        for l, b in enumerate(self.blocks):
            r = rec[l]
            xx, hh, out = r["x"], r["x"] + r["attn"], r["out"]
            la = {"layer": l, "hidden_rms": _rms(xx), "attn_norm": _norm_stat(xx, _eps(b.input_layernorm), layernorm),
                  "ffn_norm": _norm_stat(hh, _eps(b.post_attention_layernorm), layernorm),
                  "attn_residual_ratio": _rms(hh.double() - xx.double()) / _rms(xx),
                  "ffn_residual_ratio": _rms(out.double() - hh.double()) / _rms(hh)}
            if "alpha" in r:
                la["first_token_mass"], la["sink_alpha"] = r["mass"], r["alpha"]
                for m, a in zip(r["mass"], r["alpha"]):
                    mass_sum += m
                    heads += 1
                    sinks += a > SINK_THRESHOLD
            else:
                have_mass = False
                la["first_token_mass"], la["sink_alpha"] = None, None
            if "gate" in r:
                la["gate_mean"] = r["gate"]
            if "load" in r:
                la["expert_load"], la["router_entropy"] = r["load"], r["entropy"]
                if r["dropped"]:
                    la["dropped_assignments"] = r["dropped"]
            st["layers"].append(la)
        fx = final["x"]
        st["final_hidden_rms"] = _rms(fx)
        st["final_norm"] = _norm_stat(fx, _eps(self.final_norm), layernorm)
        st["first_token_mass"] = mass_sum / heads if have_mass and heads else None
        st["sink_rate"] = 100 * sinks / heads if have_mass and heads else None
        return st


def training_record(model: torch.nn.Module, probe: torch.Tensor, batch: "int | None" = None) -> dict:
    """One diagnostics.jsonl "diagnostics" object as diag.Training writes it: weights, classes, activations on
    16 probe windows of min(64, T) tokens (within the forward capacity batch x T when batch is given)."""
    w = weight_report(model)
    d = Diagnostics(model)
    try:
        T = _context_length(model)
        a = d.activations(probe, 16, min(64, T), max_rows=batch * T if batch else None)
    finally:
        d.close()
    return {"weights": w, "classes": summarise_classes(w), "activations": a}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m smallinit_torch analyze",
                                 description="Weight and activation metrics of a model directory (smallinit analyze --json).")
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens")
    ap.add_argument("--probes", type=int, default=16)
    ap.add_argument("--probe-len", type=int, default=64)
    a = ap.parse_args(argv)
    try:
        out = analyze(a)
    except USER_ERRORS as e:
        sys.exit(error_line(e))
    json.dump(out, sys.stdout, allow_nan=False)
    sys.stdout.write("\n")


# MAX_PROBE_WINDOWS bounds analyze's --probes, as Go's diag.MaxProbeWindows does smallinit analyze's (a Go test
# checks the two agree): the activation metrics are means over windows, and more only allocates.
MAX_PROBE_WINDOWS = 4096


def analyze(a) -> dict:
    """The document `python -m smallinit_torch analyze` prints."""
    from .data import read_tokens
    from .model import load_model
    if not 1 <= a.probes <= MAX_PROBE_WINDOWS:
        raise ValueError(f"--probes = {a.probes}: must be in [1, {MAX_PROBE_WINDOWS}]")
    if a.probe_len < 1:
        raise ValueError(f"--probe-len = {a.probe_len}: must be >= 1")
    c, model = load_model(a.model, torch.float32)
    toks = read_tokens(a.tokens, c.vocab_size) if a.tokens else None
    freq = frequent_tokens(toks, c.vocab_size) if toks is not None else None
    w = weight_report(model, freq)
    out = {"model": a.model, "weights": w, "classes": summarise_classes(w)}
    if toks is not None:
        d = Diagnostics(model)
        try:
            out["activations"] = d.activations(toks, a.probes, min(a.probe_len, c.max_position_embeddings))
        finally:
            d.close()
    return out
