"""gamma_init_: the initialisation rules of smallinit's Go package gammainit, in place, for any PyTorch model whose
parameters follow a known naming.

    records = gamma_init_(model, gamma=1.0)                       # the study's small init, σ = d_in^(-1)
    records = gamma_init_(model, rule="fixed", std=0.02, depth_scale=True)
    records = gamma_init_(model, gamma=0.5, classes={"embed": {"std": 1.0}, "o": {"rule": "kaiming"}})

Rules (per tensor class; `classes` overrides a class's rule, γ or std as Go's init.classes does: an override
that sets only std implies the fixed rule, one that sets only gamma the γ rule):
    gamma    σ = d_in^(-γ)                 fixed    σ = std
    xavier   σ = sqrt(2 / (d_in + d_out))  kaiming  σ = sqrt(2 / d_in)
    depth_scale: o and ffn_down additionally × 1/sqrt(2L).
Norm gains start at 1, biases at 0.

The class of every tensor, how it starts and which axis is d_in come from gammainit_table.json, which Go's
gammainit writes (gammainit/table.go; a Go test fails if the committed file drifts). Names are first mapped to the
engine's Hugging Face Llama names, from:
  - Hugging Face Llama / Mistral / Qwen2 / Qwen3 / Qwen2-MoE / Qwen3-MoE (`model.layers.N.self_attn.q_proj`, ...),
    with or without the `model.` prefix and with wrapper prefixes (`module.`, `_orig_mod.`, `_fsdp_wrapped_module.`);
  - torchtitan Llama 3 and Qwen3 (`tok_embeddings`, `layers.N.attention.wq`, `attention_norm`, `feed_forward.w1`
    (gate) / `w2` (down) / `w3` (up), `ffn_norm`, `norm`, `output`; MoE `moe.router.gate`, grouped 3-D
    `moe.experts.w1|w2|w3` [E, d_out, d_in] and `moe.shared_experts.*`);
  - GPT-2 / nanoGPT (`transformer.wte`, `wpe`, `h.N.ln_1`, fused `attn.c_attn` = q | k | v, `attn.c_proj` (o),
    `mlp.c_fc` (ffn_up), `mlp.c_proj` (ffn_down), `ln_f`). Hugging Face's GPT-2 stores these in `Conv1D` modules
    whose weight is [d_in, d_out] (transposed); a module whose class is named Conv1D is read that way, nanoGPT's
    nn.Linear the usual [d_out, d_in]. The position embedding `wpe` has no engine class: it is drawn as class
    embed (d_in = its width). The fused c_attn's three column blocks are drawn and recorded separately
    (`...c_attn.weight[q]`, `[k]`, `[v]`).
The bias of a classified matrix with no class of its own (o_proj, c_proj, c_fc) starts at 0 (class "bias"). A parameter
none of this classifies is an error listing every such name, unless `classify(name, param)` returns its class
(a matrix class, or "norm" / "bias"), a list of (class, rows) blocks of a fused [d_out, d_in] matrix (a fused
qkv: [("q", H*dh), ("k", KV*dh), ("v", KV*dh)], each block drawn and recorded as `name[q]`, ...), or None to
leave it untouched.

Draws: every tensor (every fused block) draws from its own torch.Generator seeded by (seed, FNV-1a of the
name), so adding a tensor leaves the other draws unchanged, as in Go. The values are not Go's (a different
random generator); their std is Go's rule's (within sampling error).
DTensor parameters (FSDP2 / tensor parallel): each rank draws its local shard in place from a stream that also
depends on the rank, and the drawn std is all-reduced over the default process group. This path is untested here
(Debian's torch 1.13 has no DTensor)."""
from __future__ import annotations

import ast
import json
import math
import os
import re

import torch

TABLE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gammainit_table.json")
_TABLE = None

WRAPPERS = re.compile(r"^(?:(?:module|_orig_mod|_fsdp_wrapped_module|_checkpoint_wrapped_module|base_model\.model)\.)+")


