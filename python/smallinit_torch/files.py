"""The one way the package opens an input file: a regular file (no FIFO, device or directory, which could block or
never end), read up to a size cap, errors naming the file. The Python twin of Go's internal/inputfile."""
from __future__ import annotations

import json
import os
import stat
from typing import Any, BinaryIO

MAX_CONFIG = 16 << 20       # config.json, run configs, state.json, pytorch.json, shard indexes
MAX_TENSORS = 1 << 40       # safetensors and token files: bounded by the memory estimate, not here
MAX_HEADER = 100 << 20      # a safetensors JSON header (the safetensors format's own limit)


class InputError(ValueError):
    """An input file that cannot be read as what it should be; str() starts with the file's path."""


def open_regular(path: str, limit: int) -> BinaryIO:
    """Open path for reading if it is a regular file of at most limit bytes. The check is made on the opened
    descriptor (O_NONBLOCK, so that opening a FIFO does not wait for a writer), then blocking reads are restored."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise
    except OSError as e:
        raise InputError(f"{path}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = ("a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                    else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "not a regular file")
            raise InputError(f"{path}: {kind}, want a regular file")
        if st.st_size > limit:
            raise InputError(f"{path}: {st.st_size} bytes, more than the {limit} this file may have")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str, limit: int = MAX_CONFIG) -> bytes:
    """The whole content of a regular file of at most limit bytes."""
    with open_regular(path, limit) as f:
        b = f.read(limit + 1)
    if len(b) > limit:
        raise InputError(f"{path}: more than {limit} bytes")
    return b


def read_json(path: str, limit: int = MAX_CONFIG, want: type = dict) -> Any:
    """A JSON document of a regular file; want is the type its top level must have."""
    b = read_bytes(path, limit)
    try:
        v = json.loads(b)
    except (ValueError, RecursionError) as e:
        raise InputError(f"{path}: not JSON: {e}") from None
    if want is not None and not isinstance(v, want):
        raise InputError(f"{path}: the top level is {type(v).__name__}, want a JSON {'object' if want is dict else want.__name__}")
    return v


# What a hostile or mistaken input raises: the command-line entry points report it as one line, never as a
# traceback.
USER_ERRORS = (ValueError, OSError, FloatingPointError, RecursionError, MemoryError)


def error_line(e: BaseException) -> str:
    """`smallinit_torch: <file>: <what is wrong>`: the errors of this package start with the file they are about;
    an OSError names its file itself."""
    if isinstance(e, OSError) and e.filename is not None:
        return f"smallinit_torch: {e.filename}: {e.strerror or e}"
    if isinstance(e, MemoryError):
        return "smallinit_torch: out of memory: the model or batch is too large for this machine"
    return f"smallinit_torch: {e}"
