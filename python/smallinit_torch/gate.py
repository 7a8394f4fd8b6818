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
from __future__ import annotations

import torch
import torch.nn as nn

from .kernels import KERNELS

GATE_MODES = ("headwise", "elementwise")


class OutputGate(nn.Linear):
    """y <- y * sigmoid(W_g n): n is the attention block's normed input [..., d], y the attention output per
    head [..., H, head_dim]. Elementwise: one gate per channel (W_g [H*head_dim, d]); headwise: one per head
    (W_g [H, d]). A plain nn.Linear underneath (its weight is the checkpoint tensor; `gamma_init_` classifies it
    as class "gate")."""

    def __init__(self, hidden_size: int, n_heads: int, head_dim: int, mode: str = "elementwise") -> None:
        if mode not in GATE_MODES:
            raise ValueError(f"OutputGate mode {mode!r}: want one of {GATE_MODES}")
        super().__init__(hidden_size, n_heads * head_dim if mode == "elementwise" else n_heads, bias=False)
        self.mode, self.n_heads, self.head_dim = mode, n_heads, head_dim
        self.observers: list = []  # callables given every gate value tensor (the diagnostics' gate means)

    def gate_values(self, n: torch.Tensor) -> torch.Tensor:
        """sigmoid(W_g n): [..., H*head_dim] (elementwise) or [..., H] (headwise)."""
        g = torch.sigmoid(KERNELS["linear"](n, self.weight))
        for observe in self.observers:
            observe(g)
        return g

    def forward(self, n: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        g = self.gate_values(n)
        if self.mode == "headwise":
            return y * g.unsqueeze(-1)
        return y * g.view(*g.shape[:-1], self.n_heads, self.head_dim)


def set_rmsnorm_eps(model: nn.Module, eps: float = 1e-12, layernorm: bool = False) -> "list[str]":
    """Set the ε of every RMSNorm in model (and of every LayerNorm with layernorm=True); returns the names of the
    modules changed. It recognises modules whose class name contains "RMSNorm" and that keep ε as `eps`
    (smallinit, torchtitan, torch.nn.RMSNorm) or `variance_epsilon` (Hugging Face's LlamaRMSNorm, Qwen2/Qwen3,
    Mistral). The model's Hugging Face config (`model.config.rms_norm_eps`, and `layer_norm_eps` /
    `layer_norm_epsilon` with layernorm=True) is updated too, so that save_pretrained and a reload keep the new ε.
    A model with no such module raises, rather than silently keeping its ε."""
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
    cfg = getattr(model, "config", None)
    if cfg is not None:
        for attr in ("rms_norm_eps",) + (("layer_norm_eps", "layer_norm_epsilon") if layernorm else ()):
            if hasattr(cfg, attr):
                setattr(cfg, attr, float(eps))
    return changed


class GateHandle:
    """What add_output_gate returns: the names of the gated attention modules; remove() takes the gates off
    (the hooks, the forward wrapper and the g_proj modules), leaving the model as it was."""

    def __init__(self) -> None:
        self.names: "list[str]" = []
        self._undo: list = []

    def __len__(self) -> int:
        return len(self.names)

    def __iter__(self):
        return iter(self.names)

    def __getitem__(self, i):
        return self.names[i]

    def __eq__(self, other) -> bool:
        return list(self.names) == list(other) if isinstance(other, (list, tuple, GateHandle)) else NotImplemented

    def __repr__(self) -> str:
        return f"GateHandle({self.names!r})"

    def remove(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo, self.names = [], []


def add_output_gate(model: nn.Module, mode: str = "elementwise", attn_suffix: str = "self_attn",
                    out_proj: str = "o_proj") -> GateHandle:
    """Add the output gate to every attention module of an existing model without editing its code: each module
    whose name ends in attn_suffix and that has an out_proj Linear gets a `g_proj` OutputGate (so its weight is
    saved as `...self_attn.g_proj.weight`, as in smallinit's checkpoints). The attention's forward is wrapped to
    keep its input (the normed hidden states: the first positional argument or `hidden_states=`, so Hugging
    Face's keyword calls work on torch 1.13 as on 2.x), and a pre-hook on out_proj multiplies its input
    [..., H*head_dim] by sigmoid(g_proj(input)) per channel or per head. Heads and head_dim are read from the
    module (num_heads / n_heads / config.num_attention_heads, head_dim). The new weights are left for gamma_init_
    (or your init) to draw.

    Returns a GateHandle (a list of the modules changed, with remove()). A module that already has a g_proj
    (built in, or added before) is refused rather than gated twice."""
    if mode not in GATE_MODES:
        raise ValueError(f"add_output_gate: mode {mode!r}: want one of {GATE_MODES}")
    handle = GateHandle()
    targets = []
    for name, attn in list(model.named_modules()):
        proj = getattr(attn, out_proj, None)
        if not name.endswith(attn_suffix) or not isinstance(proj, nn.Linear):
            continue
        if hasattr(attn, "g_proj"):
            raise ValueError(f"add_output_gate: {name} already has a g_proj gate: the model is gated already "
                             f"(call remove() on the handle of the first add_output_gate to take it off)")
        cfg = getattr(attn, "config", None)
        H = next((getattr(o, a) for o, a in ((attn, "num_heads"), (attn, "n_heads"), (cfg, "num_attention_heads"))
                  if o is not None and getattr(o, a, None)), None)
        if H is None:
            raise ValueError(f"add_output_gate: {name}: cannot find the number of heads")
        dh = getattr(attn, "head_dim", None) or proj.in_features // H
        if H * dh != proj.in_features:
            raise ValueError(f"add_output_gate: {name}: {H} heads x head_dim {dh} != {out_proj} inputs {proj.in_features}")
        targets.append((name, attn, proj, H, dh))
    if not targets:
        raise ValueError(f"add_output_gate: no module named *{attn_suffix} with an {out_proj} Linear")
    for name, attn, proj, H, dh in targets:
        d = _input_width(attn, proj)
        attn.g_proj = OutputGate(d, H, dh, mode).to(proj.weight.device, proj.weight.dtype)
        had_instance_forward = "forward" in attn.__dict__
        forward = _GatedForward(attn, attn.__dict__.get("forward"))
        attn.forward = forward
        hook = proj.register_forward_pre_hook(_GateHook(forward, dh))

        def undo(attn=attn, hook=hook, inner=forward.inner, had=had_instance_forward):
            hook.remove()
            if had:
                attn.forward = inner
            else:
                del attn.forward
            del attn.g_proj

        handle._undo.append(undo)
        handle.names.append(name)
    return handle


class _GatedForward:
    """The gated attention's forward: keeps the attention's input (its first positional argument or
    hidden_states=) for the o_proj hook, then runs the class's forward (or an earlier instance-level wrapper).
    An object, not a closure, so that it names the module it belongs to as an attribute: copy.deepcopy of the
    model copies it with the module (the copy runs its own weights), and torch.save can pickle it."""

    def __init__(self, attn: nn.Module, inner=None) -> None:
        self.attn, self.inner, self.n = attn, inner, None

    def __call__(self, *args, **kwargs):
        n = args[0] if args else kwargs.get("hidden_states")
        if n is None:
            raise TypeError("the gated attention needs its hidden states as the first argument or hidden_states=")
        self.n = n
        try:
            if self.inner is not None:
                return self.inner(*args, **kwargs)
            return type(self.attn).forward(self.attn, *args, **kwargs)
        finally:
            self.n = None

    def __getstate__(self):  # the kept input is a transient of one forward, never saved or copied
        return {"attn": self.attn, "inner": self.inner, "n": None}


class _GateHook:
    """The forward pre-hook on o_proj: multiplies its input [..., H*head_dim] by the gate of the attention's
    input, per channel (elementwise) or per head (headwise, repeated over head_dim). Like _GatedForward, an
    object whose module references deepcopy and pickle follow."""

    def __init__(self, forward: _GatedForward, dh: int) -> None:
        self.forward, self.dh = forward, dh

    def __call__(self, mod, args):
        n = self.forward.n
        if n is None:
            raise RuntimeError("output gate: o_proj was called outside its attention's forward")
        g = self.forward.attn.g_proj.gate_values(n)
        if self.forward.attn.g_proj.mode == "headwise":
            g = g.repeat_interleave(self.dh, dim=-1)
        return (args[0] * g,) + tuple(args[1:])


def _input_width(attn: nn.Module, proj: nn.Linear) -> int:
    """The width d of the attention's input: o_proj's output width (the residual stream), or the q projection's input."""
    for q in ("q_proj", "wq", "query"):
        m = getattr(attn, q, None)
        if isinstance(m, nn.Linear):
            return m.in_features
    return proj.out_features