def table() -> dict:
    """The table gammainit writes (gammainit_table.json), parsed once."""
    global _TABLE
    if _TABLE is None:
        with open(TABLE_PATH) as f:
            doc = json.load(f)
        pats = []
        for t in doc["tensors"]:
            rx = re.escape(t["name"]).replace(r"\{L\}", r"(\d+)").replace(r"\{E\}", r"(\d+)")
            pats.append((re.compile("^" + rx + "$"), t))
        doc["_patterns"] = pats
        doc["_rules"] = {r["name"]: r for r in doc["rules"]}
        _TABLE = doc
    return _TABLE


# torchtitan (Llama 3, Qwen3) -> engine names, inside `layers.N.` and at the top
_TITAN_LAYER = {
    "attention.wq.weight": "self_attn.q_proj.weight", "attention.wk.weight": "self_attn.k_proj.weight",
    "attention.wv.weight": "self_attn.v_proj.weight", "attention.wo.weight": "self_attn.o_proj.weight",
    "attention.wq.bias": "self_attn.q_proj.bias", "attention.wk.bias": "self_attn.k_proj.bias",
    "attention.wv.bias": "self_attn.v_proj.bias",
    "attention.q_norm.weight": "self_attn.q_norm.weight", "attention.k_norm.weight": "self_attn.k_norm.weight",
    "attention_norm.weight": "input_layernorm.weight", "ffn_norm.weight": "post_attention_layernorm.weight",
    "feed_forward.w1.weight": "mlp.gate_proj.weight", "feed_forward.w2.weight": "mlp.down_proj.weight",
    "feed_forward.w3.weight": "mlp.up_proj.weight",
    "moe.router.gate.weight": "mlp.gate.weight",
    "moe.shared_experts.w1.weight": "mlp.shared_expert.gate_proj.weight",
    "moe.shared_experts.w2.weight": "mlp.shared_expert.down_proj.weight",
    "moe.shared_experts.w3.weight": "mlp.shared_expert.up_proj.weight",
    # grouped experts: one [E, d_out, d_in] tensor per projection (expert axis 0)
    "moe.experts.w1": "mlp.experts.{E}.gate_proj.weight", "moe.experts.w2": "mlp.experts.{E}.down_proj.weight",
    "moe.experts.w3": "mlp.experts.{E}.up_proj.weight",
}
_TITAN_TOP = {"tok_embeddings.weight": "model.embed_tokens.weight", "norm.weight": "model.norm.weight",
              "output.weight": "lm_head.weight"}
# GPT-2 / nanoGPT -> engine names
_GPT2_LAYER = {"ln_1.weight": "input_layernorm.weight", "ln_1.bias": "input_layernorm.bias",
               "ln_2.weight": "post_attention_layernorm.weight", "ln_2.bias": "post_attention_layernorm.bias",
               "attn.c_attn.weight": "FUSED_QKV", "attn.c_attn.bias": "self_attn.q_proj.bias",
               "attn.c_proj.weight": "self_attn.o_proj.weight", "mlp.c_fc.weight": "mlp.up_proj.weight",
               "mlp.c_proj.weight": "mlp.down_proj.weight"}
_GPT2_TOP = {"wte.weight": "model.embed_tokens.weight", "wpe.weight": "model.embed_tokens.weight",
             "ln_f.weight": "model.norm.weight", "ln_f.bias": "model.norm.bias"}


