"""The PyTorch model of the smallinit engine (the one PyTorch model of the project: the parity fixtures, the
benchmark, the trainer and the diagnostics all use it).

The model is the engine's pre-norm, decoder-only Llama layout (Hugging Face tensor names):
    x = E[tokens]; per layer: x += o_proj(gate * attn(rope(q), rope(k), v))   with q,k,v,gate from norm1(x)
                              x += down(silu(gate_proj(m)) * up_proj(m))       with m = norm2(x)
    logits = norm(x) @ lm_head^T (lm_head = E when tie_word_embeddings); loss = mean next-token CE (nats)
norm is "rmsnorm" or "layernorm" (config `norm`), attention gate "none" | "headwise" | "elementwise"
(config `attn_gate`, tensor `self_attn.g_proj.weight`).
Grouped-query attention: k_proj and v_proj have num_key_value_heads (KV) heads; after RoPE each is repeated for
the H/KV query heads that read it (query head h reads kv head h // (H/KV), Hugging Face's repeat_kv).
q/k/v biases (`self_attn.{q,k,v}_proj.bias`, none on o_proj) as model/file.go reads them: model_type qwen2 and
qwen2_moe have them unless `attention_bias` is false (Hugging Face's Qwen2 configs have no attention_bias), any
model_type has them with smallinit's `qkv_bias: true`; Llama's and Qwen3's `attention_bias: true` (an o_proj bias
too) is refused.
QK-norm (Qwen3; on for model_type qwen3 and qwen3_moe or smallinit's `qk_norm: true`, as model/file.go reads it):
each head of q and of k, after the projection (and its bias) and before RoPE, is RMS-normalised over head_dim
with its own gain (`self_attn.q_norm.weight`, `self_attn.k_norm.weight`, both [head_dim], shared by the heads;
eps = rms_norm_eps), Hugging Face's Qwen3RMSNorm; it is an RMSNorm also when `norm` is layernorm.
Mixture of experts (config `model_type` "qwen2_moe" or "qwen3_moe", or `num_experts > 0`, Qwen-MoE tensor names): the FFN of every
block with (l+1) % decoder_sparse_step == 0 is model/moe.go's routed SwiGLU experts: top-k router with lower-index
tie-break, optional norm_topk_prob renormalisation, optional gated shared expert, capacity_factor dropping in
token order; loss = mean CE + (1/L_moe) sum_blocks [alpha E sum_e f_e P_e + z_coef mean lse^2] (see class MoE).
"""
from __future__ import annotations

import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

from .device import device_memory
from .gate import OutputGate
from .kernels import KERNELS
from .files import read_json
from .safetensors import read_model_weights


def _int(d: dict, key: str, default=None, lo: int = 1, hi: int = 1 << 31):
    """d[key] (or default when absent or null) as an int in [lo, hi]; anything else is a ValueError naming the key."""
    v = d.get(key)
    if v is None:
        if default is None:
            raise ValueError(f"{key}: missing")
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{key} = {v!r}: want an integer")
    if not lo <= v <= hi:
        raise ValueError(f"{key} = {v}: must be in [{lo}, {hi}]")
    return v


def _float(d: dict, key: str, default=None, lo: float = 0.0, hi: float = math.inf, lo_open: bool = False):
    """d[key] (or default) as a finite float in [lo, hi] ((lo, hi] with lo_open); errors name the key."""
    v = d.get(key)
    if v is None:
        if default is None:
            raise ValueError(f"{key}: missing")
        return float(default)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{key} = {v!r}: want a number")
    v = float(v)
    if not math.isfinite(v) or v < lo or (lo_open and v == lo) or v > hi:
        raise ValueError(f"{key} = {v}: must be a finite number in {'(' if lo_open else '['}{lo}, {hi}]")
    return v


def _check(ok: bool, msg: str) -> None:
    if not ok:
        raise ValueError(msg)


