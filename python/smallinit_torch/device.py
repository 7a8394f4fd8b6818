"""Where the PyTorch engine runs, and what the installed torch can do there: the one place that reads the
`--device` flag, checks a device's memory, turns a device's runtime error into one line, and says which
version-gated path (fused attention, fused AdamW, torch.compile) the installed torch takes.

    dev = parse_device("auto")            # cuda:0 when CUDA is usable, else cpu
    dev = parse_device("cuda:1")          # a ValueError naming the device when there is no such GPU
    features(dev)                         # {"sdpa": ..., "adamw": "fused" | "foreach" | "single", "compile": ...}

The code runs on Debian's torch 1.13 (CPU) and on torch >= 2.4 (CUDA); nothing here calls a private API.
Version gates (each names the line it is for):
  - fused attention: torch.nn.functional.scaled_dot_product_attention, public from torch 2.0; on 1.13 the
    engine's own attention formula (model.attention_manual) is used;
  - AdamW: fused=True on CUDA from torch 2.0 (the fused kernel), else foreach=True (1.13 has it), else the
    single-tensor loop;
  - gradient clipping: clip_grad_norm_(foreach=True) on CUDA from torch 2.0, else a float64 norm per tensor;
  - torch.compile: torch 2.0 and later; asked for on 1.13 it is refused with a one-line error."""
from __future__ import annotations

import inspect
import re

import torch
import torch.nn.functional as F

_DEVICE = re.compile(r"^(auto|cpu|meta|cuda)(?::(\d+))?$")


def parse_device(arg: str, local_rank: int = 0) -> torch.device:
    """The torch.device of a `--device` value: auto (cuda:LOCAL_RANK when CUDA is usable, else cpu), cpu,
    cuda (cuda:LOCAL_RANK), cuda:N, or meta (shapes only, for tests). A CUDA device that this machine does not
    have is a ValueError naming it and why."""
    m = _DEVICE.match(arg or "")
    if not m or (m.group(2) is not None and m.group(1) != "cuda"):
        raise ValueError(f"--device {arg!r}: want auto, cpu, cuda or cuda:N")
    kind, index = m.group(1), m.group(2)
    if kind == "auto":
        kind = "cuda" if _cuda_usable() else "cpu"
    if kind != "cuda":
        return torch.device(kind)
    n = _cuda_count()
    if n == 0:
        why = "this torch was built without CUDA" if torch.version.cuda is None else "no CUDA GPU is visible"
        raise ValueError(f"--device {arg}: {why} (torch {torch.__version__})")
    i = int(index) if index is not None else local_rank
    if i >= n:
        raise ValueError(f"--device {arg}: cuda:{i} does not exist: this machine has {n} CUDA device(s)")
    return torch.device("cuda", i)


def _cuda_usable() -> bool:
    try:
        return torch.cuda.is_available()
    except RuntimeError:  # a broken driver: auto falls back to the CPU
        return False


def _cuda_count() -> int:
    try:
        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except RuntimeError:
        return 0


def device_memory(dev: torch.device) -> "tuple[float, str]":
    """(bytes, words) of the memory a training run on dev can use: the GPU's free memory for a CUDA device (what
    other processes and this one hold already is not there to use), the host's MemTotal for the CPU."""
    if dev.type == "cuda":
        p = torch.cuda.get_device_properties(dev)
        free, total = torch.cuda.mem_get_info(dev)
        return float(free), f"{dev}'s {free / 1e9:.1f} GB free (of {total / 1e9:.1f} GB, {p.name})"
    limit, where = float(1 << 47), "the 128 TB an allocation can have"
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    limit = int(line.split()[1]) * 1024.0
                    where = f"this machine's {limit / 1e9:.1f} GB"
                    break
    except OSError:
        pass
    return limit, where