def canonical(name: str) -> "str | None":
    """The engine name of a parameter name (layer and expert indices kept), "FUSED_QKV:<layer>" for GPT-2's
    c_attn, "GROUPED:<template>" for torchtitan's 3-D experts, or None."""
    n = WRAPPERS.sub("", name)
    if n == "lm_head.weight" or n.endswith(".lm_head.weight"):
        return "lm_head.weight"
    # GPT-2 / nanoGPT
    m = re.match(r"^(?:.*\.)?transformer\.(?:h\.(\d+)\.(.+)|(.+))$", n) or re.match(r"^(?:h\.(\d+)\.(.+)|(wte\.weight|wpe\.weight|ln_f\.\w+))$", n)
    if m:
        if m.group(1) is not None:
            inner = _GPT2_LAYER.get(m.group(2))
            if inner == "FUSED_QKV":
                return "FUSED_QKV:" + m.group(1)
            return None if inner is None else f"model.layers.{m.group(1)}.{inner}"
        return _GPT2_TOP.get(m.group(3))
    # Hugging Face and torchtitan: `[model.]layers.N.rest`, `[model.]embed_tokens.weight`, top-level names
    m = re.match(r"^(?:.*?\.)?(?:model\.)?layers\.(\d+)\.(.+)$", n)
    if m:
        layer, rest = m.groups()
        if rest in _TITAN_LAYER:
            t = _TITAN_LAYER[rest]
            return ("GROUPED:" if "{E}" in t else "") + f"model.layers.{layer}.{t}"
        return f"model.layers.{layer}.{rest}"
    m = re.match(r"^(?:.*?\.)?(?:model\.)?(embed_tokens\.weight|norm\.weight|norm\.bias)$", n)
    if m:
        return "model." + m.group(1)
    return _TITAN_TOP.get(n)


def lookup(engine_name):
    """The table entry of an engine tensor name, or None."""
    for rx, t in table()["_patterns"]:
        if rx.match(engine_name):
            return t
    return None


def resolve(recipe, cls):
    """(rule, gamma, std) in force for a class: gammainit's Recipe.resolve."""
    rule, gamma, std = recipe["rule"], recipe.get("gamma", 1.0), recipe.get("std", 0.0)
    o = (recipe.get("classes") or {}).get(cls)
    if not o:
        return rule, gamma, std
    if o.get("rule"):
        rule = o["rule"]
    elif o.get("std") is not None:
        rule = _rule_for_param("std")
    elif o.get("gamma") is not None:
        rule = _rule_for_param("gamma")
    if o.get("gamma") is not None:
        gamma = o["gamma"]
    if o.get("std") is not None:
        std = o["std"]
    return rule, gamma, std


def _rule_for_param(param):
    """The rule that reads param: the one an override setting only that parameter implies (as in Go)."""
    return next(name for name, r in rules().items() if r.get("param") == param)


def rules():
    """The init rules by name, from the table (each with its param, range and sigma expression)."""
    return table()["_rules"]


_SIGMA_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
              ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a ** b}


def sigma_of(expr, **names):
    """Evaluates a rule's sigma expression from the table (numbers, d_in, d_out, gamma, std, + - * / **, sqrt),
    the same text Go's recipe.Sigma evaluates."""
    def ev(n):
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.BinOp) and type(n.op) in _SIGMA_OPS:
            return _SIGMA_OPS[type(n.op)](ev(n.left), ev(n.right))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -ev(n.operand)
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)):
            return float(n.value)
        if isinstance(n, ast.Name) and n.id in names:
            return float(names[n.id])
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "sqrt" and len(n.args) == 1:
            return math.sqrt(ev(n.args[0]))
        raise ValueError(f"sigma expression {expr!r}: {ast.dump(n)} not allowed")
    return ev(ast.parse(expr, mode="eval"))


def std_for(recipe: dict, cls: str, d_in: int, d_out: int, layers: int) -> float:
    """The σ the recipe gives a matrix of class cls and shape [d_out, d_in] in a model of `layers` blocks
    (gammainit's Recipe.StdFor; checked against Go's own values by the table's examples)."""
    rule, gamma, std = resolve(recipe, cls)
    if rule not in rules():
        raise ValueError(f"rule {rule!r}: want one of {tuple(rules())}")
    s = sigma_of(rules()[rule]["sigma"], d_in=d_in, d_out=d_out, gamma=gamma, std=std)
    if recipe.get("depth_scale") and cls in table()["depth_scaled"]:
        s /= math.sqrt(2 * layers)
    return s