class Config:
    """The shape and switches of a model, from a config.json dict (Hugging Face fields plus smallinit's). Every
    field is checked: a bad one is a ValueError naming it."""

    def __init__(self, d: dict):
        if not isinstance(d, dict):
            raise ValueError(f"config: a {type(d).__name__}, want a JSON object")
        self.vocab_size, self.hidden_size = _int(d, "vocab_size"), _int(d, "hidden_size")
        self.intermediate_size, self.num_hidden_layers = _int(d, "intermediate_size"), _int(d, "num_hidden_layers", hi=1 << 16)
        self.n_head = _int(d, "num_attention_heads", hi=1 << 16)
        self.n_kv_head = _int(d, "num_key_value_heads", self.n_head, hi=1 << 16)
        _check(self.n_head % self.n_kv_head == 0,
               f"num_key_value_heads = {self.n_kv_head} must divide num_attention_heads = {self.n_head}")
        # q/k/v biases: the default of Hugging Face's Qwen2 and Qwen2-MoE (whose configs have no attention_bias),
        # or smallinit's explicit qkv_bias; Llama's and Qwen3's attention_bias would add an o_proj bias too.
        model_type, attention_bias = d.get("model_type") or "llama", d.get("attention_bias")
        _check(isinstance(model_type, str), f"model_type = {model_type!r}: want a string")
        if model_type in ("qwen2", "qwen2_moe"):
            self.qkv_bias = attention_bias is None or bool(attention_bias)
        else:
            _check(not attention_bias, "attention_bias (an o_proj bias as well as q/k/v biases) is not supported")
            self.qkv_bias = False
        if d.get("qkv_bias") is not None:
            self.qkv_bias = bool(d["qkv_bias"])
        self.head_dim = _int(d, "head_dim", self.hidden_size // self.n_head if self.hidden_size >= self.n_head else 0, hi=1 << 16)
        self.max_position_embeddings = _int(d, "max_position_embeddings", hi=1 << 24)
        self.eps = _float(d, "rms_norm_eps", hi=1.0, lo_open=True)
        self.rope_theta = _float(d, "rope_theta", 10000.0, lo=0.0, lo_open=True)
        # RoPE frequency scaling, Hugging Face's rope_scaling as model/file.go reads it: rope_type (configs older
        # than transformers 4.45: type) "linear" (factor) or "llama3" (factor, low_freq_factor, high_freq_factor,
        # original_max_position_embeddings); absent, null or "default": plain RoPE. None, or the dict of its fields.
        rs = d.get("rope_scaling") or {}
        _check(isinstance(rs, dict), f"rope_scaling = {rs!r}: want an object")
        rope_type = rs.get("rope_type") or rs.get("type")
        _check(rope_type or not any(k in rs for k in ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")),
               f"rope_scaling = {rs!r} names no rope_type (nor type): which scaling is meant is unknown")
        rope_type = rope_type or "default"
        _check(rope_type in ("default", "linear", "llama3"),
               f"rope_scaling rope_type {rope_type!r} is not supported (supported: 'linear', 'llama3', or none/'default')")
        self.rope_scaling = None
        if rope_type != "default":
            factor = _float(rs, "factor", lo=1.0)
            self.rope_scaling = {"rope_type": rope_type, "factor": factor}
            if rope_type == "llama3":
                low, high = _float(rs, "low_freq_factor", lo_open=True), _float(rs, "high_freq_factor", lo_open=True)
                orig = _int(rs, "original_max_position_embeddings")
                _check(low < high, f"rope_scaling llama3: low_freq_factor = {low}, high_freq_factor = {high}, want 0 < low < high")
                self.rope_scaling.update(low_freq_factor=low, high_freq_factor=high, original_max_position_embeddings=orig)
        self.tie_word_embeddings = bool(d.get("tie_word_embeddings", False))
        self.attn_gate, self.norm = d.get("attn_gate") or "none", d.get("norm") or "rmsnorm"
        # QK-norm: Qwen3's default (its configs have no qk_norm field), or smallinit's explicit qk_norm
        self.qk_norm = bool(d.get("qk_norm")) or model_type in ("qwen3", "qwen3_moe")
        _check(self.attn_gate in ("none", "headwise", "elementwise"),
               f"attn_gate = {self.attn_gate!r}: want none, headwise or elementwise")
        _check(self.norm in ("rmsnorm", "layernorm"), f"norm = {self.norm!r}: want rmsnorm or layernorm")
        _check(d.get("hidden_act", "silu") == "silu", f"hidden_act = {d.get('hidden_act')!r}: only silu is supported")
        _check(self.head_dim % 2 == 0, f"head_dim = {self.head_dim}: must be even (RoPE rotates pairs)")
        # Mixture of experts (Qwen-MoE field names, model/file.go): on for model_type qwen2_moe, qwen3_moe or
        # num_experts > 0.
        self.num_experts = _int(d, "num_experts", 0, lo=0, hi=1 << 16)
        self.moe = model_type in ("qwen2_moe", "qwen3_moe") or self.num_experts > 0
        _check(not d.get("mlp_only_layers"), "mlp_only_layers is not supported (use decoder_sparse_step)")
        self.top_k = _int(d, "num_experts_per_tok", 0, lo=0, hi=1 << 16)
        self.expert_ffn = _int(d, "moe_intermediate_size", 0, lo=0)
        self.shared_ffn = _int(d, "shared_expert_intermediate_size", 0, lo=0)
        self.norm_topk = bool(d.get("norm_topk_prob", False))
        self.aux_coef = _float(d, "router_aux_loss_coef", 0.0)
        self.z_coef = _float(d, "router_z_loss_coef", 0.0)
        self.sparse_step = max(_int(d, "decoder_sparse_step", 0, lo=0), 1)
        self.capacity = _float(d, "capacity_factor", 0.0)
        self.bias_rate = _float(d, "router_bias_update_rate", 0.0)  # auxiliary-loss-free balancing (model.BalanceRouters)
        if self.moe:
            _check(1 <= self.top_k <= self.num_experts and self.expert_ffn > 0,
                   f"MoE: want 1 <= num_experts_per_tok ({self.top_k}) <= num_experts ({self.num_experts}) "
                   f"and moe_intermediate_size ({self.expert_ffn}) > 0")

    def num_params(self) -> int:
        """Parameters of the model this config builds (a tied head counted once)."""
        d, V, L, dh = self.hidden_size, self.vocab_size, self.num_hidden_layers, self.head_dim
        hd, kvd = self.n_head * dh, self.n_kv_head * dh
        attn = d * hd + 2 * d * kvd + hd * d + (hd + 2 * kvd if self.qkv_bias else 0)
        attn += {"none": 0, "headwise": self.n_head * d, "elementwise": hd * d}[self.attn_gate]
        attn += 2 * dh if self.qk_norm else 0
        norms = 2 * d * (2 if self.norm == "layernorm" else 1)
        total = 0
        for l in range(L):
            if self.is_moe(l):
                ffn = d * self.num_experts + self.num_experts * 3 * d * self.expert_ffn
                ffn += 3 * d * self.shared_ffn + d if self.shared_ffn else 0
            else:
                ffn = 3 * d * self.intermediate_size
            total += attn + ffn + norms
        total += V * d + d * (2 if self.norm == "layernorm" else 1)
        return total + (0 if self.tie_word_embeddings else V * d)

    def is_moe(self, l):  # block l's FFN is a mixture of experts
        return self.moe and (l + 1) % self.sparse_step == 0

    def num_moe(self):
        return sum(self.is_moe(l) for l in range(self.num_hidden_layers))



class Linear(nn.Linear):
    def __init__(self, d_in, d_out, bias=False):
        super().__init__(d_in, d_out, bias=bias)

    def forward(self, x):
        y = KERNELS["linear"](x, self.weight)
        return y if self.bias is None else y + self.bias


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(d))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rope_inv_freq_hf(dh, theta, scaling, dtype=torch.float32):
    """The rotary frequencies with rope_scaling, op for op as Hugging Face's modeling_rope_utils computes them
    (_compute_default_rope_parameters, then _compute_linear_scaling_rope_parameters or _compute_llama3_parameters;
    attention_factor is 1 for both), evaluated in dtype: float32 is Hugging Face's own precision (and the Go
    engine's ropeInvFreq), the golden values use float64. linear divides every frequency by factor; llama3 keeps
    those whose wavelength 2 pi / f is below original / high_freq_factor, divides those above
    original / low_freq_factor by factor, and blends the ones between, (1 - a) f / factor + a f with
    a = (original / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, dh, 2, dtype=torch.int64).to(dtype) / dh))
    factor = scaling["factor"]
    if scaling["rope_type"] == "linear":
        return inv_freq / factor
    if scaling["rope_type"] != "llama3":
        raise ValueError(f"rope_scaling rope_type {scaling['rope_type']!r} is not supported")
    low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_context_len = scaling["original_max_position_embeddings"]
    low_freq_wavelen, high_freq_wavelen = old_context_len / low, old_context_len / high
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low) / (high - low)
    smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)


def rope_cos_sin(T, dh, theta, dtype, scaling=None):
    """HF Llama rotary table (with rope_scaling: rope_inv_freq_hf's frequencies), computed in float64, then cast.
    Hugging Face and the Go engine compute the frequencies and angles in float32; the float64 table is their exact
    value (selfcheck compares the float32 frequencies with it: same wavelength bands, within float32 rounding)."""
    if scaling is None:
        inv_freq = 1.0 / (theta ** (torch.arange(0, dh, 2, dtype=torch.float64) / dh))
    else:
        inv_freq = rope_inv_freq_hf(dh, theta, scaling, torch.float64)
    emb = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq).repeat(1, 2)  # = cat(freqs, freqs)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rope_bands(c, dtype=torch.float64):
    """Per rotary frequency i < head_dim/2 of a rope_scaling llama3 config: (wavelength 2 pi / f_i of the unscaled
    frequency, band "kept" | "blended" | "divided", blend weight a or None), decided in dtype as Hugging Face's
    _compute_llama3_parameters decides it."""
    sc = c.rope_scaling
    inv = 1.0 / (c.rope_theta ** (torch.arange(0, c.head_dim, 2, dtype=torch.int64).to(dtype) / c.head_dim))
    old, low, high = sc["original_max_position_embeddings"], sc["low_freq_factor"], sc["high_freq_factor"]
    wavelen = 2 * math.pi / inv
    a = (old / wavelen - low) / (high - low)
    out = []
    for w, ai, short, long_ in zip(wavelen.tolist(), a.tolist(), (wavelen < old / high).tolist(), (wavelen > old / low).tolist()):
        out.append((w, "kept", None) if short else (w, "divided", None) if long_ else (w, "blended", ai))
    return out


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def attention_manual(q, k, v):  # [B,H,T,dh] -> [B,H,T,dh], causal
    return attention_probs(q, k) @ v


class CausalAttention(nn.Module):
    """softmax(q k^T / sqrt(dh) + causal mask) v over [B, H, T, dh] (this module's kernel when set, e.g. torch 2's
    fused SDPA by Llama.use_fused_attention, else the kernel table's attention, else the reference formula); a
    module so that forward hooks can observe the attention inputs."""

    def __init__(self):
        super().__init__()
        self.kernel = None

    def forward(self, q, k, v):
        return (self.kernel or KERNELS["attention"] or attention_manual)(q, k, v)


def attention_probs(q, k):
    """The causal attention probabilities [B, H, T, T] of q and k [B, H, T, dh]."""
    T = q.shape[-2]
    att = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    mask = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    return att.masked_fill(mask, float("-inf")).softmax(-1)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c, hd, kvd = c, c.n_head * c.head_dim, c.n_kv_head * c.head_dim
        self.q_proj = Linear(c.hidden_size, hd, bias=c.qkv_bias)
        self.k_proj, self.v_proj = Linear(c.hidden_size, kvd, bias=c.qkv_bias), Linear(c.hidden_size, kvd, bias=c.qkv_bias)
        if c.attn_gate != "none":
            self.g_proj = OutputGate(c.hidden_size, c.n_head, c.head_dim, c.attn_gate)
        self.o_proj = Linear(hd, c.hidden_size)
        self.core = CausalAttention()  # no parameters: a forward hook on it sees q, k, v (diagnostics)
        if c.qk_norm:  # Qwen3: registered after o_proj, as in Hugging Face's Qwen3Attention
            self.q_norm, self.k_norm = RMSNorm(c.head_dim, c.eps), RMSNorm(c.head_dim, c.eps)

    def forward(self, n, cos, sin):
        B, T, _ = n.shape
        H, KV, dh = self.c.n_head, self.c.n_kv_head, self.c.head_dim
        q = self.q_proj(n).view(B, T, H, dh).transpose(1, 2)
        k, v = (p(n).view(B, T, KV, dh).transpose(1, 2) for p in (self.k_proj, self.v_proj))
        if self.c.qk_norm:  # per-head RMSNorm over the last dim (dh), before RoPE
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        if KV != H:  # repeat_kv: kv head j serves query heads j*H/KV ... (j+1)*H/KV - 1
            k, v = k.repeat_interleave(H // KV, dim=1), v.repeat_interleave(H // KV, dim=1)
        y = self.core(q, k, v).transpose(1, 2)  # [B,T,H,dh]
        if self.c.attn_gate != "none":
            y = self.g_proj(n, y)
        return self.o_proj(y.reshape(B, T, H * dh))  # head-major channels: h*dh + j


class MLP(nn.Module):  # SwiGLU: the dense FFN, and each routed or shared expert of an MoE block
    def __init__(self, d, f):
        super().__init__()
        self.gate_proj, self.up_proj = Linear(d, f), Linear(d, f)
        self.down_proj = Linear(f, d)

    def forward(self, m):
        return self.down_proj(F.silu(self.gate_proj(m)) * self.up_proj(m))


def top_k_route(p, k):
    """Indices [N, k] of the k largest entries of each row of p, largest first; on a tie the lower index wins
    (torch.argmax returns the first maximum), as in the Go engine's topK. Not differentiable (discrete)."""
    p = p.detach().clone()
    sel = []
    for _ in range(k):
        i = p.argmax(-1)
        sel.append(i)
        p.scatter_(-1, i[:, None], float("-inf"))
    return torch.stack(sel, -1)


def moe_capacity(c, N):  # per-expert capacity ceil(c·N·k/E) (N·k: no dropping), evaluated as model/moe.go does
    return math.ceil(c.capacity * float(N * c.top_k) / c.num_experts) if c.capacity > 0 else N * c.top_k


class _Stats(dict):
    """An MoE block's routing record; "routed" (per-expert assignments before dropping) stays on the device until
    it is read, so that a training step reads nothing for it."""

    def __getitem__(self, key):
        v = dict.__getitem__(self, key)
        if key == "routed" and torch.is_tensor(v):
            v = v.tolist()
            self[key] = v
        return v


class MoE(nn.Module):
    """Mixture-of-experts FFN, exactly model/moe.go. Per token x (rows in batch-major token order):
    p = softmax(W_r x); S = top-k of p (ties: lower expert index); w_j = p_j (/ sum_S p when norm_topk_prob);
    y = sum_j w_j Expert_j(x) + sigmoid(w_sg x) Shared(x). Capacity c > 0: an expert accepts at most
    ceil(c N k / E) assignments in assignment order (token n, then slot j); later ones are dropped (no output,
    weights not renormalised). Returns (y, aux) with aux = alpha E sum_e f_e P_e + z_coef mean_n lse_n^2,
    f_e = assignments routed to e before dropping / (N k) (a constant), P_e = mean_n p_ne.
    Assignments are grouped by expert with one index_select and one index_add, so each expert is a dense
    SwiGLU over its own rows: the same work as the Go engine."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.gate = Linear(c.hidden_size, c.num_experts)
        if c.bias_rate > 0:  # the selection bias, a parameter as in Go (checkpoints carry it), moved by balance()
            self.gate.register_parameter("e_score_correction_bias", nn.Parameter(torch.zeros(c.num_experts), requires_grad=False))
            self.register_buffer("routed_sum", torch.zeros(c.num_experts, dtype=torch.int64), persistent=False)
        self.experts = nn.ModuleList(MLP(c.hidden_size, c.expert_ffn) for _ in range(c.num_experts))
        if c.shared_ffn > 0:
            self.shared_expert = MLP(c.hidden_size, c.shared_ffn)
            self.shared_expert_gate = Linear(c.hidden_size, 1)
        self.stats = {}

    def forward(self, m):
        c, shape = self.c, m.shape
        x = m.reshape(-1, shape[-1])
        N, E, k = x.shape[0], c.num_experts, c.top_k
        logits = self.gate(x)  # [N, E]
        lse = torch.logsumexp(logits, -1)
        p = torch.exp(logits - lse[:, None])
        bias = getattr(self.gate, "e_score_correction_bias", None)
        sel = top_k_route(p if bias is None else p + bias, k)  # [N, k]; the bias steers the choice, not the weights
        w = p.gather(1, sel)
        if c.norm_topk:
            w = w / w.sum(-1, keepdim=True)
        flat = sel.reshape(-1)  # assignment i = n*k + j
        onehot = F.one_hot(flat, E)  # [N*k, E]
        routed = onehot.sum(0)  # assignments per expert before dropping
        rank = (onehot.cumsum(0) - 1).gather(1, flat[:, None])[:, 0]  # earlier assignments to the same expert
        keep = rank < moe_capacity(c, N)
        # The one host read of the block: the kept assignments per expert, which size each expert's matmul.
        counts = torch.bincount(torch.where(keep, flat, torch.full_like(flat, E)), minlength=E + 1)[:E].tolist()
        kept = sum(counts)
        order = torch.sort(torch.where(keep, flat, torch.full_like(flat, E)), stable=True).indices[:kept]
        rows = torch.div(order, k, rounding_mode="floor")  # token of each sorted assignment
        xg = x.index_select(0, rows)
        yg = torch.cat([self.experts[e](xe) for e, xe in enumerate(xg.split(counts)) if counts[e] > 0])
        y = x.new_zeros(x.shape).index_add(0, rows, yg * w.reshape(-1).index_select(0, order)[:, None])
        if c.shared_ffn > 0:
            y = y + torch.sigmoid(self.shared_expert_gate(x)) * self.shared_expert(x)
        if bias is not None and self.training and torch.is_grad_enabled():
            self.routed_sum += routed  # this step's loads, over its micro-batches (on the device)
        f = routed.to(x.dtype) / (N * k)
        aux = c.aux_coef * E * (f * p.mean(0)).sum() + c.z_coef * (lse * lse).mean()
        self.stats = _Stats(dropped=N * k - kept, routed=routed, sel=sel, p=p.detach())
        return y.reshape(shape), aux


def balance_routers(model, all_reduce=None) -> None:
    """model.BalanceRouters after a training step: each MoE block's selection bias moves by
    b_e += rate * sign(1/E - f_e) (float32), f_e the fraction of the step's assignments routed to e before dropping
    (summed over the step's micro-batches, and over ranks by all_reduce when given: the global batch's load, as
    Go's one forward over the batch). On the device; the loads are then reset."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, MoE) and hasattr(m.gate, "e_score_correction_bias"):
                acc = m.routed_sum
                if all_reduce is not None:
                    all_reduce(acc)
                # f_e < 1/E  <=>  E * count_e < total (exact in integers, as Go's float64 comparison is here)
                s = torch.sign(acc.sum() - m.c.num_experts * acc).to(torch.float32)
                b = m.gate.e_score_correction_bias
                b.add_(s * torch.tensor(m.c.bias_rate, dtype=torch.float32, device=b.device))
                acc.zero_()


def reset_router_loads(model) -> None:
    """Drop the loads of a step that made no update (a skipped non-finite step)."""
    for m in model.modules():
        if isinstance(m, MoE) and hasattr(m, "routed_sum"):
            m.routed_sum.zero_()


def make_norm(c):
    return RMSNorm(c.hidden_size, c.eps) if c.norm == "rmsnorm" else nn.LayerNorm(c.hidden_size, eps=c.eps)


class Block(nn.Module):
    def __init__(self, c, l):
        super().__init__()
        self.input_layernorm, self.self_attn = make_norm(c), Attention(c)
        self.post_attention_layernorm = make_norm(c)
        self.mlp = MoE(c) if c.is_moe(l) else MLP(c.hidden_size, c.intermediate_size)

    def forward(self, x, cos, sin):  # returns (x, auxiliary loss of an MoE block or None)
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        y = self.mlp(self.post_attention_layernorm(x))
        y, aux = y if isinstance(y, tuple) else (y, None)
        return x + y, aux


class Llama(nn.Module):  # parameter names == the safetensors tensor names
    def __init__(self, c):
        super().__init__()
        self.c, self.model = c, nn.Module()
        self.model.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.model.layers = nn.ModuleList(Block(c, l) for l in range(c.num_hidden_layers))
        self.model.norm = make_norm(c)
        if not c.tie_word_embeddings:
            self.lm_head = Linear(c.hidden_size, c.vocab_size)
        self.rope = {}

    def rope_table(self, T, dtype, device):
        """The RoPE cos/sin [T, head_dim] in dtype on device (the device of the activations: CPU, CUDA or meta),
        computed once per (T, dtype, device) in float64 on the CPU and moved there."""
        key = (T, dtype, str(device))
        if key not in self.rope:
            cos, sin = rope_cos_sin(T, self.c.head_dim, self.c.rope_theta, dtype, self.c.rope_scaling)
            self.rope[key] = (cos.to(device), sin.to(device))
        return self.rope[key]

    def use_fused_attention(self, kernel) -> None:
        """Every block's attention through kernel (device.sdpa(): torch 2's fused attention), or None for the
        kernel table's or the reference formula. The gate multiplies the attention's output afterwards, so it
        is unchanged."""
        for block in self.model.layers:
            block.self_attn.core.kernel = kernel

    def forward(self, idx, targets):
        T = idx.shape[1]
        if T > self.c.max_position_embeddings:
            raise ValueError(f"{T} tokens: more than max_position_embeddings = {self.c.max_position_embeddings}")
        x = self.model.embed_tokens(idx)
        cos, sin = self.rope_table(T, x.dtype, x.device)
        auxes = []
        for block in self.model.layers:
            x, aux = block(x, cos, sin)
            if aux is not None:
                auxes.append(aux)
        x = self.model.norm(x)
        head = self.model.embed_tokens.weight if self.c.tie_word_embeddings else self.lm_head.weight
        logits = KERNELS["linear"](x, head)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        self.aux = None
        if auxes:  # MoE: loss = mean CE + (1/L_moe) sum over MoE blocks of the auxiliary loss
            self.aux = sum(auxes) / len(auxes)
            loss = loss + self.aux
        return logits, loss


def read_config(model_dir: str) -> "tuple[Config, dict]":
    """The Config of a model directory's config.json (Hugging Face fields plus smallinit's), and the raw dict.
    Errors are ValueErrors that start with the file's path."""
    path = os.path.join(model_dir, "config.json")
    d = read_json(path)
    try:
        return Config(d), d
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


def check_memory(c: Config, batch: int, what: str = "model", device: "torch.device | None" = None,
                 extra: int = 0, extra_what: str = "") -> None:
    """Refuse, before anything is allocated, a model and batch whose training needs more memory than the
    device has (the GPU's free memory for a CUDA device, the host's for the CPU): weights, gradients and two
    AdamW moments (4 float32 copies), a loading copy, the activations of a batch of max_position_embeddings
    tokens (model.CheckMemory's estimate in Go), and extra bytes the run puts there too (the token files the
    fast step keeps on a GPU)."""
    n = c.num_params()
    T, d, L = c.max_position_embeddings, c.hidden_size, c.num_hidden_layers
    acts = batch * T * (L * (12 * d + 3 * max(c.intermediate_size, c.expert_ffn * max(c.top_k, 1)) + 2 * c.n_head * T) + 3 * c.vocab_size)
    need = 4.0 * (5 * n + acts) + extra
    if device is not None and device.type == "meta":
        return
    limit, where = device_memory(device or torch.device("cpu"))
    if need > limit:
        raise ValueError(f"{what} of {n} parameters with max_position_embeddings = {T} and batch {batch}"
                         f"{' ' + extra_what if extra else ''} needs about {need / 1e9:.3g} GB, more than {where} of memory")


def load_weights(model: nn.Module, sd: dict, where: str) -> None:
    """Copy a state dict read from a file into model: every parameter present, of its shape, in a float dtype
    (an integer tensor is refused, never converted into weights), and no tensor the model does not have."""
    params = dict(model.named_parameters())
    missing = [n for n in params if n not in sd]
    extra = [n for n in sd if n not in params]
    if missing:
        raise ValueError(f"{where}: lacks {len(missing)} tensor(s) of the model: {', '.join(missing[:5])}")
    if extra:
        raise ValueError(f"{where}: {len(extra)} tensor(s) the config does not imply: {', '.join(extra[:5])}")
    with torch.no_grad():
        for n, p in params.items():
            t = sd[n]
            if not t.is_floating_point():
                raise ValueError(f"{where}: tensor {n} is {t.dtype}, want floating-point weights")
            if tuple(t.shape) != tuple(p.shape):
                raise ValueError(f"{where}: tensor {n} has shape {list(t.shape)}, the config implies {list(p.shape)}")
            p.copy_(t.to(p.dtype))


def load_model(model_dir: str, dtype: torch.dtype = torch.float32) -> "tuple[Config, Llama]":
    """Config and Llama model of a smallinit (or Hugging Face Llama/Qwen) model directory, weights in dtype."""
    c, _ = read_config(model_dir)
    check_memory(c, 1, f"{model_dir}: model")
    model = Llama(c).to(dtype)
    load_weights(model, read_model_weights(model_dir), model_dir)
    return c, model

# ----------------------------------------------------------------------------- golden / fixtures

