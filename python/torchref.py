#!/usr/bin/python3
"""torchref.py: PyTorch reference for the smallinit Go engine (parity fixtures + speed baseline).

Needs only Python 3 and PyTorch (Debian: `apt-get install -y python3-torch`, torch 1.13); no numpy,
no safetensors/transformers packages (a tiny safetensors reader/writer lives below).

The model is the engine's pre-norm, decoder-only Llama layout (Hugging Face tensor names):
    x = E[tokens]; per layer: x += o_proj(gate * attn(rope(q), rope(k), v))   with q,k,v,gate from norm1(x)
                              x += down(silu(gate_proj(m)) * up_proj(m))       with m = norm2(x)
    logits = norm(x) @ lm_head^T (lm_head = E when tie_word_embeddings); loss = mean next-token CE (nats)
norm is "rmsnorm" or "layernorm" (config `norm`), attention gate "none" | "headwise" | "elementwise"
(config `attn_gate`, tensor `self_attn.g_proj.weight`).

Subcommands (run with /usr/bin/python3 python/torchref.py SUBCOMMAND ...):
  golden   --model DIR --inputs INPUTS.safetensors --out GOLDEN.safetensors
           Load DIR/{config.json,model.safetensors}, upcast to float64, read `tokens` (I32 [B,T+1]) and
           write `loss` (F64 [1]), `logits` (F32 [B,T,V]) and `grad.<name>` (F32) for every parameter.
  fixtures [--out testdata/parity]
           Regenerate the committed parity fixtures (one directory per case in CASES below, each with
           config.json, model.safetensors, inputs.safetensors, golden.safetensors) and their README.md.
  selfcheck [--dir testdata/parity]
           Check the fixtures independently: a naive loop-per-head float64 re-implementation (logits, loss
           and central finite differences vs the stored gradients), torch.autograd.gradcheck on micro
           models, float32 vs float64 loss, loss ~ ln(V) at gamma=1, and the bench kernels vs the reference.
  bench    --preset tiny|small|medium [--steps 20] [--warmup 3] [--threads 2] [--default-settings]
           [--gate none|headwise|elementwise] [--norm rmsnorm|layernorm] [--tied] [--matmul blas|onednn] [--json]
           Train on random tokens in float32 (AdamW lr 3e-4, betas (0.9,0.95), eps 1e-8, wd 0.1, clip 1.0)
           and print median tokens/s, step/forward/backward/optimizer seconds and model FLOP/s
           (FLOPs/token = 6*N_matmul + 12*L*T*d, share of 225 GFLOP/s). "Best settings" (default):
           OMP_WAIT_POLICY=PASSIVE (set before torch is imported), torch.set_num_threads(threads),
           torch's private fused scaled-dot-product attention, foreach AdamW; --default-settings uses
           torch's defaults (threads, manual attention, for-loop AdamW).
           --matmul onednn runs every GEMM (linear layers and attention) as oneDNN 1x1 convolutions
           instead of BLAS: same math, but Debian's torch uses the generic libblas.so.3, which is the
           slow netlib reference BLAS unless OpenBLAS is installed (the bench reports which one it loaded).
"""
import os
import sys

if len(sys.argv) > 1 and sys.argv[1] == "bench" and "--default-settings" not in sys.argv:
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"  # libgomp reads it when torch is loaded, so before `import torch`

import argparse
import ctypes
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# ----------------------------------------------------------------------------- safetensors

DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8}
assert sys.byteorder == "little", "safetensors data is little-endian"


def read_safetensors(path):
    with open(path, "rb") as f:
        buf = f.read()
    n = int.from_bytes(buf[:8], "little")
    header = json.loads(buf[8:8 + n])
    header.pop("__metadata__", None)
    data = bytearray(buf[8 + n:])
    out = {}
    for name, info in header.items():
        dtype, shape, (begin, end) = DTYPES[info["dtype"]], info["shape"], info["data_offsets"]
        count = math.prod(shape)
        assert end - begin == count * torch.empty(0, dtype=dtype).element_size(), name
        t = torch.frombuffer(data, dtype=dtype, count=count, offset=begin) if count else torch.empty(0, dtype=dtype)
        out[name] = t.clone().reshape(shape)
    return out


