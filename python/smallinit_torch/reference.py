#!/usr/bin/python3
"""smallinit_torch.reference: PyTorch reference for the smallinit Go engine (parity fixtures + speed baseline).

Run as /usr/bin/python3 python/torchref.py SUBCOMMAND (a shim) or python -m smallinit_torch.reference SUBCOMMAND.
The model itself is smallinit_torch.model (see its docstring).

Subcommands (run with /usr/bin/python3 python/torchref.py SUBCOMMAND ...):
  golden   --model DIR --inputs INPUTS.safetensors --out GOLDEN.safetensors
           Load DIR/{config.json,model.safetensors}, upcast to float64, read `tokens` (I32 [B,T+1]) and
           write `loss` (F64 [1], MoE: including the auxiliary loss, also written alone as `aux_loss`),
           `logits` (F32 [B,T,V]) and `grad.<name>` (F32) for every parameter.
  fixtures [--out testdata/parity]
           Regenerate the committed parity fixtures (one directory per case in CASES below, each with
           config.json, model.safetensors, inputs.safetensors, golden.safetensors) and their README.md.
  selfcheck [--dir testdata/parity]
           Check the fixtures independently: a naive loop-per-head (MoE: loop-per-token) float64
           re-implementation (logits, loss and central finite differences vs the stored gradients),
           torch.autograd.gradcheck on micro models (MoE included), float32 vs float64 loss and routing,
           loss ~ ln(V) at gamma=1, the top-k tie rule, and the bench kernels vs the reference.
  adamw    [--out testdata/adamw]
           Write adamw.safetensors: 20 float32 steps of torch.optim.AdamW with clip_grad_norm_(1.0) and the
           engine's cosine schedule on pseudo-random gradients (inputs, lr, params after every step, moments).
  bench    --preset tiny|small|medium|tiny-moe|small-moe [--steps 20] [--warmup 3] [--threads 2] [--default-settings]
           [--precision f32|bf16]
           [--gate none|headwise|elementwise] [--norm rmsnorm|layernorm] [--tied] [--matmul blas|onednn] [--json]
           Train on random tokens in float32 (AdamW lr 3e-4, betas (0.9,0.95), eps 1e-8, wd 0.1, clip 1.0)
           and print median tokens/s, step/forward/backward/optimizer seconds and model FLOP/s
           (FLOPs/token = 6*N_matmul + 12*L*T*d, share of 225 GFLOP/s). "Best settings" (default):
           OMP_WAIT_POLICY=PASSIVE and OPENBLAS_CORETYPE from the CPU flags (SkylakeX with AVX-512, Haswell with
           AVX2; both set before torch is imported), torch.set_num_threads(threads),
           torch's private fused scaled-dot-product attention, foreach AdamW; --default-settings uses
           torch's defaults (threads, manual attention, for-loop AdamW).
           --matmul onednn runs every GEMM (linear layers and attention) as oneDNN 1x1 convolutions
           instead of BLAS: same math, but Debian's torch uses the generic libblas.so.3, which is the
           slow netlib reference BLAS unless OpenBLAS is installed (the bench reports which one it loaded).
           The -moe presets (E=8, top-2, expert width d_ff/2, norm_topk_prob, alpha 0.01) group each expert's
           tokens with one index_select and one index_add; FLOPs count the active parameters only.
"""
import argparse
import ctypes
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from .kernels import KERNELS
from .model import *  # noqa: F401,F403 (the reference computations use the whole model module)
from .model import attention_manual
from .safetensors import DTYPES, read_safetensors, write_safetensors


