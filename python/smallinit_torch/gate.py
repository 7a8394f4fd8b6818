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


def add_output_gate(model, mode="elementwise", attn_suffix="self_attn", out_proj="o_proj"):
    """Add the output gate to every attention module of an existing model without editing its code: each module
    whose name ends in attn_suffix and that has an out_proj Linear gets a `g_proj` OutputGate (so its weight is
    saved as `...self_attn.g_proj.weight`, as in smallinit's checkpoints), and two hooks: one keeps the
    attention's input (the normed hidden states: the first positional argument, or `hidden_states=`), the
    other multiplies out_proj's input [..., H*head_dim] by sigmoid(g_proj(input)) per channel or per head.
    Heads and head_dim are read from the module (num_heads / n_heads / config.num_attention_heads, head_dim).
    The new weights are left for gamma_init_ (or your init) to draw. Returns the modules changed. Hugging Face
    models pass hidden_states by keyword, which torch >= 2.0 shows to a hook; with torch 1.13 the input must be
    positional (as in smallinit_torch.model)."""
    changed = []
    for name, attn in list(model.named_modules()):
        proj = getattr(attn, out_proj, None)
        if not name.endswith(attn_suffix) or not isinstance(proj, nn.Linear):
            continue
        cfg = getattr(attn, "config", None)
        H = next((getattr(o, a) for o, a in ((attn, "num_heads"), (attn, "n_heads"), (cfg, "num_attention_heads"))
                  if o is not None and getattr(o, a, None)), None)
        if H is None:
            raise ValueError(f"add_output_gate: {name}: cannot find the number of heads")
        dh = getattr(attn, "head_dim", None) or proj.in_features // H
        if H * dh != proj.in_features:
            raise ValueError(f"add_output_gate: {name}: {H} heads x head_dim {dh} != {out_proj} inputs {proj.in_features}")
        d = proj.out_features
        attn.g_proj = OutputGate(d, H, dh, mode).to(proj.weight.device, proj.weight.dtype)
        store = {}

        def keep(mod, args, kwargs=None, store=store):
            store["n"] = args[0] if args else (kwargs or {}).get("hidden_states")

        def gate(mod, args, attn=attn, store=store, H=H, dh=dh):
            y = args[0]
            g = attn.g_proj.gate_values(store.pop("n"))
            if attn.g_proj.mode == "headwise":
                g = g.repeat_interleave(dh, dim=-1)
            return (y * g,) + tuple(args[1:])

        try:
            attn.register_forward_pre_hook(keep, with_kwargs=True)
        except TypeError:  # torch < 2.0: no with_kwargs
            attn.register_forward_pre_hook(lambda mod, args, keep=keep: keep(mod, args))
        proj.register_forward_pre_hook(gate)
        changed.append(name)
    if not changed:
        raise ValueError(f"add_output_gate: no module named *{attn_suffix} with an {out_proj} Linear")
    return changed