def write_safetensors(path, tensors, metadata=None):
    names = {v: k for k, v in DTYPES.items()}
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        nbytes = t.numel() * t.element_size()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + nbytes]}
        blobs.append(ctypes.string_at(t.data_ptr(), nbytes) if nbytes else b"")
        offset += nbytes
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + b"".join(blobs))

# ----------------------------------------------------------------------------- model


class Config:
    def __init__(self, d):
        self.vocab_size, self.hidden_size = d["vocab_size"], d["hidden_size"]
        self.intermediate_size, self.num_hidden_layers = d["intermediate_size"], d["num_hidden_layers"]
        self.n_head = d["num_attention_heads"]
        assert d.get("num_key_value_heads", self.n_head) == self.n_head, "grouped-query attention is not supported"
        self.head_dim = d.get("head_dim") or self.hidden_size // self.n_head
        self.max_position_embeddings = d["max_position_embeddings"]
        self.eps, self.rope_theta = d["rms_norm_eps"], d.get("rope_theta", 10000.0)
        self.tie_word_embeddings = d.get("tie_word_embeddings", False)
        self.attn_gate, self.norm = d.get("attn_gate") or "none", d.get("norm") or "rmsnorm"
        assert self.attn_gate in ("none", "headwise", "elementwise") and self.norm in ("rmsnorm", "layernorm")
        assert d.get("hidden_act", "silu") == "silu" and self.head_dim % 2 == 0


# Kernels: the bench may swap these for faster ones computing the same math.
KERNELS = {"linear": F.linear, "attention": None}


