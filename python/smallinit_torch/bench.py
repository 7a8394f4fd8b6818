"""bench: the PyTorch speed baseline (AdamW training steps in float32 on random tokens; see
smallinit_torch.reference for the options), and the faster kernels it can swap in."""
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

from .device import sdpa
from .kernels import KERNELS  # noqa: F401
from .model import *  # noqa: F401,F403 (the reference computations use the whole model module)
from .model import attention_manual  # noqa: F401
from .safetensors import DTYPES, read_safetensors, write_safetensors  # noqa: F401
from .fixtures import hf_config, init_weights



def attention_sdpa(q, k, v):
    """torch 2's public fused causal attention (device.sdpa); on torch 1.x, which has no public one, the
    reference formula (a private API is never called, so the code runs on both torch lines)."""
    f = sdpa()
    return f(q, k, v) if f is not None else attention_manual(q, k, v)


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
    """N_matmul as arch.Config.MatmulParams: per-token active matrix parameters (MoE blocks: router, k routed
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

