"""Stand-in models with other projects' parameter names (no transformers or torchtitan needed): torchtitan's
Llama 3 / Qwen3 layout and GPT-2 (Hugging Face Conv1D, transposed) / nanoGPT (nn.Linear)."""
import torch
import torch.nn as nn


class TitanAttention(nn.Module):
    def __init__(self, d, H, dh, qk_norm):
        super().__init__()
        self.wq, self.wk, self.wv = nn.Linear(d, H * dh, bias=False), nn.Linear(d, H * dh, bias=False), nn.Linear(d, H * dh, bias=False)
        self.wo = nn.Linear(H * dh, d, bias=False)
        if qk_norm:
            self.q_norm, self.k_norm = TitanRMSNorm(dh), TitanRMSNorm(dh)


class TitanRMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.randn(d))


class TitanFF(nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.w1, self.w2, self.w3 = nn.Linear(d, f, bias=False), nn.Linear(f, d, bias=False), nn.Linear(d, f, bias=False)


class TitanBlock(nn.Module):
    def __init__(self, d, H, dh, f, qk_norm):
        super().__init__()
        self.attention = TitanAttention(d, H, dh, qk_norm)
        self.attention_norm, self.ffn_norm = TitanRMSNorm(d), TitanRMSNorm(d)
        self.feed_forward = TitanFF(d, f)


class Titan(nn.Module):
    """torchtitan's Transformer names: tok_embeddings, layers.N.{attention.wq..wo, attention_norm, ffn_norm,
    feed_forward.w1..w3}, norm, output (Qwen3: attention.q_norm / k_norm)."""

    def __init__(self, V, d, L, H, dh, f, qk_norm=False):
        super().__init__()
        self.tok_embeddings = nn.Embedding(V, d)
        self.layers = nn.ModuleDict({str(l): TitanBlock(d, H, dh, f, qk_norm) for l in range(L)})
        self.norm = TitanRMSNorm(d)
        self.output = nn.Linear(d, V, bias=False)

    def to_hf(self):
        """The state dict under the engine's (Hugging Face Llama) names, for `smallinit audit`."""
        m = {"tok_embeddings.weight": "model.embed_tokens.weight", "norm.weight": "model.norm.weight",
             "output.weight": "lm_head.weight"}
        inner = {"attention.wq": "self_attn.q_proj", "attention.wk": "self_attn.k_proj", "attention.wv": "self_attn.v_proj",
                 "attention.wo": "self_attn.o_proj", "attention.q_norm": "self_attn.q_norm", "attention.k_norm": "self_attn.k_norm",
                 "attention_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm", "feed_forward.w1": "mlp.gate_proj",
                 "feed_forward.w2": "mlp.down_proj", "feed_forward.w3": "mlp.up_proj"}
        out = {}
        for n, p in self.named_parameters():
            if n in m:
                out[m[n]] = p.detach()
                continue
            _, l, rest = n.split(".", 2)
            mod, leaf = rest.rsplit(".", 1)
            out[f"model.layers.{l}.{inner[mod]}.{leaf}"] = p.detach()
        return out


class Conv1D(nn.Module):
    """Hugging Face's GPT-2 Conv1D: y = x @ W + b with W [nx (d_in), nf (d_out)]."""

    def __init__(self, nf, nx):
        super().__init__()
        self.weight, self.bias = nn.Parameter(torch.randn(nx, nf)), nn.Parameter(torch.randn(nf))


class GPT2Block(nn.Module):
    def __init__(self, d, conv):
        super().__init__()
        lin = (lambda i, o: Conv1D(o, i)) if conv else (lambda i, o: nn.Linear(i, o))
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn, self.mlp = nn.Module(), nn.Module()
        self.attn.c_attn, self.attn.c_proj = lin(d, 3 * d), lin(d, d)
        self.mlp.c_fc, self.mlp.c_proj = lin(d, 4 * d), lin(4 * d, d)


class GPT2(nn.Module):
    """GPT-2 names: transformer.{wte, wpe, h.N.{ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj}, ln_f},
    lm_head tied to wte. conv=True: Hugging Face's Conv1D layout; False: nanoGPT's nn.Linear."""

    def __init__(self, V, T, d, L, conv=True):
        super().__init__()
        self.transformer = nn.Module()
        self.transformer.wte, self.transformer.wpe = nn.Embedding(V, d), nn.Embedding(T, d)
        self.transformer.h = nn.ModuleList(GPT2Block(d, conv) for _ in range(L))
        self.transformer.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, V, bias=False)
        self.lm_head.weight = self.transformer.wte.weight
