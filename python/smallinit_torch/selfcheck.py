"""selfcheck: independent checks of the parity fixtures (a naive loop-per-head float64 re-implementation, finite
differences, gradcheck on micro models, float32 vs float64, the top-k tie rule, the bench kernels)."""
import argparse  # noqa: F401
import ctypes  # noqa: F401
import json  # noqa: F401
import math  # noqa: F401
import os  # noqa: F401
import statistics  # noqa: F401
import sys  # noqa: F401
import time  # noqa: F401

import torch
import torch.nn as nn  # noqa: F401
import torch.nn.functional as F  # noqa: F401

from .kernels import KERNELS  # noqa: F401
from .model import *  # noqa: F401,F403 (the reference computations use the whole model module)
from .model import attention_manual  # noqa: F401
from .safetensors import DTYPES, read_safetensors, write_safetensors  # noqa: F401
from .bench import attention_onednn, attention_sdpa, linear_onednn
from .fixtures import *  # noqa: F401,F403 (the checks regenerate and read every fixture)
from .fixtures import CASES, golden, hf_config, init_weights, make_case, moe_stats, scaling_loss_change  # noqa: F401



def naive_loss(P, c, tokens):
    """Independent float64 re-implementation (loop over heads, explicit pair rotation, explicit formulas)."""
    inp, tgt = tokens[:, :-1], tokens[:, 1:]
    B, T = inp.shape
    dh, half = c.head_dim, c.head_dim // 2

    def norm(x, pre):
        if c.norm == "layernorm":
            mu = x.mean(-1, keepdim=True)
            var = ((x - mu) ** 2).mean(-1, keepdim=True)
            return (x - mu) / torch.sqrt(var + c.eps) * P[pre + ".weight"] + P[pre + ".bias"]
        return P[pre + ".weight"] * x / torch.sqrt((x * x).mean(-1, keepdim=True) + c.eps)

    ang = torch.arange(T, dtype=torch.float64)[:, None] * naive_rope_freqs(c)

    def rot(z):  # z [B,T,dh]: pairs (i, i+dh/2) rotated by angle t * theta^(-2i/dh)
        a, b = z[..., :half], z[..., half:]
        return torch.cat((a * ang.cos() - b * ang.sin(), b * ang.cos() + a * ang.sin()), -1)

    def head_rms(z, gain):  # QK-norm of one head z [B,T,dh]
        return z / torch.sqrt((z * z).sum(-1, keepdim=True) / dh + c.eps) * gain

    causal = torch.tril(torch.ones(T, T)) > 0
    x = P["model.embed_tokens.weight"][inp]
    aux = 0.0
    for l in range(c.num_hidden_layers):
        pre = f"model.layers.{l}."
        n = norm(x, pre + "input_layernorm")
        q, k, v = (n @ P[pre + f"self_attn.{p}_proj.weight"].T + (P[pre + f"self_attn.{p}_proj.bias"] if c.qkv_bias else 0)
                   for p in "qkv")
        g = 1 / (1 + torch.exp(-(n @ P[pre + "self_attn.g_proj.weight"].T))) if c.attn_gate != "none" else None
        heads, group = [], c.n_head // c.n_kv_head  # query heads per key/value head
        for h in range(c.n_head):
            sl, kv = slice(h * dh, (h + 1) * dh), slice(h // group * dh, (h // group + 1) * dh)
            qh, kh = q[..., sl], k[..., kv]
            if c.qk_norm:
                qh, kh = head_rms(qh, P[pre + "self_attn.q_norm.weight"]), head_rms(kh, P[pre + "self_attn.k_norm.weight"])
            s = rot(qh) @ rot(kh).transpose(1, 2) / math.sqrt(dh)
            s = torch.where(causal, s, torch.full_like(s, -math.inf))
            e = torch.exp(s - s.max(-1, keepdim=True).values)
            yh = (e / e.sum(-1, keepdim=True)) @ v[..., kv]
            heads.append(yh * g[..., h:h + 1] if c.attn_gate == "headwise" else yh)
        y = torch.cat(heads, -1)
        if c.attn_gate == "elementwise":
            y = y * g
        x = x + y @ P[pre + "self_attn.o_proj.weight"].T
        m = norm(x, pre + "post_attention_layernorm")
        if c.is_moe(l):
            y, a = naive_moe(P, c, pre, m.reshape(B * T, -1))
            x = x + y.reshape(B, T, -1)
            aux = aux + a / c.num_moe()
            continue
        x = x + naive_swiglu(P, pre + "mlp.", m)
    head = P["model.embed_tokens.weight"] if c.tie_word_embeddings else P["lm_head.weight"]
    logits = norm(x, "model.norm") @ head.T
    mx = logits.max(-1, keepdim=True).values
    lse = mx[..., 0] + torch.log(torch.exp(logits - mx).sum(-1))
    return (lse - logits.gather(-1, tgt[..., None])[..., 0]).mean() + aux, logits


def naive_rope_freqs(c):
    """The rotary frequencies theta^(-2i/dh), i < dh/2, in float64, with rope_scaling applied independently of
    rope_inv_freq_hf: linear divides by the factor, llama3 is Meta's Llama 3.1 apply_scaling loop."""
    dh, half = c.head_dim, c.head_dim // 2
    freqs = c.rope_theta ** (-2.0 * torch.arange(half, dtype=torch.float64) / dh)
    sc = c.rope_scaling
    if sc is None:
        return freqs
    if sc["rope_type"] == "linear":
        return freqs / sc["factor"]
    scale_factor, low_freq_factor, high_freq_factor = sc["factor"], sc["low_freq_factor"], sc["high_freq_factor"]
    old_context_len = sc["original_max_position_embeddings"]
    low_freq_wavelen, high_freq_wavelen = old_context_len / low_freq_factor, old_context_len / high_freq_factor
    new_freqs = []
    for freq in freqs.tolist():
        wavelen = 2 * math.pi / freq
        if wavelen < high_freq_wavelen:
            new_freqs.append(freq)
        elif wavelen > low_freq_wavelen:
            new_freqs.append(freq / scale_factor)
        else:
            smooth = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
            new_freqs.append((1 - smooth) * freq / scale_factor + smooth * freq)
    return torch.tensor(new_freqs, dtype=torch.float64)


def naive_swiglu(P, pre, m):
    a = m @ P[pre + "gate_proj.weight"].T
    return (a / (1 + torch.exp(-a)) * (m @ P[pre + "up_proj.weight"].T)) @ P[pre + "down_proj.weight"].T


def naive_moe(P, c, pre, xs):
    """MoE FFN one token at a time in token order (the capacity order), with Python-level top-k and counters.
    Returns (outputs [N, d], alpha E sum_e f_e P_e + z_coef mean lse^2)."""
    N, E, k = xs.shape[0], c.num_experts, c.top_k
    limit = math.ceil(c.capacity * N * k / E) if c.capacity > 0 else N * k
    accepted, routed, imp, z, outs = [0] * E, [0] * E, [0.0] * E, 0.0, []
    for n in range(N):
        h = xs[n]
        zl = P[pre + "mlp.gate.weight"] @ h
        mx = zl.max()
        lse = mx + torch.log(torch.exp(zl - mx).sum())
        z = z + lse * lse / N
        probs = torch.exp(zl - lse)
        pv = probs.tolist()
        sel = []
        for _ in range(k):
            best = None
            for e in range(E):
                if e not in sel and (best is None or pv[e] > pv[best]):
                    best = e
            sel.append(best)
        wsum = sum(probs[e] for e in sel)
        out = torch.zeros_like(h)
        for e in sel:
            routed[e] += 1
            if accepted[e] >= limit:
                continue
            accepted[e] += 1
            w = probs[e] / wsum if c.norm_topk else probs[e]
            out = out + w * naive_swiglu(P, f"{pre}mlp.experts.{e}.", h)
        if c.shared_ffn > 0:
            g = 1 / (1 + torch.exp(-(P[pre + "mlp.shared_expert_gate.weight"][0] @ h)))
            out = out + g * naive_swiglu(P, pre + "mlp.shared_expert.", h)
        outs.append(out)
        imp = [imp[e] + probs[e] / N for e in range(E)]
    lb = sum(E * routed[e] / (N * k) * imp[e] for e in range(E))
    return torch.stack(outs), c.aux_coef * lb + c.z_coef * z


def selfcheck(fixture_dir):
    torch.set_num_threads(1)
    ok = True

    def check(cond, msg):
        nonlocal ok
        ok &= bool(cond)
        print(("ok    " if cond else "FAIL  ") + msg)

    # 1. fixtures: regenerate golden, naive forward, finite differences, float32 vs float64
    for name in sorted(os.listdir(fixture_dir)):
        d = os.path.join(fixture_dir, name)
        if not os.path.isfile(os.path.join(d, "golden.safetensors")):
            continue
        stored = read_safetensors(os.path.join(d, "golden.safetensors"))
        inputs = os.path.join(d, "inputs.safetensors")
        fresh = golden(d, inputs)
        same = all(torch.equal(stored[k], fresh[k]) for k in fresh) and stored.keys() == fresh.keys()
        check(same, f"{name}: golden.safetensors reproduces bit for bit")
        c, _ = load_model(d, torch.float64)
        P = {k: v.double() for k, v in read_safetensors(os.path.join(d, "model.safetensors")).items()}
        tokens = read_safetensors(inputs)["tokens"].long()
        loss, logits = naive_loss(P, c, tokens)
        L = stored["loss"].item()
        check(abs(loss.item() - L) < 1e-12 and (logits.float() - stored["logits"]).abs().max() < 1e-5,
              f"{name}: naive float64 forward loss {loss.item():.12f} vs golden {L:.12f}")
        gen, worst, h = torch.Generator().manual_seed(0), 0.0, 1e-5
        for pname, p in P.items():  # central differences on 4 random coordinates of every tensor
            g = stored["grad." + pname].reshape(-1)
            for i in torch.randint(0, p.numel(), (4,), generator=gen).tolist():
                flat = p.view(-1)
                old = flat[i].item()
                flat[i] = old + h
                lp = naive_loss(P, c, tokens)[0].item()
                flat[i] = old - h
                lm = naive_loss(P, c, tokens)[0].item()
                flat[i] = old
                worst = max(worst, abs((lp - lm) / (2 * h) - g[i].item()) / (1e-6 + abs(g[i].item())))
        check(worst < 1e-3, f"{name}: finite differences vs stored gradients, worst rel. error {worst:.2e}")
        _, m32 = load_model(d, torch.float32)
        with torch.no_grad():
            lg32, l32 = m32(tokens[:, :-1], tokens[:, 1:])
        check(abs(l32.item() - L) < 1e-5, f"{name}: float32 loss {l32.item():.8f} vs float64 {L:.8f} "
              f"(diff {abs(l32.item() - L):.1e}, logits max diff {(lg32 - stored['logits']).abs().max().item():.1e})")
        if c.moe:  # routing: float32 picks the same experts, no near-ties, and capacity cases really drop
            _, m64 = load_model(d, torch.float64)
            with torch.no_grad():
                m64(tokens[:, :-1], tokens[:, 1:])
            stats = moe_stats(m64)
            same = all(torch.equal(a.mlp.stats["sel"], b.mlp.stats["sel"]) and a.mlp.stats["dropped"] == b.mlp.stats["dropped"]
                       for a, b in zip(m32.model.layers, m64.model.layers) if isinstance(a.mlp, MoE))
            gap, dropped = min(st["min_gap"] for st in stats), [st["dropped"] for st in stats]
            check(same and gap > 1e-4 and (sum(dropped) > 0) == (c.capacity > 0),
                  f"{name}: float32 routing == float64 routing, min top-k gap {gap:.1e}, dropped per MoE block {dropped}, "
                  f"routed {[st['routed'] for st in stats]}")
        if c.rope_scaling is not None:  # the frequencies: float32 (Hugging Face, Go) and the naive loop vs the golden's
            sc, gold = c.rope_scaling, rope_inv_freq_hf(c.head_dim, c.rope_theta, c.rope_scaling, torch.float64)
            f32 = rope_inv_freq_hf(c.head_dim, c.rope_theta, sc, torch.float32).double()
            e32 = ((f32 - gold).abs() / gold).max().item()
            enaive = ((naive_rope_freqs(c) - gold).abs() / gold).max().item()
            bands = "" if sc["rope_type"] != "llama3" else ", bands " + " ".join(b for _, b, _ in rope_bands(c))
            same_bands = sc["rope_type"] != "llama3" or (
                [b for _, b, _ in rope_bands(c)] == [b for _, b, _ in rope_bands(c, torch.float32)])
            check(e32 < 1e-6 and enaive < 1e-14 and same_bands,
                  f"{name}: rope_scaling {sc['rope_type']} frequencies: float32 (Hugging Face's precision) vs float64 max "
                  f"rel. diff {e32:.1e}, naive apply_scaling loop vs golden {enaive:.1e}{bands} (float32: same bands)")
            change = scaling_loss_change(d, stored)
            check(change > 1e-4, f"{name}: ignoring rope_scaling changes the loss by {change:.1e} relative "
                  f"({change / 1e-5:.0f}x the Go parity tolerance 1e-5)")
        if "gamma1" in name:
            check(abs(L - math.log(c.vocab_size)) < 0.1, f"{name}: gamma=1 loss {L:.4f} ~ ln(V) = {math.log(c.vocab_size):.4f}")

    # 2. torch.autograd.gradcheck on micro models covering every feature
    moe = dict(model_type="qwen2_moe", num_experts=3, num_experts_per_tok=2, moe_intermediate_size=6,
               shared_expert_intermediate_size=5, norm_topk_prob=True, router_aux_loss_coef=0.3, router_z_loss_coef=0.05,
               decoder_sparse_step=1, capacity_factor=1.0)
    micro = dict(vocab_size=11, hidden_size=8, intermediate_size=12, num_attention_heads=2, head_dim=4,
                 num_key_value_heads=2, max_position_embeddings=6)
    for over in ({}, {"attn_gate": "headwise", "rope_theta": 500.0}, {"attn_gate": "elementwise", "norm": "layernorm"},
                 {"tie_word_embeddings": True, "rms_norm_eps": 1e-12}, dict(moe, attn_gate="elementwise"),
                 dict(moe, num_experts=4, num_experts_per_tok=1, shared_expert_intermediate_size=0, norm_topk_prob=False,
                      router_z_loss_coef=0.02, decoder_sparse_step=2, capacity_factor=1.25),
                 {"num_attention_heads": 4, "num_key_value_heads": 1, "qkv_bias": True, "attn_gate": "headwise"},
                 {"model_type": "qwen2", "num_key_value_heads": 1, "attention_bias": None, "norm": "layernorm"},
                 dict(moe, num_attention_heads=4, num_key_value_heads=2, attention_bias=None, attn_gate="elementwise"),
                 # QK-norm: Qwen3 (GQA, head_dim != d/H), smallinit's qk_norm on llama (with LayerNorm blocks, whose
                 # QK-norm stays an RMSNorm, tiny eps and q/k/v biases), and Qwen3-MoE
                 {"model_type": "qwen3", "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 6},
                 {"qk_norm": True, "norm": "layernorm", "attn_gate": "headwise", "rms_norm_eps": 1e-12, "qkv_bias": True},
                 dict(moe, model_type="qwen3_moe", num_key_value_heads=1, shared_expert_intermediate_size=0, capacity_factor=0.0),
                 # rope_scaling: llama3 (wavelengths 6.3 kept, 628 blended) with GQA, and linear spelled the old way
                 {"num_attention_heads": 4, "num_key_value_heads": 2, "rope_scaling": {
                     "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 1000}},
                 {"rope_scaling": {"type": "linear", "factor": 4.0}, "attn_gate": "headwise"}):
        cfg = hf_config(**dict(micro, **over))
        model = Llama(Config(cfg)).double()
        init_weights(model, 0.5, torch.Generator().manual_seed(7))
        tokens = torch.randint(0, 11, (2, 7), generator=torch.Generator().manual_seed(8))
        names = [n for n, _ in model.named_parameters()]
        params = tuple(p.detach().clone().requires_grad_() for p in model.parameters())

        def f(*ps):
            return torch.nn.utils.stateless.functional_call(model, dict(zip(names, ps)), (tokens[:, :-1], tokens[:, 1:]))[1]
        res = torch.autograd.gradcheck(f, params, eps=1e-6, atol=1e-8, rtol=1e-6)
        label, note = over or "base", ""
        c = model.c
        if c.moe:
            label = (f"moe E={c.num_experts} k={c.top_k} shared={c.shared_ffn} norm_topk={c.norm_topk} "
                     f"capacity={c.capacity} sparse_step={c.sparse_step} H={c.n_head} KV={c.n_kv_head} qkv_bias={c.qkv_bias} "
                     f"qk_norm={c.qk_norm}")
            note = f", dropped per MoE block {[st['dropped'] for st in moe_stats(model)]}"
        check(res, f"gradcheck micro model {label} ({sum(p.numel() for p in params)} parameters{note})")

    # rope_scaling parsing: the old key "type", "default" and null are plain RoPE, other types are refused by name
    parse = [Config(hf_config(rope_scaling=rs)).rope_scaling for rs in
             ({"type": "linear", "factor": 2.0}, {"rope_type": "default"}, None)]
    try:
        Config(hf_config(rope_scaling={"rope_type": "yarn", "factor": 4.0}))
        refused = ""
    except ValueError as e:
        refused = str(e)
    check(parse == [{"rope_type": "linear", "factor": 2.0}, None, None] and "'yarn' is not supported" in refused,
          f"rope_scaling parsing: type/default/null read as {parse}; yarn refused: {refused}")

    # top-k routing: ties go to the lower expert index, and it agrees with torch.topk on distinct values
    tie = top_k_route(torch.tensor([[0.25, 0.25, 0.25, 0.25], [0.1, 0.4, 0.1, 0.4], [0.3, 0.2, 0.3, 0.2]]), 2).tolist()
    r = torch.rand(1000, 8, generator=torch.Generator().manual_seed(9), dtype=torch.float64).softmax(-1)
    check(tie == [[0, 1], [1, 3], [0, 2]] and torch.equal(top_k_route(r, 3), r.topk(3, -1).indices),
          f"top_k_route: ties go to the lower index {tie}, equals torch.topk on distinct values")

    # 3. bench kernels (fused attention, oneDNN GEMMs) give the same float32 results as the reference
    for d in (os.path.join(fixture_dir, "layernorm_elementwise"), os.path.join(fixture_dir, "moe_top2_shared"),
              os.path.join(fixture_dir, "gqa_kv2_qwen2_bias"), os.path.join(fixture_dir, "qwen3_qknorm_gqa_kv2")):
        if not os.path.isdir(d):
            continue
        torch.set_num_threads(2)  # oneDNN convolutions are only chosen with >1 thread for batch-1 inputs
        tokens = read_safetensors(os.path.join(d, "inputs.safetensors"))["tokens"].long()
        ref = None
        for kernels in ({"linear": F.linear, "attention": None}, {"linear": F.linear, "attention": attention_sdpa},
                        {"linear": linear_onednn, "attention": attention_onednn}):
            KERNELS.update(kernels)
            _, m = load_model(d, torch.float32)
            lg, loss = m(tokens[:, :-1], tokens[:, 1:])
            loss.backward()
            res = [lg.detach()] + [p.grad for p in m.parameters()]
            if ref is None:
                ref = res
            else:
                err = max(((a - b).abs().max() / b.abs().max()).item() for a, b in zip(res, ref))
                check(err < 1e-4, f"{os.path.basename(d)}: bench kernels {kernels['linear'].__name__}/"
                      f"{kernels['attention'].__name__}: max rel. diff of logits and grads vs reference {err:.1e}")
        KERNELS.update(linear=F.linear, attention=None)
    print("ALL OK" if ok else "SOME CHECKS FAILED")
    return ok

