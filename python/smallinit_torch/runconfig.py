"""The run config of `python -m smallinit_torch train`: Go's keys and defaults, read from train_defaults.json
(which Go's train package writes from recipe.Default(); a Go test fails when the committed file drifts), checked
key by key, resolved against the model directory, and written back as the resolved config.toml that Go's
report, compare and audit read. Also the one learning-rate schedule function of the package (recipe.Schedule.LR)."""
from __future__ import annotations

import copy
import functools
import json
import math
import os
from typing import Any

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

from .files import MAX_CONFIG, read_bytes

DEFAULTS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_defaults.json")
# Keys Go's trainer has that this one does not implement: a run config setting them is refused.
UNSUPPORTED = {
    ("train", "loss_positions"): "train.loss_positions is not implemented by the PyTorch trainer",
    ("train", "snapshot_steps"): "train.snapshot_steps (WSD cooldown branches) is not implemented by the PyTorch trainer",
}


@functools.lru_cache(maxsize=None)
def defaults() -> dict:
    """train_defaults.json, parsed once (callers copy before changing anything)."""
    with open(DEFAULTS_PATH) as f:
        return json.load(f)


def _typed(where: str, kind: str, v: Any) -> Any:
    """v as a value of kind ("int", "float", "bool", "string", "table", "list"), or a ValueError naming where."""
    if kind == "int" and isinstance(v, int) and not isinstance(v, bool):
        return v
    if kind == "float" and isinstance(v, (int, float)) and not isinstance(v, bool):
        if not math.isfinite(v):
            raise ValueError(f"{where} = {v}: must be finite")
        return float(v)
    if (kind == "bool" and isinstance(v, bool)) or (kind == "string" and isinstance(v, str)) \
            or (kind == "table" and isinstance(v, dict)) or (kind == "list" and isinstance(v, list)):
        return v
    want = {"int": "an integer", "float": "a number", "bool": "true or false", "string": "a string",
            "table": "a table", "list": "a list"}[kind]
    raise ValueError(f"{where} = {v!r}: want {want}")


def parse_run_config(text: str, path: str) -> "tuple[dict, set]":
    """The run config of a TOML text over Go's defaults, and the set of (section, key) it sets explicitly
    ((“”, "seed") for the seed). The [model] section holds only the keys given. Errors start with path."""
    try:
        doc = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as e:
        raise ValueError(f"{path}: {e}") from None
    d = defaults()
    types = d["types"]
    c = copy.deepcopy(d["run"])
    c["model"] = {}
    c["init"].setdefault("classes", {})
    given = set()
    try:
        for k, v in doc.items():
            if k == "seed":
                c["seed"] = _typed("seed", "int", v)
                if c["seed"] < 0:
                    raise ValueError(f"seed = {v}: must be >= 0")
                given.add(("", "seed"))
                continue
            if k not in types or k == "":
                raise ValueError(f"unknown key {k}")
            if not isinstance(v, dict):
                raise ValueError(f"{k} = {v!r}: want a [{k}] table")
            for kk, vv in v.items():
                if kk not in types[k]:
                    raise ValueError(f"unknown key {k}.{kk}")
                if (k, kk) in UNSUPPORTED:
                    raise ValueError(UNSUPPORTED[(k, kk)])
                c[k][kk] = _typed(f"{k}.{kk}", types[k][kk], vv)
                given.add((k, kk))
        check_run_config(c, given)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    return c, given


def load_run_config(path: str) -> "tuple[dict, set]":
    """parse_run_config of a file (a regular file of at most 16 MB)."""
    b = read_bytes(path, MAX_CONFIG)
    try:
        text = b.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8: {e}") from None
    return parse_run_config(text, path)


