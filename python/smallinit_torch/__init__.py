"""smallinit for PyTorch: the study's γ-initialisation, output gate, RMSNorm ε and diagnostics for any PyTorch
model, and a data-parallel trainer whose run directories smallinit's Go tools read (see docs/pytorch.md).

    from smallinit_torch import gamma_init_, OutputGate, set_rmsnorm_eps, Diagnostics

Submodules: model (the PyTorch model of the engine), init (gamma_init_), gate (OutputGate, set_rmsnorm_eps),
diagnostics, train (`python -m smallinit_torch train`), data (.tok files, Go's window order), safetensors,
reference (parity fixtures, selfcheck, bench; the old torchref.py).

Attributes are imported lazily, so that `smallinit_torch.cpuenv` can run before torch is loaded."""

__version__ = "0.1.0"

_EXPORTS = {
    "gamma_init_": "init", "gamma_normal_": "init", "table": "init",
    "OutputGate": "gate", "GateHandle": "gate", "set_rmsnorm_eps": "gate", "add_output_gate": "gate",
    "Diagnostics": "diagnostics", "weight_metrics": "diagnostics",
    "Config": "model", "Llama": "model", "load_model": "model",
    "read_safetensors": "safetensors", "write_safetensors": "safetensors",
}


_SUBMODULES = ("init", "gate", "diagnostics", "model", "train", "data", "safetensors", "files", "runconfig",
               "reference", "gorand", "kernels", "cpuenv", "device")


def __getattr__(name: str):
    import importlib
    if name in _EXPORTS:
        return getattr(importlib.import_module("." + _EXPORTS[name], __name__), name)
    if name in _SUBMODULES:  # smallinit_torch.init.gamma_normal_ without importing the submodule first
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> "list[str]":
    return sorted(set(globals()) | set(_EXPORTS) | set(_SUBMODULES))


__all__ = sorted(_EXPORTS)