def init_weights(model, gamma, gen):
    """Matrices W[d_out, d_in] ~ N(0, d_in^(-2 gamma)) (embedding: d_in = hidden_size); gains 1 + 0.1 N(0,1)
    (QK-norm's self_attn.{q,k}_norm.weight included), biases (layernorm and q/k/v) 0.1 N(0,1)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            z = torch.randn(p.shape, generator=gen, dtype=torch.float32).to(p.dtype)
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.1 * z)
            elif name.endswith(".bias"):
                p.copy_(0.1 * z)
            else:
                p.copy_(z * p.shape[1] ** -gamma)


def golden(model_dir, inputs_path, out_path=None, with_stats=False):
    torch.set_num_threads(1)  # fixed reduction order: deterministic output
    c, model = load_model(model_dir, torch.float64)
    tokens = read_safetensors(inputs_path)["tokens"].long()
    logits, loss = model(tokens[:, :-1], tokens[:, 1:])
    loss.backward()
    out = {"loss": loss.detach().reshape(1), "logits": logits.detach().float()}
    if model.aux is not None:  # MoE: the auxiliary part of loss (already included in it)
        out["aux_loss"] = model.aux.detach().reshape(1)
    # an expert that receives no token has no gradient: zero
    out.update({"grad." + n: (p.grad if p.grad is not None else torch.zeros_like(p)).float() for n, p in model.named_parameters()})
    if out_path:
        write_safetensors(out_path, out, {"format": "pt"})
    return (out, moe_stats(model)) if with_stats else out


def moe_stats(model):
    """Per MoE block: dropped assignments, assignments per expert, and the smallest gap between a token's k-th
    and (k+1)-th router probability (the Go engine routes on float32 probabilities, so the gap must be large
    compared with float32 rounding for both to pick the same experts)."""
    out = []
    for l, block in enumerate(model.model.layers):
        if isinstance(block.mlp, MoE):
            st, k = block.mlp.stats, block.mlp.c.top_k
            ps = st["p"].sort(-1, descending=True).values
            gap = (ps[:, k - 1] - ps[:, k]).min().item() if k < ps.shape[1] else float("inf")
            out.append({"layer": l, "dropped": st["dropped"], "routed": st["routed"], "min_gap": gap})
    return out


BATCH = 2
MOE_CAPACITY_SEED = 30  # routes [13, 5, 14] tokens, capacity 11: experts 0 and 2 drop 2 + 3 assignments
MOE_GQA_SEED = 11  # the first seed tried: routes [2, 28, 21, 13]; [10, 26, 7, 21], min top-k gap 3.4e-3
# name: (seed, gamma, config overrides)
CASES = {
    "base": (1, 0.5, {}),
    "gamma1_eps1e-12_elementwise": (2, 1.0, {"rms_norm_eps": 1e-12, "attn_gate": "elementwise"}),
    "headwise": (3, 0.5, {"attn_gate": "headwise"}),
    "layernorm_elementwise": (4, 0.5, {"norm": "layernorm", "attn_gate": "elementwise"}),
    "tied": (5, 0.75, {"tie_word_embeddings": True}),
    "rope_theta500_gamma1": (6, 1.0, {"attn_gate": "headwise", "rope_theta": 500.0}),
    "moe_top2_shared": (7, 0.5, dict(architectures=["Qwen2MoeForCausalLM"], model_type="qwen2_moe", attn_gate="elementwise",
                                     num_experts=4, num_experts_per_tok=2, moe_intermediate_size=24,
                                     shared_expert_intermediate_size=32, norm_topk_prob=True, router_aux_loss_coef=0.3,
                                     router_z_loss_coef=0.05, decoder_sparse_step=1, capacity_factor=0.0)),
    # seed chosen so that the capacity limit drops assignments (checked by `fixtures` and `selfcheck`)
    "moe_top1_capacity_sparse2": (MOE_CAPACITY_SEED, 0.5, dict(
        architectures=["Qwen2MoeForCausalLM"], model_type="qwen2_moe", num_experts=3, num_experts_per_tok=1,
        moe_intermediate_size=16, shared_expert_intermediate_size=0, norm_topk_prob=False, router_aux_loss_coef=0.1,
        router_z_loss_coef=0.0, decoder_sparse_step=2, capacity_factor=1.0)),
    # grouped-query attention and q/k/v biases. A Qwen2 config as Hugging Face writes it (no attention_bias:
    # the biases are Qwen2's default), multi-query attention, smallinit's qkv_bias on a llama config, and the
    # Qwen2-MoE attention (GQA with q/k/v biases).
    "gqa_kv2_qwen2_bias": (8, 0.5, dict(architectures=["Qwen2ForCausalLM"], model_type="qwen2", num_key_value_heads=2,
                                        attention_bias=None, mlp_bias=None)),
    "mqa_kv1_gamma1_eps1e-12_elementwise": (9, 1.0, dict(num_key_value_heads=1, rms_norm_eps=1e-12, attn_gate="elementwise")),
    "gqa_kv2_qkv_bias_layernorm_headwise_tied": (10, 0.75, dict(num_key_value_heads=2, qkv_bias=True, norm="layernorm",
                                                                 attn_gate="headwise", tie_word_embeddings=True)),
    "moe_gqa_kv2_qkv_bias": (MOE_GQA_SEED, 0.5, dict(
        architectures=["Qwen2MoeForCausalLM"], model_type="qwen2_moe", num_key_value_heads=2, attention_bias=None,
        num_experts=4, num_experts_per_tok=2, moe_intermediate_size=24, shared_expert_intermediate_size=32,
        norm_topk_prob=False, router_aux_loss_coef=0.3, router_z_loss_coef=0.0, decoder_sparse_step=1, capacity_factor=0.0)),
    # Qwen3's QK-norm (per-head RMSNorm of q and k before RoPE) in a config as Hugging Face writes Qwen3 (model_type
    # qwen3 implies it: no qk_norm key), with grouped-query attention, Qwen3's eps 1e-6 and, as in Qwen3, a head_dim
    # that is not hidden_size / num_attention_heads (q_proj [H*12, 32], o_proj [32, H*12]).
    "qwen3_qknorm_gqa_kv2": (12, 0.5, dict(architectures=["Qwen3ForCausalLM"], model_type="qwen3", num_key_value_heads=2,
                                          head_dim=12, rms_norm_eps=1e-6)),
    # Llama 3.1's rope_scaling (factor 8, low_freq_factor 1, high_freq_factor 4 and rope_theta 500000 as in Llama 3.1)
    # with an original context of 256 instead of 8192, so that the four frequencies of head_dim 8 fall in all three
    # wavelength bands (6.3: kept; 167: blended, a = 0.18; 4443 and 118143: divided by 8) and the scaling changes
    # the result at T = 16 (`fixtures` asserts the bands; `selfcheck` and model/parity_test.go that ignoring
    # rope_scaling changes the loss, resp. the logits, by far more than the Go parity tolerance).
    "llama3_rope_scaling_gqa": (13, 0.5, dict(num_key_value_heads=2, rope_theta=500000.0, rope_scaling=dict(
        rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=256))),
}


def hf_config(**over):
    d = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 64, "hidden_size": 32,
         "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 8,
         "max_position_embeddings": 16, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "tie_word_embeddings": False, "hidden_act": "silu",
         "attention_bias": False, "mlp_bias": False, "torch_dtype": "float32", "attn_gate": "none", "norm": "rmsnorm"}
    d.update(over)
    return {k: v for k, v in d.items() if v is not None}  # None: the key is absent (e.g. Qwen2's attention_bias)


FIXTURE_README = """# Parity fixtures