def check_run_config(c: dict, given: set) -> None:
    """recipe.Config.Validate's checks of every section but [model] (which is checked against the model
    directory), and the budget rule: train.steps and train.tokens cannot both be set."""
    from .init import validate
    t, s, o = c["train"], c["schedule"], c["optimizer"]
    if t["steps"] < 0 or t["tokens"] < 0:
        raise ValueError(f"train.steps = {t['steps']}, train.tokens = {t['tokens']}: must be >= 0")
    if t["steps"] > 0 and t["tokens"] > 0:
        which = "train.steps = %d (%s)" % (t["steps"], "given" if ("train", "steps") in given else "the default")
        raise ValueError(f"{which} and train.tokens = {t['tokens']} both set a budget: set steps = 0 to train "
                         f"by tokens, or drop tokens")
    if t["steps"] == 0 and t["tokens"] == 0:
        raise ValueError("train.steps = 0 and train.tokens = 0: set a budget (steps > 0, or steps = 0 and tokens > 0)")
    if not 1 <= t["batch_size"] <= 1 << 16:
        raise ValueError(f"train.batch_size = {t['batch_size']}: must be in [1, 65536]")
    if t["log_interval"] < 1 or t["keep_checkpoints"] < 1:
        raise ValueError("train.log_interval and train.keep_checkpoints must be >= 1")
    for k in ("eval_interval", "eval_windows", "checkpoint_interval", "diagnostics_interval", "threads"):
        if t[k] < 0:
            raise ValueError(f"train.{k} = {t[k]}: must be >= 0")
    if t["grad_clip"] < 0:
        raise ValueError(f"train.grad_clip = {t['grad_clip']}: must be >= 0 (0 disables clipping)")
    if t.get("precision") not in (None, "", "f32", "bf16", "auto"):
        raise ValueError(f"train.precision = {t['precision']!r}: must be \"f32\", \"bf16\" or \"auto\"")
    if s["kind"] not in defaults()["schedule_kinds"]:
        raise ValueError(f"schedule.kind = {s['kind']!r}: want one of {', '.join(defaults()['schedule_kinds'])}")
    if not 0 < s["lr"] < 10:
        raise ValueError(f"schedule.lr = {s['lr']}: must be in (0, 10)")
    if s["warmup_steps"] < 0 or s["decay_steps"] < 0:
        raise ValueError("schedule.warmup_steps and schedule.decay_steps must be >= 0")
    if not 0 <= s["min_lr_ratio"] <= 1:
        raise ValueError(f"schedule.min_lr_ratio = {s['min_lr_ratio']}: must be in [0, 1]")
    if not (0 <= o["beta1"] < 1 and 0 <= o["beta2"] < 1 and o["eps"] > 0 and o["weight_decay"] >= 0):
        raise ValueError(f"optimizer {o}: want beta1, beta2 in [0, 1), eps > 0, weight_decay >= 0")
    validate(c["init"])
    if not c["data"]["train"]:
        raise ValueError("data.train: no training token file given")


def total_steps(c: dict, T: int) -> int:
    """The run's optimizer steps: train.steps, or train.tokens // (batch_size T) (recipe.Config.TotalSteps)."""
    t = c["train"]
    return t["steps"] if t["steps"] > 0 else t["tokens"] // (t["batch_size"] * T)


def lr_at(s: dict, step: int, total: int) -> float:
    """recipe.Schedule.LR: the learning rate of 0-based step of total under schedule s (its [schedule] keys).
    The package's one schedule function: the trainer and the AdamW fixture both call it."""
    peak, warm, floor = s["lr"], s["warmup_steps"], s["min_lr_ratio"] * s["lr"]
    if step < warm:
        return peak * (step + 1) / warm
    if s["kind"] == "cosine":
        span = total - warm
        if span <= 1:
            return peak
        frac = min(1.0, (step - warm) / (span - 1))
        return floor + (peak - floor) * 0.5 * (1 + math.cos(math.pi * frac))
    if s["kind"] == "wsd":
        start = total - s["decay_steps"]
        if step < start or s["decay_steps"] == 0:
            return peak
        frac = min(1.0, (step - start + 1) / s["decay_steps"])
        return peak + (floor - peak) * frac
    if s["kind"] == "constant":
        return peak
    raise ValueError(f"schedule.kind = {s['kind']!r}: want one of {', '.join(defaults()['schedule_kinds'])}")


