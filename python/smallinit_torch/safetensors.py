"""A small safetensors reader and writer (no safetensors package needed), and atomic file writes.

The format: an 8-byte little-endian header length, a JSON header {name: {dtype, shape, data_offsets}, optional
"__metadata__": {str: str}}, padded with spaces, then the raw little-endian tensor data."""
import ctypes
import json
import math
import os
import sys

import torch

DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8}
assert sys.byteorder == "little", "safetensors data is little-endian"


def read_safetensors(path, with_metadata=False):
    """All tensors of one safetensors file, by name (and its metadata with with_metadata=True). A malformed
    file raises ValueError naming it."""
    with open(path, "rb") as f:
        buf = f.read()
    if len(buf) < 8:
        raise ValueError(f"{path}: {len(buf)} bytes, not a safetensors file")
    n = int.from_bytes(buf[:8], "little")
    if n > len(buf) - 8:
        raise ValueError(f"{path}: header length {n} exceeds the file ({len(buf)} bytes)")
    try:
        header = json.loads(buf[8:8 + n])
    except ValueError as e:
        raise ValueError(f"{path}: header is not JSON: {e}") from None
    meta = header.pop("__metadata__", None) or {}
    data = bytearray(buf[8 + n:])
    out = {}
    for name, info in header.items():
        if info.get("dtype") not in DTYPES:
            raise ValueError(f"{path}: tensor {name}: dtype {info.get('dtype')!r} is not supported")
        dtype, shape, (begin, end) = DTYPES[info["dtype"]], info["shape"], info["data_offsets"]
        count = math.prod(shape)
        if end - begin != count * torch.empty(0, dtype=dtype).element_size() or not 0 <= begin <= end <= len(data):
            raise ValueError(f"{path}: tensor {name}: data_offsets {begin}..{end} do not fit shape {shape} {info['dtype']}")
        t = torch.frombuffer(data, dtype=dtype, count=count, offset=begin) if count else torch.empty(0, dtype=dtype)
        out[name] = t.clone().reshape(shape)
    return (out, meta) if with_metadata else out


def write_safetensors(path, tensors, metadata=None, atomic=False):
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


def read_model_weights(model_dir):
    """The tensors of a model directory: model.safetensors, or the shards a model.safetensors.index.json lists."""
    one = os.path.join(model_dir, "model.safetensors")
    if os.path.isfile(one):
        return read_safetensors(one)
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if not os.path.isfile(index):
        raise FileNotFoundError(f"{model_dir}: no model.safetensors or model.safetensors.index.json")
    with open(index) as f:
        shards = sorted(set(json.load(f)["weight_map"].values()))
    out = {}
    for s in shards:
        out.update(read_safetensors(os.path.join(model_dir, s)))
    return out
