"""The study's two fixes as drop-ins for any Llama-style PyTorch model: the query-dependent sigmoid output gate
per head (`OutputGate`, the `self_attn.g_proj` of smallinit's checkpoints) and a setter of every RMSNorm's ε
(`set_rmsnorm_eps`, the study's ε = 1e-12 instead of 1e-5).

Using the gate in your own attention module (y: the attention output per head, before o_proj):

    self.g_proj = OutputGate(hidden_size, n_heads, head_dim, "elementwise")   # or "headwise"
    ...
    y = attention(q, k, v).transpose(1, 2)      # [B, T, H, head_dim]
    y = self.g_proj(x_normed, y)                # y * sigmoid(W_g x_normed), per channel or per head
    out = self.o_proj(y.reshape(B, T, H * head_dim))

The weight is [H*head_dim, d] (elementwise) or [H, d] (headwise), no bias, exactly the tensor
`model.layers.N.self_attn.g_proj.weight` that smallinit writes and reads, so checkpoints round-trip."""
import torch
import torch.nn as nn

from .kernels import KERNELS

GATE_MODES = ("headwise", "elementwise")


class OutputGate(nn.Linear):
    """y <- y * sigmoid(W_g n): n is the attention block's normed input [..., d], y the attention output per
    head [..., H, head_dim]. Elementwise: one gate per channel (W_g [H*head_dim, d]); headwise: one per head
    (W_g [H, d]). A plain nn.Linear underneath (its weight is the checkpoint tensor; `gamma_init_` classifies it
    as class "gate")."""

    def __init__(self, hidden_size, n_heads, head_dim, mode="elementwise"):
        if mode not in GATE_MODES:
            raise ValueError(f"OutputGate mode {mode!r}: want one of {GATE_MODES}")
        super().__init__(hidden_size, n_heads * head_dim if mode == "elementwise" else n_heads, bias=False)
        self.mode, self.n_heads, self.head_dim = mode, n_heads, head_dim

    def gate_values(self, n):
        """sigmoid(W_g n): [..., H*head_dim] (elementwise) or [..., H] (headwise)."""
        return torch.sigmoid(KERNELS["linear"](n, self.weight))

    def forward(self, n, y):
        g = self.gate_values(n)
        if self.mode == "headwise":
            return y * g.unsqueeze(-1)
        return y * g.view(*g.shape[:-1], self.n_heads, self.head_dim)


def set_rmsnorm_eps(model, eps=1e-12, layernorm=False):
    """Set the ε of every RMSNorm in model (and of every LayerNorm with layernorm=True); returns the names of the
    modules changed. It recognises modules whose class name contains "RMSNorm" and that keep ε as `eps`
    (smallinit, torchtitan, torch.nn.RMSNorm) or `variance_epsilon` (Hugging Face's LlamaRMSNorm, Qwen2/Qwen3,
    Mistral). A model with no such module raises, rather than silently keeping its ε."""
    changed = []
    for name, m in model.named_modules():
        kind = type(m).__name__
        if "RMSNorm" in kind or (layernorm and isinstance(m, nn.LayerNorm)):
            for attr in ("variance_epsilon", "eps"):
                if hasattr(m, attr):
                    setattr(m, attr, float(eps))
                    changed.append(name)
                    break
    if not changed:
        raise ValueError("set_rmsnorm_eps: the model has no RMSNorm module (a class named *RMSNorm* with eps or "
                         "variance_epsilon)" + ("" if layernorm else "; pass layernorm=True for LayerNorm"))
    return changed