def model_keys(mc: Any, cj: dict) -> dict:
    """The [model] keys (Go's arch.Config TOML names, every one of them) of a model directory's Config mc and
    raw config.json cj, as Go's model.ReadConfig resolves the file."""
    rs = mc.rope_scaling or {}
    m = {
        "vocab_size": mc.vocab_size, "hidden_size": mc.hidden_size, "intermediate_size": mc.intermediate_size,
        "num_hidden_layers": mc.num_hidden_layers, "num_attention_heads": mc.n_head,
        "kv_heads": 0 if mc.n_kv_head == mc.n_head else mc.n_kv_head,
        "head_dim": 0 if mc.head_dim * mc.n_head == mc.hidden_size else mc.head_dim,
        "max_position_embeddings": mc.max_position_embeddings, "norm_eps": mc.eps, "norm": mc.norm,
        "attn_gate": mc.attn_gate, "rope_theta": mc.rope_theta, "rope_scaling": rs.get("rope_type", ""),
        "rope_factor": rs.get("factor", 0.0), "rope_low_freq_factor": rs.get("low_freq_factor", 0.0),
        "rope_high_freq_factor": rs.get("high_freq_factor", 0.0),
        "rope_original_max_position_embeddings": rs.get("original_max_position_embeddings", 0),
        "tie_word_embeddings": mc.tie_word_embeddings, "qk_norm": mc.qk_norm, "qkv_bias": mc.qkv_bias,
        "ffn": "moe" if mc.moe else "dense",
        "num_experts": mc.num_experts if mc.moe else 0, "num_experts_per_tok": mc.top_k if mc.moe else 0,
        "moe_intermediate_size": mc.expert_ffn if mc.moe else 0,
        "shared_expert_intermediate_size": mc.shared_ffn if mc.moe else 0,
        "norm_topk_prob": mc.norm_topk if mc.moe else False, "router_aux_loss_coef": mc.aux_coef if mc.moe else 0.0,
        "router_z_loss_coef": mc.z_coef if mc.moe else 0.0, "decoder_sparse_step": mc.sparse_step if mc.moe else 0,
        "capacity_factor": mc.capacity if mc.moe else 0.0,
        "router_bias_update_rate": float(cj.get("router_bias_update_rate") or 0.0) if mc.moe else 0.0,
    }
    missing = set(defaults()["types"]["model"]) - set(m) - {"preset"}
    if missing:  # a key Go added that this mapping does not know: refuse rather than write a partial config
        raise ValueError(f"model keys {sorted(missing)} of Go's run config are not mapped from config.json")
    return m


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=0.0)
        except (TypeError, ValueError):
            return False
    return a == b


def resolve_model(c: dict, mc: Any, cj: dict, cfg_path: str, model_dir: str) -> dict:
    """The [model] section of the resolved config: every key from the model directory. Every key the run
    config's [model] gives, and every key of its model.preset it does not override (intermediate_size follows
    an explicit hidden_size, as in Go), must agree with the model directory."""
    have = model_keys(mc, cj)
    user = dict(c.get("model") or {})
    preset = user.pop("preset", None)
    want = {}
    if preset is not None:
        presets = defaults()["presets"]
        p = presets.get(preset.lower())
        if p is None:
            raise ValueError(f"{cfg_path}: model.preset = {preset!r}: want one of {', '.join(sorted(presets))}")
        want = {k: v for k, v in p.items() if k != "preset"}
        if "hidden_size" in user and "intermediate_size" not in user:
            want.pop("intermediate_size", None)
    want.update(user)
    for k, v in want.items():
        if not _same(v, have[k]):
            src = "model." + k if k in user else f"model.preset = {preset!r} ({k})"
            raise ValueError(f"{cfg_path}: {src} = {v!r}, but {model_dir}/config.json gives {have[k]!r}")
    if preset is not None:
        have = {"preset": preset.lower(), **have}
    return have


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"{v}: TOML run configs hold finite numbers only")
        r = repr(v)
        return r if any(ch in r for ch in ".en") else r + ".0"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise ValueError(f"{v!r}: no TOML form")


def encode_toml(c: dict) -> str:
    """The resolved run config as TOML (sections and keys in a fixed order), as Go's Config.Encode would hold it."""
    lines = [f"seed = {_toml_value(c['seed'])}"]
    for sec in ("model", "init", "optimizer", "schedule", "data", "train"):
        lines += ["", f"[{sec}]"]
        tables = []
        for k in sorted(c[sec]):
            v = c[sec][k]
            if isinstance(v, dict):
                tables.append((k, v))
                continue
            lines.append(f"{k} = {_toml_value(v)}")
        for k, v in tables:
            for name, sub in sorted(v.items()):
                lines += ["", f"[{sec}.{k}.{name}]"] + [f"{kk} = {_toml_value(vv)}" for kk, vv in sorted(sub.items())
                                                         if vv is not None]
    return "\n".join(lines) + "\n"
