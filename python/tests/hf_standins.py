"""A Hugging Face-style Llama stand-in (no transformers needed): model.layers[i].{input_layernorm, self_attn,
post_attention_layernorm, mlp}, model.norm, lm_head, a config object, the attention called with keywords
(self_attn(hidden_states=..., attention_mask=...)) and a ModelOutput-like return (logits, loss from labels=)."""
import math
import types

import torch
import torch.nn as nn
import torch.nn.functional as F


class HFConfig:
    def __init__(self, vocab_size=48, hidden_size=16, num_attention_heads=4, num_hidden_layers=2,
                 max_position_embeddings=16, rms_norm_eps=1e-6):
        self.vocab_size, self.hidden_size, self.num_attention_heads = vocab_size, hidden_size, num_attention_heads
        self.num_hidden_layers, self.max_position_embeddings, self.rms_norm_eps = num_hidden_layers, max_position_embeddings, rms_norm_eps


class LlamaRMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight, self.variance_epsilon = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))


class GemmaRMSNorm(nn.Module):
    """Gemma's norm: x_normed * (1 + w), so w = 0 is the unit gain."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.zeros(d)), eps

    def forward(self, x):
        return (1 + self.weight) * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class LlamaAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, H = c.hidden_size, c.num_attention_heads
        self.config, self.num_heads, self.head_dim = c, H, d // H
        self.q_proj, self.k_proj, self.v_proj = (nn.Linear(d, d, bias=False) for _ in range(3))
        self.o_proj = nn.Linear(d, d, bias=False)

    def forward(self, hidden_states, attention_mask=None, position_ids=None):
        B, T, d = hidden_states.shape
        H, dh = self.num_heads, self.head_dim
        q, k, v = (p(hidden_states).view(B, T, H, dh).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
        att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, d)
        return self.o_proj(y), None


class LlamaMLP(nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.gate_proj, self.up_proj, self.down_proj = nn.Linear(d, f, bias=False), nn.Linear(d, f, bias=False), nn.Linear(f, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, c, norm=LlamaRMSNorm):
        super().__init__()
        self.input_layernorm = norm(c.hidden_size, c.rms_norm_eps)
        self.self_attn = LlamaAttention(c)
        self.post_attention_layernorm = norm(c.hidden_size, c.rms_norm_eps)
        self.mlp = LlamaMLP(c.hidden_size, 2 * c.hidden_size)

    def forward(self, hidden_states, attention_mask=None):
        h = hidden_states
        a, _ = self.self_attn(hidden_states=self.input_layernorm(h), attention_mask=attention_mask)
        h = h + a
        return (h + self.mlp(self.post_attention_layernorm(h)),)


class LlamaModel(nn.Module):
    def __init__(self, c, norm=LlamaRMSNorm):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList(LlamaDecoderLayer(c, norm) for _ in range(c.num_hidden_layers))
        self.norm = norm(c.hidden_size, c.rms_norm_eps)


class LlamaForCausalLM(nn.Module):
    def __init__(self, c=None, norm=LlamaRMSNorm, tie=False):
        super().__init__()
        self.config = c = c or HFConfig()
        self.model = LlamaModel(c, norm)
        self.lm_head = nn.Linear(c.hidden_size, c.vocab_size, bias=False)
        if tie:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, input_ids, labels=None):
        h = self.model.embed_tokens(input_ids)
        for layer in self.model.layers:
            h = layer(h, attention_mask=None)[0]
        logits = self.lm_head(self.model.norm(h))
        loss = None
        if labels is not None:  # Hugging Face shifts the labels inside
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1))
        return types.SimpleNamespace(logits=logits, loss=loss)