def validate(recipe: dict) -> None:
    """gammainit's Recipe.Validate: rule names and each rule's parameter range from the table, known classes."""
    def check(where, rule, gamma, std):
        r = rules().get(rule)
        if r is None:
            names = list(rules())
            raise ValueError(f"{where}rule = {rule!r}: want {', '.join(names[:-1])} or {names[-1]}")
        if r.get("param"):
            v = {"gamma": gamma, "std": std}[r["param"]]
            lo, hi = r["min"], r["max"]
            if not ((lo < v if r.get("min_open") else lo <= v) and v <= hi):
                raise ValueError(f"{where}{r['param']} = {v}: must be in {'(' if r.get('min_open') else '['}{lo}, {hi}]")
    check("init.", recipe["rule"], recipe.get("gamma", 1.0), recipe.get("std", 0.0))
    for cls in recipe.get("classes") or {}:
        if cls not in table()["classes"]:
            raise ValueError(f"init.classes.{cls}: unknown tensor class (have {', '.join(table()['classes'])})")
        check(f"init.classes.{cls}.", *resolve(recipe, cls))


def _fnv1a64(s):
    h = 0xcbf29ce484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def stream(seed, name, device="cpu", rank=0):
    """The generator of one tensor: seeded by (seed, FNV-1a of the name[, rank of a shard])."""
    x = (_fnv1a64(name) ^ ((int(seed) * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF) ^ (rank * 0xD1B54A32D192ED03)) & 0xFFFFFFFFFFFFFFFF
    return torch.Generator(device=device).manual_seed(x & 0x7FFFFFFFFFFFFFFF)


def _local(p):
    """The local shard of a DTensor parameter (and True), or p itself (and False)."""
    t = p.data
    if type(t).__name__ == "DTensor":
        return t.to_local() if hasattr(t, "to_local") else t._local_tensor, True
    return t, False


def _rank():
    import torch.distributed as dist
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def _sum_sq_count(t, sharded):
    ss, n = float(t.double().pow(2).sum()), t.numel()
    if sharded:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            v = torch.tensor([ss, float(n)], dtype=torch.float64, device=t.device)
            dist.all_reduce(v)
            ss, n = v[0].item(), int(v[1].item())
    return ss, n


def _owner_types(model):
    """Parameter name -> class name of the module that owns it."""
    out = {}
    for mname, mod in model.named_modules():
        for pname, _ in mod.named_parameters(recurse=False):
            out[(mname + "." if mname else "") + pname] = type(mod).__name__
    return out


def _base_seed(seed: "int | None", generator: "torch.Generator | None") -> int:
    """The seed the per-tensor streams derive from: seed itself, or (seed=None) a draw from generator or from
    torch's default generator, so that torch.manual_seed decides it."""
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed = {seed!r}: want a non-negative integer or None")
        return seed
    return int(torch.randint(0, 1 << 62, (1,), generator=generator).item())


def _refuse_meta(model: torch.nn.Module) -> None:
    meta = [n for n, p in model.named_parameters() if p.is_meta]
    if meta:
        raise ValueError(f"gamma_init_: {len(meta)} parameter(s) are on the meta device ({meta[0]}, ...): they have "
                         f"no storage to draw into; call model.to_empty(device=...) first, then gamma_init_")


def _all_parameters(model: torch.nn.Module):
    """(name, parameter) of every module's own parameters, a shared (tied) parameter under each of its names,
    in named_parameters' order."""
    for mname, mod in model.named_modules(remove_duplicate=False) if _has_remove_duplicate() else model.named_modules():
        for pname, p in mod._parameters.items():
            if p is not None:
                yield (mname + "." if mname else "") + pname, p


def _has_remove_duplicate() -> bool:
    import inspect
    return "remove_duplicate" in inspect.signature(torch.nn.Module.named_modules).parameters


def _embed_width(model: torch.nn.Module) -> "int | None":
    """The width d of the token embedding (the [V, d] tensor of class embed), which tells a GPT-2 matrix's layout."""
    for name, p in model.named_parameters():
        eng = canonical(name)
        if eng == "model.embed_tokens.weight" and p.dim() == 2 and not name.endswith("wpe.weight"):
            return p.shape[1]
    return None


def gamma_init_(model: torch.nn.Module, gamma: float = 1.0, rule: str = "gamma", std: float = 0.02,
                classes: "dict | None" = None, depth_scale: bool = False, seed: "int | None" = None,
                classify=None, layers: "int | None" = None, generator: "torch.Generator | None" = None) -> "list[dict]":
    """Initialise model's parameters in place by a gammainit recipe and return the init.json per-tensor record:
    one dict per matrix (per fused block) {name, class, d_in, intended_std, drawn_std, gamma_eff}, in parameter
    order. layers (for depth scaling) defaults to the number of distinct layer indices in the names. See the
    module docstring for the namings understood and `classify` (which may return a class, (class,
    "transposed") for a [d_in, d_out] matrix, or a list of (class, rows) blocks of a fused matrix).

    seed: the draws depend on (seed, tensor name) only, the same on every device and torch version (the trainer
    passes the run's seed). seed=None (the default, as torch.nn.init) draws the base seed from generator, or
    from torch's default generator, so that torch.manual_seed(s) decides it and each seed of a multi-seed
    experiment gets its own weights. Meta-device models are refused: call
    model.to_empty(device=...) first. A tied head with a classes["head"] override is refused (the one tensor is
    the embedding)."""
    recipe = {"rule": rule, "gamma": float(gamma), "std": float(std), "depth_scale": bool(depth_scale),
              "classes": classes or {}}
    validate(recipe)
    _refuse_meta(model)
    seed = _base_seed(seed, generator)
    owners = _owner_types(model)
    width = _embed_width(model)
    plan, unknown, seen = [], [], {}
    for name, p in _all_parameters(model):
        if id(p) in seen:
            if canonical(name) == "lm_head.weight" and (recipe["classes"] or {}).get("head"):
                raise ValueError(f"gamma_init_: init.classes.head is set, but {name} is tied to {seen[id(p)]} "
                                 f"(one tensor, drawn as class embed): set the override on embed, or untie the head")
            continue
        seen[id(p)] = name
        plan.append((name, p) + _classify(name, p, owners.get(name, ""), classify, unknown, width))
    if unknown:
        raise ValueError(f"gamma_init_: {len(unknown)} parameter(s) of no known naming (Hugging Face Llama/Mistral/"
                         f"Qwen2/Qwen3/Qwen-MoE, torchtitan Llama 3/Qwen3, GPT-2/nanoGPT); pass classify=: "
                         + ", ".join(f"{n} {list(s)}" for n, s in unknown))
    if layers is None:
        idx = set()
        for _, _, _, eng, _ in plan:
            m = re.search(r"layers\.(\d+)\.|^FUSED_QKV:(\d+)$", eng or "")
            if m:
                idx.add(int(m.group(1) or m.group(2)))
        layers = max(len(idx), 1)
    mods = dict(model.named_modules())
    records = []
    rank = _rank()
    with torch.no_grad():
        for name, p, kind, eng, blocks in plan:
            if kind is None:
                continue
            t, sharded = _local(p)
            if kind == "ones":
                t.fill_(_unit_gain(mods.get(name.rpartition(".")[0]), name, p))
                continue
            if kind == "zeros":
                t.zero_()
                continue
            for label, cls, view, d_in, d_out in blocks(t):
                s = std_for(recipe, cls, d_in, d_out, layers)
                gname = name + (f"[{label}]" if label else "")
                view.normal_(0.0, s, generator=stream(seed, gname, t.device, rank if sharded else 0))
                ss, n = _sum_sq_count(view, sharded)
                records.append({"name": gname, "class": cls, "d_in": d_in, "intended_std": s,
                                "drawn_std": math.sqrt(ss / n), "gamma_eff": math.log(1 / s) / math.log(d_in) if d_in > 1 else 0.0})
    return records


def _unit_gain(mod: "torch.nn.Module | None", name: str, p: torch.Tensor) -> float:
    """The value of a norm gain that makes the norm's gain 1: 1 for x·w (Llama, smallinit), 0 for Gemma's
    x·(1 + w). Told by running the norm with w = 0 on two different inputs: for x·w the output is then the
    bias alone (zero without one), the same for both inputs; for x·(1 + w) the normalised input passes through
    and the outputs differ. (Comparing the output with 0 would take a LayerNorm with a non-zero bias for a
    Gemma norm.) A norm that cannot be run on its own is taken as x·w unless its class is a Gemma one."""
    if mod is None or p.dim() != 1 or not name.endswith("weight") or type(p.data).__name__ == "DTensor":
        return 1.0
    gemma = "gemma" in type(mod).__name__.lower()
    saved = p.detach().clone()
    try:
        p.zero_()
        g = torch.Generator().manual_seed(0)
        x1, x2 = (torch.randn(2, p.shape[0], generator=g).to(p.device, p.dtype) for _ in range(2))
        y1, y2 = mod(x1), mod(x2)
        if not torch.is_tensor(y1) or y1.shape != x1.shape:
            return 0.0 if gemma else 1.0
        if bool(torch.equal(y1, y2)):
            return 1.0  # with w = 0 the output does not depend on the input: it scales by w
        return 0.0  # with w = 0 the norm still passes its input: it scales by (1 + w)
    except Exception:  # a norm that needs other inputs: decide by its class
        return 0.0 if gemma else 1.0
    finally:
        p.copy_(saved)


_GPT2_NAME = re.compile(r"(?:^|\.)(?:transformer\.)?h\.\d+\.(?:attn|mlp)\.c_(?:attn|proj|fc)\.weight$")


def _gpt2_transposed(name: str, p: torch.Tensor, owner: str, cls: str, width: "int | None") -> bool:
    """Whether a GPT-2-named matrix is stored [d_in, d_out] (Hugging Face's Conv1D) rather than [d_out, d_in]
    (nanoGPT's nn.Linear), told by its shape against the embedding width d: the d_in of q/k/v/o/ffn_up is d,
    the d_out of ffn_down is d. A square matrix reads the same both ways. Without an embedding, the module's
    class name decides; a shape that contradicts the class name Conv1D is an error."""
    a, b = p.shape
    if width is None or a == b:
        return owner == "Conv1D"
    if cls == "ffn_down":
        transposed, ok = b == width, width in (a, b)
    else:
        transposed, ok = a == width, width in (a, b)
    if not ok:
        raise ValueError(f"{name}: shape {list(p.shape)} has no axis of the embedding width {width}: cannot tell "
                         f"its layout; pass classify=")
    if owner == "Conv1D" and not transposed or owner == "Linear" and transposed:
        raise ValueError(f"{name}: a {owner} of shape {list(p.shape)}, which the embedding width {width} reads as "
                         f"{'[d_in, d_out]' if transposed else '[d_out, d_in]'}: refusing to guess")
    return transposed


def _classify(name, p, owner, classify, unknown, width=None):
    """(kind, engine name, blocks) of one parameter: kind "normal" | "ones" | "zeros" | None (left alone);
    blocks(tensor) yields (label, class, view, d_in, d_out) for each separately drawn block."""
    eng = canonical(name)
    if eng and eng.startswith("FUSED_QKV:"):
        if p.dim() != 2:
            raise ValueError(f"{name}: fused c_attn of shape {list(p.shape)}, want 2-D")
        conv1d = _gpt2_transposed(name, p, owner, "q", width)
        out_ax, in_ax = (1, 0) if conv1d else (0, 1)
        if p.shape[out_ax] % 3:
            raise ValueError(f"{name}: fused q|k|v of {p.shape[out_ax]} outputs, not divisible by 3")
        if type(p.data).__name__ == "DTensor":
            raise ValueError(f"{name}: a sharded fused c_attn is not supported")
        third = p.shape[out_ax] // 3

        def blocks(t):
            for i, cls in enumerate(("q", "k", "v")):
                yield cls, cls, t.narrow(out_ax, i * third, third), t.shape[in_ax], third
        return "normal", eng, blocks
    grouped = eng and eng.startswith("GROUPED:")
    ent = lookup(eng.removeprefix("GROUPED:").replace("{E}", "0")) if eng else None
    if ent is None and name.endswith(".bias") and _known_matrix(name[:-len("bias")] + "weight"):
        ent = {"class": "bias", "init": "zeros"}  # the bias of a classified matrix, with no class of its own
    transposed = None
    if ent is None and classify is not None:
        cls = classify(name, p)
        if isinstance(cls, list):
            return "normal", eng, _fused_blocks(name, p, cls)
        if isinstance(cls, tuple):
            if len(cls) != 2 or cls[1] not in ("transposed", "linear"):
                raise ValueError(f"classify({name!r}) returned {cls!r}: want a class, or (class, 'transposed' | 'linear')")
            cls, transposed = cls[0], cls[1] == "transposed"
        if cls is None:
            return None, eng, None
        if cls == "norm":
            ent = {"class": "norm", "init": "ones"}
        elif cls in ("bias", "norm_bias", "qkv_bias", "router_bias"):
            ent = {"class": cls, "init": "zeros"}
        elif cls in table()["classes"]:
            ent = {"class": cls, "init": "normal", "d_in_axis": 1}
        else:
            raise ValueError(f"classify({name!r}) returned {cls!r}: want one of {table()['classes']}, norm, bias or None")
    if ent is None:
        unknown.append((name, tuple(p.shape)))
        return None, eng, None
    if ent["init"] != "normal":
        return ent["init"], eng, None
    cls = ent["class"]
    if grouped:
        if p.dim() != 3:
            raise ValueError(f"{name}: grouped experts of shape {list(p.shape)}, want [E, d_out, d_in]")
        in_ax = _grouped_in_axis(name, p, cls, width)

        def blocks(t):
            yield "", cls, t, t.shape[in_ax], t.shape[3 - in_ax]
        return "normal", eng, blocks
    if p.dim() != 2:
        raise ValueError(f"{name}: class {cls} of shape {list(p.shape)}, want a matrix")
    if transposed is None:
        transposed = _gpt2_transposed(name, p, owner, cls, width) if _GPT2_NAME.search(name) else False
    in_ax = 1 - ent["d_in_axis"] if transposed else ent["d_in_axis"]

    def blocks(t):
        yield "", cls, t, t.shape[in_ax], t.shape[1 - in_ax]
    return "normal", eng, blocks


def _fused_blocks(name: str, p: torch.Tensor, spec: list):
    """blocks() of a fused [d_out, d_in] matrix that classify= described as a list of (class, rows) pairs, the
    row blocks in order (a fused qkv: [("q", H*dh), ("k", KV*dh), ("v", KV*dh)]); each block is drawn and
    recorded separately as `name[class]` (`name[class#i]` when a class repeats)."""
    if p.dim() != 2:
        raise ValueError(f"classify({name!r}): a list of blocks is for a matrix, the tensor is {list(p.shape)}")
    classes = table()["classes"]
    for item in spec:
        if not (isinstance(item, tuple) and len(item) == 2 and item[0] in classes and isinstance(item[1], int)
                and not isinstance(item[1], bool) and item[1] > 0):
            raise ValueError(f"classify({name!r}) returned {spec!r}: want [(class, rows), ...] with classes from "
                             f"{classes} and positive row counts")
    if sum(r for _, r in spec) != p.shape[0]:
        raise ValueError(f"classify({name!r}): the blocks' rows sum to {sum(r for _, r in spec)}, the matrix has "
                         f"{p.shape[0]} rows")
    counts = {}
    for c, _ in spec:
        counts[c] = counts.get(c, 0) + 1
    if type(p.data).__name__ == "DTensor":
        raise ValueError(f"{name}: a sharded fused matrix is not supported")

    def blocks(t):
        start, seen = 0, {}
        for c, rows in spec:
            seen[c] = seen.get(c, 0) + 1
            label = c if counts[c] == 1 else f"{c}#{seen[c] - 1}"
            yield label, c, t.narrow(0, start, rows), t.shape[1], rows
            start += rows
    return blocks


def _grouped_in_axis(name: str, p: torch.Tensor, cls: str, width: "int | None") -> int:
    """The d_in axis (1 or 2) of torchtitan grouped experts [E, ., .]: [E, d_out, d_in] (axis 2, today's layout)
    or the older [E, d_in, d_out] (axis 1), told by the embedding width d: the d_in of ffn_gate/ffn_up is d, the
    d_out of ffn_down is d. A square expert reads the same both ways; without an embedding the current layout
    is assumed; a shape with no axis of width d is an error rather than a guess."""
    _, a, b = p.shape
    if width is None or a == b:
        return 2
    want_in = cls != "ffn_down"  # the axis that must be d: d_in for gate/up, d_out for down
    if (b if want_in else a) == width:
        return 2
    if (a if want_in else b) == width:
        return 1
    raise ValueError(f"{name}: grouped experts of shape {list(p.shape)} have no axis of the embedding width "
                     f"{width}: cannot tell [E, d_out, d_in] from [E, d_in, d_out]; pass classify=")


def _known_matrix(weight_name):
    eng = canonical(weight_name)
    if eng is None:
        return False
    if eng.startswith("FUSED_QKV:"):
        return True
    ent = lookup(eng.removeprefix("GROUPED:").replace("{E}", "0"))
    return ent is not None and ent["init"] == "normal"


def gamma_normal_(tensor: torch.Tensor, gamma: float = 1.0, fan_in: "int | None" = None, mode: str = "fan_in",
                  generator: "torch.Generator | None" = None) -> torch.Tensor:
    """Fill tensor in place from N(0, σ²) with σ = fan^(-γ), the γ rule for a single tensor, in the manner of
    torch.nn.init.kaiming_normal_. fan is fan_in when given, else torch's fan_in (mode="fan_in", the d_in of a
    [d_out, d_in] weight) or fan_out (mode="fan_out", for a [d_in, d_out] weight such as GPT-2's Conv1D).
    generator: the draw's torch.Generator (default: torch's, so torch.manual_seed decides it). Returns tensor."""
    if gamma is None or not 0 <= float(gamma) <= 4:
        raise ValueError(f"gamma = {gamma}: must be in [0, 4]")
    if tensor.is_meta:
        raise ValueError("gamma_normal_: the tensor is on the meta device: call model.to_empty(device=...) first")
    if fan_in is None:
        if mode not in ("fan_in", "fan_out"):
            raise ValueError(f"mode {mode!r}: want fan_in or fan_out")
        if tensor.dim() < 2:
            raise ValueError(f"gamma_normal_: a {tensor.dim()}-D tensor has no fan; pass fan_in=")
        fi, fo = torch.nn.init._calculate_fan_in_and_fan_out(tensor)
        fan_in = fi if mode == "fan_in" else fo
    if isinstance(fan_in, bool) or not isinstance(fan_in, int) or fan_in < 1:
        raise ValueError(f"fan_in = {fan_in!r}: want a positive integer")
    with torch.no_grad():
        return tensor.normal_(0.0, float(fan_in) ** (-float(gamma)), generator=generator)


def init_json(records: "list[dict]", seed: int = 0, **recipe) -> dict:
    """The init.json document Go's trainer writes ({"recipe", "seed", "tensors"}) for gamma_init_'s records."""
    r = {"rule": recipe.get("rule", "gamma"), "gamma": recipe.get("gamma", 1.0)}
    if recipe.get("std") and r["rule"] == "fixed":
        r["std"] = recipe["std"]
    if recipe.get("depth_scale"):
        r["depth_scale"] = True
    if recipe.get("classes"):
        r["classes"] = recipe["classes"]
    return {"recipe": r, "seed": seed, "tensors": records}