def is_device_error(e: BaseException) -> bool:
    """Whether e is a device's runtime failure (CUDA out of memory, a CUDA or cuDNN/cuBLAS error, a device
    mismatch), which a command reports as one line rather than a traceback."""
    if type(e).__name__ == "OutOfMemoryError":
        return True
    if not isinstance(e, RuntimeError):
        return False
    s = str(e)
    return any(k in s for k in ("CUDA", "cuDNN", "CUBLAS", "cuBLAS", "NCCL", "out of memory",
                                "Expected all tensors to be on the same device"))


def device_error_line(e: BaseException, dev: "torch.device | str | None") -> str:
    """`smallinit_torch: device D: <the first line of the error>` (and a hint for out-of-memory)."""
    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
    hint = ""
    if "out of memory" in str(e) or type(e).__name__ == "OutOfMemoryError":
        hint = " (lower train.batch_size and raise --grad-accum, or use a smaller model)"
    return f"smallinit_torch: device {dev}: {first}{hint}"


def bf16_problem(dev: torch.device) -> str:
    """Why bf16 autocast on dev is not the precision it claims ("" when it is): the probe is one matmul under
    torch.autocast, a dot product of 4096 terms 0.01 (bf16: 0.010009765625) with ones. Accumulated in float32,
    as bf16 training assumes (bf16 operands, float32 sums), it gives 41.0; summed in bfloat16 it stalls at 4
    (each 0.01 falls below half an ulp of the running sum), which Debian's torch 1.13 does on the CPU. A version
    table would go stale; the probe asks the torch at hand."""
    if dev.type not in ("cpu", "cuda"):
        return ""
    a = torch.full((1, 4096), 0.01, device=dev)
    b = torch.ones(4096, 1, device=dev)
    with torch.autocast(dev.type, dtype=torch.bfloat16):
        got = float((a @ b).float())
    want = 4096 * float(torch.tensor(0.01, dtype=torch.bfloat16))
    if abs(got - want) <= 1e-3 * want:
        return ""
    return (f"torch {torch.__version__} sums bf16 matmuls on {dev} in bfloat16, not float32 (a 4096-term dot "
            f"product of 0.01 gives {got:g}, want {want:g}): its gradients would be wrong")


def torch_major() -> int:
    m = re.match(r"(\d+)", torch.__version__)
    return int(m.group(1)) if m else 0


def sdpa():
    """torch 2's fused causal attention (q, k, v) -> softmax(q k^T / sqrt(dh) + mask) v, or None on torch 1.x
    (whose only fused attention is private)."""
    f = getattr(F, "scaled_dot_product_attention", None)
    if f is None:
        return None

    def attention(q, k, v):
        return f(q, k, v, is_causal=True)
    return attention


def adamw_kind(dev: torch.device) -> str:
    """The fastest AdamW path the installed torch has on dev: "fused" (torch >= 2.0 on CUDA), "foreach" (torch
    1.13 and later), or "single" (the per-tensor loop, the parity reference)."""
    params = inspect.signature(torch.optim.AdamW).parameters
    if dev.type == "cuda" and "fused" in params:
        return "fused"
    return "foreach" if "foreach" in params else "single"


def adamw_options(kind: str) -> dict:
    """The torch.optim.AdamW keyword arguments of an adamw_kind."""
    if kind == "fused":
        return {"fused": True}
    if kind == "foreach":
        return {"foreach": True}
    return {"foreach": False}


def has_foreach_clip() -> bool:
    """torch.nn.utils.clip_grad_norm_ takes foreach= (torch 2.0 and later): the gradient norm and clipping in a
    few multi-tensor kernels, with no host read."""
    return "foreach" in inspect.signature(torch.nn.utils.clip_grad_norm_).parameters


def has_compile() -> bool:
    """torch.compile exists (torch 2.0 and later)."""
    return hasattr(torch, "compile")


def features(dev: torch.device) -> dict:
    """What this torch does on dev, for the run's pytorch.json and the log: version, device, each gated path."""
    return {"torch": torch.__version__, "device": str(dev), "sdpa": sdpa() is not None,
            "adamw": adamw_kind(dev), "clip": "foreach" if dev.type == "cuda" and has_foreach_clip() else "per-tensor",
            "compile": has_compile()}
