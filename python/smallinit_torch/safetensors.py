"""A small safetensors reader and writer (no safetensors package needed), and atomic file writes.

The format: an 8-byte little-endian header length, a JSON header {name: {dtype, shape, data_offsets}, optional
"__metadata__": {str: str}}, padded with spaces, then the raw little-endian tensor data."""
from __future__ import annotations

import ctypes
import json
import math
import os
import sys
from typing import Any

import torch

from .files import MAX_HEADER, MAX_TENSORS, open_regular, read_json

DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8}
if sys.byteorder != "little":
    raise ImportError("smallinit_torch.safetensors reads little-endian data in place: a big-endian machine is not supported")


def _header_entry(path: str, name: Any, info: Any, size: int) -> "tuple[torch.dtype, list, int, int]":
    """(dtype, shape, begin, end) of one header entry, every field checked against the data's size."""
    where = f"{path}: tensor {name!r}"
    if not isinstance(name, str) or not name or any(ch in name for ch in "/\\\x00") or name.startswith("."):
        raise ValueError(f"{where}: not a tensor name (no path separators, NULs or leading dot)")
    if not isinstance(info, dict):
        raise ValueError(f"{where}: header entry is a {type(info).__name__}, want an object")
    if info.get("dtype") not in DTYPES:
        raise ValueError(f"{where}: dtype {info.get('dtype')!r} is not supported (have {', '.join(DTYPES)})")
    shape, offs = info.get("shape"), info.get("data_offsets")
    if not isinstance(shape, list) or not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 1 << 40 for x in shape):
        raise ValueError(f"{where}: shape {shape!r}, want a list of non-negative integers")
    if (not isinstance(offs, list) or len(offs) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in offs)):
        raise ValueError(f"{where}: data_offsets {offs!r}, want [begin, end]")
    dtype, (begin, end) = DTYPES[info["dtype"]], offs
    count = math.prod(shape)
    if not 0 <= begin <= end <= size or end - begin != count * torch.empty(0, dtype=dtype).element_size():
        raise ValueError(f"{where}: data_offsets {begin}..{end} do not fit shape {shape} {info['dtype']} "
                         f"in {size} bytes of data")
    return dtype, shape, begin, end


def read_safetensors(path: str, with_metadata: bool = False):
    """All tensors of one safetensors file, by name (and its metadata with with_metadata=True). A malformed
    file (or a FIFO, device or directory) raises ValueError naming it."""
    with open_regular(path, MAX_TENSORS) as f:
        head = f.read(8)
        if len(head) < 8:
            raise ValueError(f"{path}: {len(head)} bytes, not a safetensors file")
        size = os.fstat(f.fileno()).st_size
        n = int.from_bytes(head, "little")
        if n > size - 8 or n > MAX_HEADER:
            raise ValueError(f"{path}: header length {n} exceeds the file ({size} bytes) or {MAX_HEADER} bytes")
        try:
            header = json.loads(f.read(n))
        except (ValueError, RecursionError) as e:
            raise ValueError(f"{path}: header is not JSON: {e}") from None
        if not isinstance(header, dict):
            raise ValueError(f"{path}: header is a JSON {type(header).__name__}, want an object")
        meta = header.pop("__metadata__", None) or {}
        if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
            raise ValueError(f"{path}: __metadata__ {meta!r}, want an object of strings")
        data_size = size - 8 - n
        entries = {name: _header_entry(path, name, info, data_size) for name, info in header.items()}
        data = bytearray(f.read(data_size))
    if len(data) != data_size:
        raise ValueError(f"{path}: the file shrank while it was read")
    out = {}
    for name, (dtype, shape, begin, end) in entries.items():
        count = math.prod(shape)
        t = torch.frombuffer(data, dtype=dtype, count=count, offset=begin) if count else torch.empty(0, dtype=dtype)
        out[name] = t.clone().reshape(shape)
    return (out, meta) if with_metadata else out


def write_safetensors(path: str, tensors: dict, metadata: "dict | None" = None, atomic: bool = False) -> None:
    """Write tensors (name -> tensor, in that order) and string metadata; atomic=True writes a temporary file,
    fsyncs it and renames it over path, so a crash leaves the old file or the new one, never half of one."""
    names = {v: k for k, v in DTYPES.items()}
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        nbytes = t.numel() * t.element_size()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + nbytes]}
        blobs.append(ctypes.string_at(t.data_ptr(), nbytes) if nbytes else b"")
        offset += nbytes
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    body = len(h).to_bytes(8, "little") + h + b"".join(blobs)
    if atomic:
        write_file_atomic(path, body)
    else:
        with open(path, "wb") as f:
            f.write(body)


def write_file_atomic(path, data):
    """Write bytes (or str) to path through a synced temporary file renamed into place, then sync the directory."""
    if isinstance(data, str):
        data = data.encode()
    d = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(d, f".tmp-{os.path.basename(path)}-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    sync_dir(d)


def sync_dir(d):
    """fsync a directory so that renames inside it are durable."""
    fd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_model_weights(model_dir: str) -> dict:
    """The tensors of a model directory: model.safetensors, or the shards a model.safetensors.index.json lists."""
    one = os.path.join(model_dir, "model.safetensors")
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if not os.path.lexists(one) and not os.path.lexists(index):
        raise FileNotFoundError(f"{model_dir}: no model.safetensors or model.safetensors.index.json")
    if os.path.lexists(one):
        return read_safetensors(one)
    wm = read_json(index).get("weight_map")
    if not isinstance(wm, dict) or not all(isinstance(v, str) for v in wm.values()):
        raise ValueError(f"{index}: weight_map must be an object of tensor name -> shard file name")
    out = {}
    for s in sorted(set(wm.values())):
        if os.path.basename(s) != s or s.startswith("."):
            raise ValueError(f"{index}: shard {s!r} is not a file name inside the model directory")
        part = read_safetensors(os.path.join(model_dir, s))
        for name in part:
            if wm.get(name) != s:
                raise ValueError(f"{index}: tensor {name} of shard {s} is mapped to {wm.get(name)!r}")
        out.update(part)
    lost = [n for n in wm if n not in out]
    if lost:
        raise ValueError(f"{index}: tensor(s) {', '.join(lost[:5])} are in no shard")
    return out