class Linear(nn.Linear):
    def __init__(self, d_in, d_out):
        super().__init__(d_in, d_out, bias=False)

    def forward(self, x):
        return KERNELS["linear"](x, self.weight)


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(d))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rope_cos_sin(T, dh, theta, dtype):  # HF Llama rotary table, computed in float64 then cast
    inv_freq = 1.0 / (theta ** (torch.arange(0, dh, 2, dtype=torch.float64) / dh))
    emb = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq).repeat(1, 2)  # = cat(freqs, freqs)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def attention_manual(q, k, v):  # [B,H,T,dh] -> [B,H,T,dh], causal
    T = q.shape[-2]
    att = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    mask = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    return att.masked_fill(mask, float("-inf")).softmax(-1) @ v


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c, hd = c, c.n_head * c.head_dim
        self.q_proj, self.k_proj, self.v_proj = Linear(c.hidden_size, hd), Linear(c.hidden_size, hd), Linear(c.hidden_size, hd)
        if c.attn_gate != "none":
            self.g_proj = Linear(c.hidden_size, hd if c.attn_gate == "elementwise" else c.n_head)
        self.o_proj = Linear(hd, c.hidden_size)

    def forward(self, n, cos, sin):
        B, T, _ = n.shape
        H, dh = self.c.n_head, self.c.head_dim
        q, k, v = (p(n).view(B, T, H, dh).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        y = (KERNELS["attention"] or attention_manual)(q, k, v).transpose(1, 2)  # [B,T,H,dh]
        if self.c.attn_gate == "headwise":
            y = y * torch.sigmoid(self.g_proj(n)).unsqueeze(-1)
        y = y.reshape(B, T, H * dh)  # head-major channels: h*dh + j
        if self.c.attn_gate == "elementwise":
            y = y * torch.sigmoid(self.g_proj(n))
        return self.o_proj(y)


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_proj, self.up_proj = Linear(c.hidden_size, c.intermediate_size), Linear(c.hidden_size, c.intermediate_size)
        self.down_proj = Linear(c.intermediate_size, c.hidden_size)

    def forward(self, m):
        return self.down_proj(F.silu(self.gate_proj(m)) * self.up_proj(m))


def make_norm(c):
    return RMSNorm(c.hidden_size, c.eps) if c.norm == "rmsnorm" else nn.LayerNorm(c.hidden_size, eps=c.eps)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm, self.self_attn = make_norm(c), Attention(c)
        self.post_attention_layernorm, self.mlp = make_norm(c), MLP(c)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class Llama(nn.Module):  # parameter names == the safetensors tensor names
    def __init__(self, c):
        super().__init__()
        self.c, self.model = c, nn.Module()
        self.model.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.model.layers = nn.ModuleList(Block(c) for _ in range(c.num_hidden_layers))
        self.model.norm = make_norm(c)
        if not c.tie_word_embeddings:
            self.lm_head = Linear(c.hidden_size, c.vocab_size)
        self.rope = {}

    def forward(self, idx, targets):
        T = idx.shape[1]
        assert T <= self.c.max_position_embeddings
        x = self.model.embed_tokens(idx)
        key = (T, x.dtype)
        if key not in self.rope:
            self.rope[key] = rope_cos_sin(T, self.c.head_dim, self.c.rope_theta, x.dtype)
        cos, sin = self.rope[key]
        for block in self.model.layers:
            x = block(x, cos, sin)
        x = self.model.norm(x)
        head = self.model.embed_tokens.weight if self.c.tie_word_embeddings else self.lm_head.weight
        logits = KERNELS["linear"](x, head)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return logits, loss


def init_weights(model, gamma, gen):
    """Matrices W[d_out, d_in] ~ N(0, d_in^(-2 gamma)) (embedding: d_in = hidden_size); gains 1 + 0.1 N(0,1), biases 0.1 N(0,1)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            z = torch.randn(p.shape, generator=gen, dtype=torch.float32).to(p.dtype)
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.1 * z)
            elif name.endswith("norm.bias"):
                p.copy_(0.1 * z)
            else:
                p.copy_(z * p.shape[1] ** -gamma)


def load_model(model_dir, dtype):
    with open(os.path.join(model_dir, "config.json")) as f:
        c = Config(json.load(f))
    model = Llama(c).to(dtype)
    sd = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    model.load_state_dict({k: v.to(dtype) for k, v in sd.items()}, strict=True)
    return c, model

# ----------------------------------------------------------------------------- golden / fixtures


def golden(model_dir, inputs_path, out_path=None):
    torch.set_num_threads(1)  # fixed reduction order: deterministic output
    c, model = load_model(model_dir, torch.float64)
    tokens = read_safetensors(inputs_path)["tokens"].long()
    logits, loss = model(tokens[:, :-1], tokens[:, 1:])
    loss.backward()
    out = {"loss": loss.detach().reshape(1), "logits": logits.detach().float()}
    out.update({"grad." + n: p.grad.float() for n, p in model.named_parameters()})
    if out_path:
        write_safetensors(out_path, out, {"format": "pt"})
    return out


BATCH = 2
# name: (seed, gamma, config overrides)
CASES = {
    "base": (1, 0.5, {}),
    "gamma1_eps1e-12_elementwise": (2, 1.0, {"rms_norm_eps": 1e-12, "attn_gate": "elementwise"}),
    "headwise": (3, 0.5, {"attn_gate": "headwise"}),
    "layernorm_elementwise": (4, 0.5, {"norm": "layernorm", "attn_gate": "elementwise"}),
    "tied": (5, 0.75, {"tie_word_embeddings": True}),
    "rope_theta500_gamma1": (6, 1.0, {"attn_gate": "headwise", "rope_theta": 500.0}),
}


def hf_config(**over):
    d = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 64, "hidden_size": 32,
         "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 8,
         "max_position_embeddings": 16, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "tie_word_embeddings": False, "hidden_act": "silu",
         "attention_bias": False, "mlp_bias": False, "torch_dtype": "float32", "attn_gate": "none", "norm": "rmsnorm"}
    d.update(over)
    return d


FIXTURE_README = """# Parity fixtures

Generated by `python/torchref.py` (PyTorch {torch}) with

    /usr/bin/python3 python/torchref.py fixtures --out testdata/parity

and checked with `/usr/bin/python3 python/torchref.py selfcheck --dir testdata/parity`.
Do not edit by hand: change `CASES` in the script and regenerate.

Sizes: V={vocab_size}, d={hidden_size}, H={num_attention_heads} (dh={head_dim}), L={num_hidden_layers}, d_ff={intermediate_size},
T={max_position_embeddings}, B={batch}.

Each case directory holds:

- `config.json`: Hugging Face Llama config plus `attn_gate` and `norm`.
- `model.safetensors`: float32 weights, Hugging Face names. Drawn with `torch.Generator().manual_seed(seed)`, in
  `named_parameters()` order: every matrix W[d_out, d_in] ~ N(0, d_in^(-2 gamma)) (embedding and lm_head:
  d_in = hidden_size), norm gains 1 + 0.1 N(0,1), layernorm biases 0.1 N(0,1).
- `inputs.safetensors`: `tokens`, I32 [B, T+1], uniform in [0, V) (generator seeded with seed + 1000).
  Inputs are `tokens[:, :T]`, targets `tokens[:, 1:]`.
- `golden.safetensors`: computed in float64 from the float32 weights (`torchref.py golden`):
  `loss` (F64 [1], mean cross-entropy over the B*T positions, nats), `logits` (F32 [B,T,V]) and
  `grad.<tensor name>` (F32, the parameter's shape) for every parameter (tied: the embedding gradient
  includes the head's contribution).

| case | seed | gamma | norm | eps | attn_gate | tied | rope_theta | loss |
|---|---|---|---|---|---|---|---|---|
{rows}
"""


def fixtures(out_dir):
    rows = []
    for name, (seed, gamma, over) in CASES.items():
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
        g = golden(d, os.path.join(d, "inputs.safetensors"), os.path.join(d, "golden.safetensors"))
        loss = g["loss"].item()
        rows.append(f"| `{name}` | {seed} | {gamma} | {cfg['norm']} | {cfg['rms_norm_eps']:g} | {cfg['attn_gate']} | "
                    f"{str(cfg['tie_word_embeddings']).lower()} | {cfg['rope_theta']:g} | {loss:.6f} |")
        print(f"{name:30s} loss {loss:.10f}")
    with open(os.path.join(out_dir, "README.md"), "w") as f:
        f.write(FIXTURE_README.format(torch=torch.__version__, batch=BATCH, rows="\n".join(rows), **hf_config()))

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

    ang = torch.arange(T, dtype=torch.float64)[:, None] * c.rope_theta ** (-2.0 * torch.arange(half, dtype=torch.float64) / dh)

    def rot(z):  # z [B,T,dh]: pairs (i, i+dh/2) rotated by angle t * theta^(-2i/dh)
        a, b = z[..., :half], z[..., half:]
        return torch.cat((a * ang.cos() - b * ang.sin(), b * ang.cos() + a * ang.sin()), -1)

    causal = torch.tril(torch.ones(T, T)) > 0
    x = P["model.embed_tokens.weight"][inp]
    for l in range(c.num_hidden_layers):
        pre = f"model.layers.{l}."
        n = norm(x, pre + "input_layernorm")
        q, k, v = (n @ P[pre + f"self_attn.{p}_proj.weight"].T for p in "qkv")
        g = 1 / (1 + torch.exp(-(n @ P[pre + "self_attn.g_proj.weight"].T))) if c.attn_gate != "none" else None
        heads = []
        for h in range(c.n_head):
            sl = slice(h * dh, (h + 1) * dh)
            s = rot(q[..., sl]) @ rot(k[..., sl]).transpose(1, 2) / math.sqrt(dh)
            s = torch.where(causal, s, torch.full_like(s, -math.inf))
            e = torch.exp(s - s.max(-1, keepdim=True).values)
            yh = (e / e.sum(-1, keepdim=True)) @ v[..., sl]
            heads.append(yh * g[..., h:h + 1] if c.attn_gate == "headwise" else yh)
        y = torch.cat(heads, -1)
        if c.attn_gate == "elementwise":
            y = y * g
        x = x + y @ P[pre + "self_attn.o_proj.weight"].T
        m = norm(x, pre + "post_attention_layernorm")
        a = m @ P[pre + "mlp.gate_proj.weight"].T
        x = x + (a / (1 + torch.exp(-a)) * (m @ P[pre + "mlp.up_proj.weight"].T)) @ P[pre + "mlp.down_proj.weight"].T
    head = P["model.embed_tokens.weight"] if c.tie_word_embeddings else P["lm_head.weight"]
    logits = norm(x, "model.norm") @ head.T
    mx = logits.max(-1, keepdim=True).values
    lse = mx[..., 0] + torch.log(torch.exp(logits - mx).sum(-1))
    return (lse - logits.gather(-1, tgt[..., None])[..., 0]).mean(), logits


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
        if "gamma1" in name:
            check(abs(L - math.log(c.vocab_size)) < 0.1, f"{name}: gamma=1 loss {L:.4f} ~ ln(V) = {math.log(c.vocab_size):.4f}")

    # 2. torch.autograd.gradcheck on micro models covering every feature
    for over in ({}, {"attn_gate": "headwise", "rope_theta": 500.0}, {"attn_gate": "elementwise", "norm": "layernorm"},
                 {"tie_word_embeddings": True, "rms_norm_eps": 1e-12}):
        cfg = hf_config(**over)
        cfg.update(vocab_size=11, hidden_size=8, intermediate_size=12, num_attention_heads=2, head_dim=4,
                   num_key_value_heads=2, max_position_embeddings=6)
        model = Llama(Config(cfg)).double()
        init_weights(model, 0.5, torch.Generator().manual_seed(7))
        tokens = torch.randint(0, 11, (2, 7), generator=torch.Generator().manual_seed(8))
        names = [n for n, _ in model.named_parameters()]
        params = tuple(p.detach().clone().requires_grad_() for p in model.parameters())

        def f(*ps):
            return torch.nn.utils.stateless.functional_call(model, dict(zip(names, ps)), (tokens[:, :-1], tokens[:, 1:]))[1]
        check(torch.autograd.gradcheck(f, params, eps=1e-6, atol=1e-8, rtol=1e-6),
              f"gradcheck micro model {over or 'base'} ({sum(p.numel() for p in params)} parameters)")

    # 3. bench kernels (fused attention, oneDNN GEMMs) give the same float32 results as the reference
    d = os.path.join(fixture_dir, "layernorm_elementwise")
    if os.path.isdir(d):
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
                check(err < 1e-4, f"bench kernels {kernels['linear'].__name__}/{kernels['attention'].__name__}: "
                      f"max rel. diff of logits and grads vs reference {err:.1e}")
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
PEAK_GFLOPS = 225.0


def blas_library():  # which libblas.so.3 the dynamic linker resolved (Debian alternatives: netlib or OpenBLAS)
    with open("/proc/self/maps") as f:
        libs = {line.split()[-1] for line in f if os.path.basename(line.split()[-1]).startswith(("libblas", "libopenblas"))}
    return ", ".join(sorted(libs)) or "none"


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
    n_matmul = sum(q.numel() for n, q in model.named_parameters() if q.dim() == 2 and n.startswith("model.layers.")) + c.vocab_size * d
    flops_per_token = 6 * n_matmul + 12 * L * T * d
    gen = torch.Generator().manual_seed(1)
    times = []
    for step in range(a.warmup + a.steps):
        tokens = torch.randint(0, c.vocab_size, (B, T + 1), generator=gen)
        t0 = time.perf_counter()
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
         "gate": a.gate, "steps": a.steps, "blas": blas_library()}
    if a.json:
        print(json.dumps(r))
        return
    attn = (KERNELS["attention"] or attention_manual).__name__
    print(f"pytorch {torch.__version__}, preset {a.preset}: V={c.vocab_size} d={d} L={L} H={c.n_head} T={T} B={B} "
          f"d_ff={c.intermediate_size} gate={a.gate} norm={a.norm} tied={a.tied}, N_matmul={n_matmul:,}")
    print(f"settings {r['settings']}: threads {r['threads']}, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}, "
          f"attention {attn}, AdamW foreach={best or 'default'}, matmul {a.matmul} ({r['blas']})")
    print(f"median over {a.steps} steps: {tps:,.0f} tokens/s, step {step_s:.4f} s "
          f"(forward {fwd_s:.4f} s, backward {bwd_s:.4f} s, optimizer {opt_s:.4f} s)")
    print(f"model FLOP/s: {gflops:.2f} GFLOP/s = {100 * gflops / PEAK_GFLOPS:.1f}% of {PEAK_GFLOPS:g} GFLOP/s "
          f"({flops_per_token / 1e6:.2f} MFLOP/token)")

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
    b.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.cmd == "golden":
        golden(a.model, a.inputs, a.out)
    elif a.cmd == "fixtures":
        fixtures(a.out)
    elif a.cmd == "selfcheck":
        sys.exit(0 if selfcheck(a.dir) else 1)
    else:
        bench(a)


if __name__ == "__main__":
    main()