Generated by `python/torchref.py` (PyTorch {torch}) with

    /usr/bin/python3 python/torchref.py fixtures --out testdata/parity

and checked with `/usr/bin/python3 python/torchref.py selfcheck --dir testdata/parity`.
Do not edit by hand: change `CASES` in the script and regenerate (the command is deterministic: regenerating
reproduces every file byte for byte).

Sizes: V={vocab_size}, d={hidden_size}, H={num_attention_heads}, L={num_hidden_layers}, d_ff={intermediate_size},
T={max_position_embeddings}, B={batch}, dh (head_dim) {head_dim} unless the first table says otherwise; KV (num_key_value_heads)
as in the tables.

Each case directory holds:

- `config.json`: Hugging Face Llama config plus `attn_gate` and `norm` (MoE cases: Qwen-MoE fields, below;
  grouped-query, bias, QK-norm and RoPE-scaling cases: below).
- `model.safetensors`: float32 weights, Hugging Face names. Drawn with `torch.Generator().manual_seed(seed)`, in
  `named_parameters()` order: every matrix W[d_out, d_in] ~ N(0, d_in^(-2 gamma)) (embedding and lm_head:
  d_in = hidden_size), norm gains (QK-norm's included) 1 + 0.1 N(0,1), layernorm and q/k/v biases 0.1 N(0,1).
- `inputs.safetensors`: `tokens`, I32 [B, T+1], uniform in [0, V) (generator seeded with seed + 1000).
  Inputs are `tokens[:, :T]`, targets `tokens[:, 1:]`.
- `golden.safetensors`: computed in float64 from the float32 weights (`torchref.py golden`):
  `loss` (F64 [1], mean cross-entropy over the B*T positions, nats, plus the MoE auxiliary loss), `logits`
  (F32 [B,T,V]) and `grad.<tensor name>` (F32, the parameter's shape) for every parameter (tied: the embedding
  gradient includes the head's contribution). MoE cases also hold `aux_loss` (F64 [1], the auxiliary part of `loss`).

| case | seed | gamma | norm | eps | attn_gate | tied | rope_theta | rope_scaling | KV | dh | qkv bias | qk norm | loss |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
{rows}

## RoPE scaling (Llama 3.1)

`llama3_rope_scaling_gqa` has Hugging Face's `rope_scaling` object as Llama 3.1 writes it, `{{"rope_type": "llama3",
"factor": s, "low_freq_factor": low, "high_freq_factor": high, "original_max_position_embeddings": C}}` (older configs
spell `rope_type` as `type`; `"default"` or no object is plain RoPE; `"linear"` divides every frequency by s; other
types are refused). The frequencies f_i = rope_theta^(-2i/dh) are scaled as transformers' `_compute_llama3_parameters`
(Meta's `apply_scaling`) does: with the wavelength w_i = 2 pi / f_i, frequencies with w_i < C/high are kept, those with
w_i > C/low are divided by s, and those between are blended, (1 - a) f_i / s + a f_i with a = (C/w_i - low) / (high - low).
The golden values use the exact (float64) frequencies; Hugging Face and the Go engine compute them in float32 (the
same bands, within float32 rounding: `selfcheck` compares). The case keeps Llama 3.1's s, low, high and rope_theta but
shrinks C so that its head_dim's frequencies fall in all three bands and the scaling changes the result at T = {max_position_embeddings}
(ignoring rope_scaling would change its loss by {rope_loss_change:.1e} relative, {rope_margin:.0f} times the Go parity test's loss
tolerance 1e-5):

| case | rope_scaling | i | wavelength 2 pi / f_i | band | a |
|---|---|---|---|---|---|
{rope_rows}

## Grouped-query attention and q/k/v biases

With `num_key_value_heads` KV < H, `k_proj` and `v_proj` are [KV*dh, d] and query head h reads key/value head
h // (H/KV) (Hugging Face's `repeat_kv`, here `repeat_interleave` after RoPE). q/k/v biases are
`self_attn.{{q,k,v}}_proj.bias` ([H*dh], [KV*dh], [KV*dh]; no o_proj bias), added by the projection, before RoPE.
`gqa_kv2_qwen2_bias` and `moe_gqa_kv2_qkv_bias` are configs as Hugging Face writes Qwen2 and Qwen2-MoE (no
`attention_bias` key: q/k/v biases are those model types' default); `gqa_kv2_qkv_bias_layernorm_headwise_tied`
turns them on in a llama config with smallinit's `qkv_bias: true`.

## QK-norm (Qwen3)

`qwen3_qknorm_gqa_kv2` is a config as Hugging Face writes Qwen3 (`model_type: "qwen3"`, which implies QK-norm; the
Go engine writes smallinit's `qk_norm: true` as well, and reads either): each head of q (H heads) and of k (KV
heads), right after `q_proj`/`k_proj`, is RMS-normalised over its dh channels, x / sqrt(mean(x^2) + eps) * gain,
with the gains `self_attn.q_norm.weight` and `self_attn.k_norm.weight` ([dh] each, shared by all heads of q,
resp. k; eps = `rms_norm_eps`), and then rotated by RoPE (Hugging Face's Qwen3RMSNorm in Qwen3Attention). Its
head_dim, 12, is not hidden_size / num_attention_heads, as in Qwen3 (q_proj [H*dh, d], o_proj [d, H*dh]).

## Mixture-of-experts cases

`config.json` has `model_type: "qwen2_moe"` and the fields `num_experts` (E), `num_experts_per_tok` (k),
`moe_intermediate_size` (expert width), `shared_expert_intermediate_size` (0: no shared expert), `norm_topk_prob`,
`router_aux_loss_coef` (alpha), `router_z_loss_coef`, `decoder_sparse_step` (block l is MoE iff (l+1) % step == 0;
other blocks keep the dense `intermediate_size` MLP) and `capacity_factor` (0: no dropping). Extra tensors per MoE
block: `mlp.gate.weight` [E, d] (router), `mlp.experts.{{e}}.{{gate,up,down}}_proj.weight`, and with a shared expert
`mlp.shared_expert.{{gate,up,down}}_proj.weight` and `mlp.shared_expert_gate.weight` [1, d]. The semantics are
model/moe.go's: p = softmax(W_r x); top-k by probability (ties: lower expert index); w_j = p_j, renormalised
when `norm_topk_prob`; y = sum_j w_j Expert_j(x) + sigmoid(w_sg x) Shared(x); with capacity c an expert takes at most
ceil(c N k / E) assignments in token order (N = B T tokens, row-major over batch and position, then slot j) and
drops the rest; loss = mean CE + (1/L_moe) sum over MoE blocks of [alpha E sum_e f_e P_e + z_coef mean_n lse_n^2]
(f_e: fraction of the N k assignments routed to e before dropping, a constant; P_e: mean router probability).

"dropped" counts the assignments the capacity limit drops (per MoE block); "min gap" is the smallest difference,
over tokens, between the k-th and (k+1)-th router probability: it is far above float32 rounding, so the float32
Go engine routes every token to the same experts as this float64 reference. The seed of the capacity case was
picked (seeds 8 to 39 scanned) so that the capacity limit drops assignments while every expert still receives
tokens: with N = 32 tokens, k = 1 and E = 3 the limit is ceil(1.0 * 32 / 3) = 11, and experts 0 and 2 (13 and 14
tokens routed) drop 2 + 3 assignments. `fixtures` asserts, for every capacity case, that something is dropped, and
for every MoE case, that every expert gets a token and that the min gap exceeds 1e-4.

| case | seed | gamma | attn_gate | KV | qkv bias | E | k | width | shared | norm_topk | alpha | z | sparse step | capacity | routed per expert | dropped | min gap | aux loss | loss |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
{moe_rows}
"""


def make_case(out_dir, name):
    """Write case `name` of CASES (config, weights, inputs, golden) and return (config dict, golden, model stats)."""
    seed, gamma, over = CASES[name]
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    cfg = hf_config(**over)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    model = Llama(Config(cfg))
    init_weights(model, gamma, torch.Generator().manual_seed(seed))
    write_safetensors(os.path.join(d, "model.safetensors"), model.state_dict(),
                      {"format": "pt", "seed": seed, "init_gamma": gamma})
    gen = torch.Generator().manual_seed(seed + 1000)
    tokens = torch.randint(0, cfg["vocab_size"], (BATCH, cfg["max_position_embeddings"] + 1), generator=gen)
    write_safetensors(os.path.join(d, "inputs.safetensors"), {"tokens": tokens.to(torch.int32)}, {"format": "pt"})
    g, stats = golden(d, os.path.join(d, "inputs.safetensors"), os.path.join(d, "golden.safetensors"), with_stats=True)
    return cfg, g, stats


def fixtures(out_dir):
    rows, moe_rows, rope_rows, rope_loss_change = [], [], [], []
    for name, (seed, gamma, over) in CASES.items():
        cfg, g, stats = make_case(out_dir, name)
        loss = g["loss"].item()
        c = Config(cfg)
        kv_bias = f"{c.n_kv_head} | {str(c.qkv_bias).lower()}"
        sc = c.rope_scaling
        scaling = "none" if sc is None else f"{sc['rope_type']} (s={sc['factor']:g})"
        if sc is not None and sc["rope_type"] == "llama3":
            bands = rope_bands(c)
            print(f"{name}: llama3 rope_scaling bands: " + ", ".join(
                f"wavelength {w:.1f} {b}" + (f" (a = {a:.4f})" if a is not None else "") for w, b, a in bands))
            assert {b for _, b, _ in bands} == {"kept", "blended", "divided"}, f"{name}: not all three bands occur"
            assert [b for _, b, _ in bands] == [b for _, b, _ in rope_bands(c, torch.float32)], f"{name}: float32 bands differ"
            assert all(a is None or 0.05 < a < 0.95 for _, _, a in bands), f"{name}: a blended frequency is near a band edge"
            rope_rows += [f"| `{name}` | llama3: s={sc['factor']:g}, low={sc['low_freq_factor']:g}, high={sc['high_freq_factor']:g}, "
                          f"C={sc['original_max_position_embeddings']} | {i} | {w:.1f} | {b} | {'' if a is None else f'{a:.4f}'} |"
                          for i, (w, b, a) in enumerate(bands)]
            rope_loss_change.append(scaling_loss_change(os.path.join(out_dir, name), g))
        if not cfg.get("num_experts"):
            rows.append(f"| `{name}` | {seed} | {gamma} | {cfg['norm']} | {cfg['rms_norm_eps']:g} | {cfg['attn_gate']} | "
                        f"{str(cfg['tie_word_embeddings']).lower()} | {cfg['rope_theta']:g} | {scaling} | {c.n_kv_head} | "
                        f"{c.head_dim} | {str(c.qkv_bias).lower()} | {str(c.qk_norm).lower()} | {loss:.6f} |")
            print(f"{name:30s} loss {loss:.10f}")
            continue
        if cfg.get("capacity_factor"):
            assert sum(s["dropped"] for s in stats) > 0, f"{name}: no assignment dropped, pick another seed"
        assert min(s["min_gap"] for s in stats) > 1e-4, f"{name}: a near-tie in routing, pick another seed"
        assert all(min(s["routed"]) > 0 for s in stats), f"{name}: an expert receives no token, pick another seed"
        moe_rows.append(
            f"| `{name}` | {seed} | {gamma} | {cfg['attn_gate']} | {kv_bias} | {cfg['num_experts']} | {cfg['num_experts_per_tok']} | "
            f"{cfg['moe_intermediate_size']} | {cfg['shared_expert_intermediate_size'] or 'none'} | "
            f"{str(cfg['norm_topk_prob']).lower()} | {cfg['router_aux_loss_coef']:g} | {cfg['router_z_loss_coef']:g} | "
            f"{cfg['decoder_sparse_step']} | "
            f"{'%g (limit %d)' % (cfg['capacity_factor'], moe_capacity(Config(cfg), BATCH * cfg['max_position_embeddings'])) if cfg['capacity_factor'] else 'none'} | "
            f"{'; '.join(str(s['routed']) for s in stats)} | {', '.join(str(s['dropped']) for s in stats)} | "
            f"{min(s['min_gap'] for s in stats):.1e} | {g['aux_loss'].item():.6f} | {loss:.6f} |")
        print(f"{name:30s} loss {loss:.10f} (aux {g['aux_loss'].item():.10f}), MoE blocks {stats}")
    with open(os.path.join(out_dir, "README.md"), "w") as f:
        f.write(FIXTURE_README.format(torch=torch.__version__, batch=BATCH, rows="\n".join(rows), moe_rows="\n".join(moe_rows),
                                      rope_rows="\n".join(rope_rows), rope_loss_change=min(rope_loss_change), rope_margin=min(rope_loss_change) / 1e-5,
                                      **hf_config()))


def scaling_loss_change(case_dir, g):
    """Relative change of the golden loss of a rope_scaling case if its rope_scaling were ignored (plain RoPE)."""
    c, model = load_model(case_dir, torch.float64)
    model.c.rope_scaling = None
    tokens = read_safetensors(os.path.join(case_dir, "inputs.safetensors"))["tokens"].long()
    with torch.no_grad():
        _, loss = model(tokens[:, :-1], tokens[:, 1:])
    L = g["loss"].item()
    return abs(loss.item() - L) / L

# ----------------------------------------------------------------------------- selfcheck


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
    except AssertionError as e:
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

# ----------------------------------------------------------------------------- bench


def attention_sdpa(q, k, v):  # torch 1.13's private fused attention returns (out, weights)
    return F._scaled_dot_product_attention(q, k, v, None, 0.0, False, True)[0]


def linear_onednn(x, w):  # x @ w^T as a oneDNN 1x1 convolution over the (1, d_in, tokens) layout
    y = F.conv1d(x.reshape(-1, x.shape[-1]).t().unsqueeze(0), w.unsqueeze(-1))  # [1, d_out, N]
    return y.view(w.shape[0], -1).t().reshape(*x.shape[:-1], w.shape[0])


def attention_onednn(q, k, v):  # causal attention with both batched GEMMs as grouped 1x1 convolutions
    B, H, T, dh = q.shape
    G = B * H
    s = F.conv1d(k.transpose(-1, -2).reshape(1, G * dh, T), q.reshape(G * T, dh, 1), groups=G)  # [1, G*T(t), T(s)] = q k^T
    mask = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    p = (s.view(B, H, T, T) / math.sqrt(dh)).masked_fill(mask, float("-inf")).softmax(-1)
    return F.conv1d(v.reshape(1, G * T, dh), p.reshape(G * T, T, 1), groups=G).view(B, H, T, dh)  # p v


PRESETS = {  # identical to the Go engine
    "tiny": dict(vocab_size=4096, hidden_size=128, num_hidden_layers=4, num_attention_heads=4, max_position_embeddings=256,
                 batch=16, intermediate_size=384),
    "small": dict(vocab_size=4096, hidden_size=256, num_hidden_layers=6, num_attention_heads=8, max_position_embeddings=256,
                  batch=16, intermediate_size=704),
    "medium": dict(vocab_size=4096, hidden_size=512, num_hidden_layers=8, num_attention_heads=8, max_position_embeddings=512,
                   batch=8, intermediate_size=1408),
}
for _name in ("tiny", "small"):  # MoE presets: every FFN -> 8 experts, top-2, expert width d_ff/2 (as the Go engine)
    _p = PRESETS[_name]
    PRESETS[_name + "-moe"] = dict(_p, architectures=["Qwen2MoeForCausalLM"], model_type="qwen2_moe", num_experts=8,
                                   num_experts_per_tok=2, moe_intermediate_size=_p["intermediate_size"] // 2,
                                   norm_topk_prob=True, router_aux_loss_coef=0.01, decoder_sparse_step=1)


def matmul_params(c):
    """N_matmul as model.Config.MatmulParams: per-token active matrix parameters (MoE blocks: router, k routed
    experts and the shared expert with its gate) plus the LM head."""
    d, a, kvd = c.hidden_size, c.n_head * c.head_dim, c.n_kv_head * c.head_dim
    gate_rows = {"none": 0, "headwise": c.n_head, "elementwise": a}[c.attn_gate]
    n = 0
    for l in range(c.num_hidden_layers):
        n += d * (a + 2 * kvd) + d * gate_rows + a * d  # q, k, v (KV heads), gate, o; biases are not multiply-adds
        if c.is_moe(l):
            n += d * c.num_experts + c.top_k * 3 * d * c.expert_ffn + 3 * d * c.shared_ffn + (d if c.shared_ffn else 0)
        else:
            n += 3 * d * c.intermediate_size
    return n + c.vocab_size * d
PEAK_GFLOPS = 225.0


def blas_library():  # which libblas.so.3 the dynamic linker resolved (Debian alternatives: netlib or OpenBLAS)
    with open("/proc/self/maps") as f:
        libs = {line.split()[-1] for line in f if os.path.basename(line.split()[-1]).startswith(("libblas", "libopenblas"))}
    core = ""
    for path in sorted(libs):  # OpenBLAS names the kernel it runs: Prescott here means the slow SSE3 fallback
        if os.path.basename(path).startswith("libopenblas"):
            try:
                lib = ctypes.CDLL(path)
                lib.openblas_get_corename.restype = ctypes.c_char_p
                core = f", core {lib.openblas_get_corename().decode()}"
            except (OSError, AttributeError):
                pass
    return (", ".join(sorted(libs)) or "none") + core


def bench(a):
    best = not a.default_settings
    if best:
        torch.set_num_threads(a.threads)
    KERNELS["attention"] = attention_sdpa if best else None
    if a.matmul == "onednn":
        KERNELS.update(linear=linear_onednn, attention=attention_onednn)
    p = dict(PRESETS[a.preset])
    B = p.pop("batch")
    p["head_dim"], p["num_key_value_heads"] = p["hidden_size"] // p["num_attention_heads"], p["num_attention_heads"]
    c = Config(hf_config(**p, attn_gate=a.gate, norm=a.norm, tie_word_embeddings=a.tied))
    torch.manual_seed(0)
    model = Llama(c)
    init_weights(model, 0.5, torch.Generator().manual_seed(0))
    matrices = [q for n, q in model.named_parameters() if q.dim() == 2]
    others = [q for n, q in model.named_parameters() if q.dim() != 2]
    opt = torch.optim.AdamW([{"params": matrices, "weight_decay": 0.1}, {"params": others, "weight_decay": 0.0}],
                            lr=3e-4, betas=(0.9, 0.95), eps=1e-8, foreach=True if best else None)
    T, d, L = c.max_position_embeddings, c.hidden_size, c.num_hidden_layers
    n_matmul = matmul_params(c)
    flops_per_token = 6 * n_matmul + 12 * L * T * d
    gen = torch.Generator().manual_seed(1)
    times = []
    for step in range(a.warmup + a.steps):
        tokens = torch.randint(0, c.vocab_size, (B, T + 1), generator=gen)
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            _, loss = model(tokens[:, :-1], tokens[:, 1:])
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        t3 = time.perf_counter()
        if step >= a.warmup:
            times.append((t3 - t0, t1 - t0, t2 - t1, t3 - t2))
        if not a.json:
            print(f"step {step:3d}{' (warmup)' if step < a.warmup else ''}: loss {loss.item():.4f} {t3 - t0:.3f}s", file=sys.stderr)
    step_s, fwd_s, bwd_s, opt_s = (statistics.median(x) for x in zip(*times))
    tps = statistics.median(B * T / t[0] for t in times)
    gflops = flops_per_token * tps / 1e9
    r = {"tool": "pytorch", "torch": torch.__version__, "preset": a.preset, "tokens_per_s": round(tps, 1),
         "step_s": step_s, "forward_s": fwd_s, "backward_s": bwd_s, "optimizer_s": opt_s, "model_gflops": round(gflops, 3),
         "threads": torch.get_num_threads(), "settings": "best" if best else "default", "matmul": a.matmul,
         "gate": a.gate, "steps": a.steps, "blas": blas_library(), "n_matmul": n_matmul, "precision": a.precision}
    if c.moe:
        r.update(experts=c.num_experts, top_k=c.top_k, expert_ffn=c.expert_ffn)
    if a.json:
        print(json.dumps(r))
        return
    attn = (KERNELS["attention"] or attention_manual).__name__
    moe = (f" MoE: E={c.num_experts} k={c.top_k} expert d_ff={c.expert_ffn} norm_topk={c.norm_topk} "
           f"aux={c.aux_coef:g} (experts grouped with index_select/index_add)," if c.moe else "")
    print(f"pytorch {torch.__version__}, preset {a.preset}: V={c.vocab_size} d={d} L={L} H={c.n_head} T={T} B={B} "
          f"d_ff={c.intermediate_size} gate={a.gate} norm={a.norm} tied={a.tied},{moe} N_matmul={n_matmul:,} (active), "
          f"{sum(q.numel() for q in model.parameters()):,} parameters")
    print(f"settings {r['settings']}: threads {r['threads']}, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}, "
          f"attention {attn}, AdamW foreach={best or 'default'}, matmul {a.matmul} ({r['blas']})")
    print(f"median over {a.steps} steps: {tps:,.0f} tokens/s, step {step_s:.4f} s "
          f"(forward {fwd_s:.4f} s, backward {bwd_s:.4f} s, optimizer {opt_s:.4f} s)")
    print(f"model FLOP/s: {gflops:.2f} GFLOP/s = {100 * gflops / PEAK_GFLOPS:.1f}% of {PEAK_GFLOPS:g} GFLOP/s "
          f"({flops_per_token / 1e6:.2f} MFLOP/token)")

# ----------------------------------------------------------------------------- adamw fixture

ADAMW = dict(peak_lr=1e-2, warmup=5, min_ratio=0.1, total=20, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1, clip=1.0)
# gradient norm targets per step: about half of the steps exceed the clip threshold 1.0
ADAMW_NORMS = [0.5, 3.0, 0.9, 1.6, 0.2, 5.0, 1.2, 0.7, 2.2, 0.4, 1.4, 0.6, 8.0, 0.3, 1.8, 0.8, 2.6, 0.05, 1.1, 0.95]


def cosine_lr(step, peak, warmup, min_ratio, total):
    """optim/schedule.go Schedule.LR for kind "cosine", step 0-based: linear warmup, then cosine to min_ratio*peak."""
    if step < warmup:
        return peak * (step + 1) / warmup
    floor = min_ratio * peak
    span = total - warmup
    if span <= 1:
        return peak
    frac = min(1.0, (step - warmup) / (span - 1))
    return floor + (peak - floor) * 0.5 * (1 + math.cos(math.pi * frac))


def adamw_fixture(out_dir):
    """Train three float32 tensors for ADAMW["total"] steps with torch.optim.AdamW (single-tensor path, as on CPU by
    default), the cosine schedule and clip_grad_norm_, on pseudo-random gradients; write every input and state."""
    torch.set_num_threads(1)
    h = ADAMW
    gen = torch.Generator().manual_seed(2024)
    shapes = {"w": (37, 29), "b": (29,), "e": (64, 16)}  # w, e: matrices (decayed); b: a norm gain (not decayed)
    init = {"w": 0.05 * torch.randn(shapes["w"], generator=gen), "b": 1 + 0.1 * torch.randn(shapes["b"], generator=gen),
            "e": 0.05 * torch.randn(shapes["e"], generator=gen)}
    params = {n: v.clone().requires_grad_() for n, v in init.items()}
    opt = torch.optim.AdamW([{"params": [params["w"], params["e"]], "weight_decay": h["weight_decay"]},
                             {"params": [params["b"]], "weight_decay": 0.0}],
                            lr=h["peak_lr"], betas=(h["beta1"], h["beta2"]), eps=h["eps"], foreach=False)
    out = {"init." + n: v for n, v in init.items()}
    lrs, norms, coefs = [], [], []
    n_total = sum(v.numel() for v in init.values())
    for step in range(h["total"]):
        sigma = ADAMW_NORMS[step] / math.sqrt(n_total)
        grads = {"w": sigma * torch.randn(shapes["w"], generator=gen),
                 # b: tiny gradients, so that sqrt(v) is comparable with eps and the eps placement matters
                 "b": 2e-8 * torch.randn(shapes["b"], generator=gen),
                 # e: an embedding: only the rows of "seen tokens" get a gradient (the others are exactly 0)
                 "e": sigma * torch.randn(shapes["e"], generator=gen) * (torch.rand(64, 1, generator=gen) < 0.5)}
        for n, g in grads.items():
            out[f"grad.{step}.{n}"] = g.clone()
            params[n].grad = g.clone()
        total = torch.nn.utils.clip_grad_norm_(list(params.values()), h["clip"])  # float32, computed before clipping
        norm = total.item()
        assert abs(norm - h["clip"]) > 1e-2, f"step {step}: gradient norm {norm} too close to the clip threshold"
        coef = torch.clamp(h["clip"] / (total + 1e-6), max=1.0)  # what clip_grad_norm_ multiplied the gradients by
        assert all(torch.equal(params[n].grad, grads[n] * coef) for n in grads)
        coefs.append(coef.item())
        lr = cosine_lr(step, h["peak_lr"], h["warmup"], h["min_ratio"], h["total"])
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()
        lrs.append(lr)
        norms.append(norm)
        for n, p in params.items():
            out[f"param.{step}.{n}"] = p.detach().clone()
    for n, p in params.items():
        out["exp_avg." + n] = opt.state[p]["exp_avg"].clone()
        out["exp_avg_sq." + n] = opt.state[p]["exp_avg_sq"].clone()
    out["lr"] = torch.tensor(lrs, dtype=torch.float64)
    out["grad_norm"] = torch.tensor(norms, dtype=torch.float64)
    out["clip_coef"] = torch.tensor(coefs, dtype=torch.float64)
    os.makedirs(out_dir, exist_ok=True)
    meta = dict(h, format="pt", torch=torch.__version__, adamw="torch.optim.AdamW(foreach=False)",
                clip="torch.nn.utils.clip_grad_norm_", schedule="cosine")
    write_safetensors(os.path.join(out_dir, "adamw.safetensors"), out, meta)
    for step in range(h["total"]):
        print(f"step {step:2d}: lr {lrs[step]:.6e}  grad norm {norms[step]:.4f}  clip coef {coefs[step]:.6f}")

# ----------------------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("golden")
    g.add_argument("--model", required=True)
    g.add_argument("--inputs", required=True)
    g.add_argument("--out", required=True)
    sub.add_parser("fixtures").add_argument("--out", default="testdata/parity")
    sub.add_parser("selfcheck").add_argument("--dir", default="testdata/parity")
    sub.add_parser("adamw").add_argument("--out", default="testdata/adamw")
    b = sub.add_parser("bench")
    b.add_argument("--preset", choices=PRESETS, required=True)
    b.add_argument("--steps", type=int, default=20)
    b.add_argument("--warmup", type=int, default=3)
    b.add_argument("--threads", type=int, default=2)
    b.add_argument("--default-settings", action="store_true")
    b.add_argument("--gate", choices=("none", "headwise", "elementwise"), default="none")
    b.add_argument("--norm", choices=("rmsnorm", "layernorm"), default="rmsnorm")
    b.add_argument("--tied", action="store_true")
    b.add_argument("--matmul", choices=("blas", "onednn"), default="blas")
    b.add_argument("--precision", choices=("f32", "bf16"), default="f32",
                   help="bf16: the forward under torch.autocast('cpu', bfloat16) (PyTorch's mixed precision)")
    b.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.cmd == "golden":
        golden(a.model, a.inputs, a.out)
    elif a.cmd == "fixtures":
        fixtures(a.out)
    elif a.cmd == "selfcheck":
        sys.exit(0 if selfcheck(a.dir) else 1)
    elif a.cmd == "adamw":
        adamw_fixture(a.out)
    else:
        bench(a)


if __name__ == "__main__":
    main()
