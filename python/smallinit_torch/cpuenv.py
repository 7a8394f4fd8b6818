"""CPU settings that must be made before torch is imported (this module does not import torch)."""
import os
import sys


def openblas_coretype():
    """The OpenBLAS kernel family this CPU supports, from /proc/cpuinfo. OpenBLAS's DYNAMIC_ARCH build picks its
    kernel by CPU family and model, and on CPUs it does not know (virtual machines that report a generic
    "Intel(R) Xeon(R) Processor", as on this project's machine) it falls back to Prescott, an SSE3 kernel about
    3x slower than its AVX-512 one; OPENBLAS_CORETYPE overrides the guess, and must be set before it loads."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return None
    if "avx512f" in flags and "avx512bw" in flags and "avx512vl" in flags:
        return "SkylakeX"
    if "avx2" in flags and "fma" in flags:
        return "Haswell"
    return None


def set_best_cpu_env():
    """The benchmark's "best settings" that only work before torch loads: OMP_WAIT_POLICY=PASSIVE (libgomp reads
    it when torch is loaded) and OPENBLAS_CORETYPE from the CPU flags (read when libopenblas loads; kept if set)."""
    if "torch" in sys.modules:
        raise RuntimeError("set_best_cpu_env must run before torch is imported")
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    if "OPENBLAS_CORETYPE" not in os.environ and openblas_coretype():
        os.environ["OPENBLAS_CORETYPE"] = openblas_coretype()
