"""smallinit's token files (.tok, the format data/tokfile.go owns) and the training sampler's window order
(train/sampler.go), so that a PyTorch run sees exactly the batches of the Go run with the same seed."""
from __future__ import annotations

import array
import os
import struct
import sys

import torch

from .files import MAX_TENSORS, open_regular
from .gorand import PCG

TOK_MAGIC = b"SITOKENS"


def read_tokens(path: str, vocab: int = 0) -> torch.Tensor:
    """All token ids of a .tok file as an int64 tensor. Checks the magic, version, width, that the file holds
    exactly the count its header claims, and (vocab > 0) that every id is below vocab; errors name the file."""
    with open_regular(path, MAX_TENSORS) as f:
        size = os.fstat(f.fileno()).st_size
        hdr = f.read(24)
        if len(hdr) < 24:
            raise ValueError(f"read tokens {path}: header: file is {size} bytes, a token file has a 24-byte header")
        if hdr[:8] != TOK_MAGIC:
            raise ValueError(f"read tokens {path}: not a token file (magic {hdr[:8]!r}, want {TOK_MAGIC!r})")
        version, width, count = struct.unpack("<IIQ", hdr[8:24])
        if version != 1:
            raise ValueError(f"read tokens {path}: version {version}, this reader reads version 1")
        if width not in (2, 4):
            raise ValueError(f"read tokens {path}: {width} bytes per token, want 2 or 4")
        if count * width != size - 24:
            raise ValueError(f"read tokens {path}: header says {count} tokens of {width} bytes, the file holds "
                             f"{size - 24} bytes of ids")
        body = bytearray(f.read())
    if count == 0:
        return torch.empty(0, dtype=torch.int64)
    if width == 2:
        toks = torch.frombuffer(body, dtype=torch.int16).to(torch.int64) & 0xFFFF
    else:
        toks = torch.frombuffer(body, dtype=torch.int32).to(torch.int64) & 0xFFFFFFFF
    if vocab > 0 and int(toks.max()) >= vocab:
        i = int((toks >= vocab).nonzero()[0])
        raise ValueError(f"read tokens {path}: token {i} has id {int(toks[i])}, outside the vocabulary [0, {vocab})")
    return toks


def write_tokens(path: str, ids) -> None:
    """Write ids as a version-1 .tok file (uint16 when every id fits, else uint32)."""
    ids = [int(i) for i in ids]
    width = 2 if not ids or max(ids) < 65536 else 4
    raw = array.array("H" if width == 2 else "I", ids)
    if sys.byteorder != "little":
        raw.byteswap()
    with open(path, "wb") as f:
        f.write(TOK_MAGIC + struct.pack("<IIQ", 1, width, len(ids)) + raw.tobytes())


def num_windows(n, T):
    """Windows of T+1 tokens (window k starts at k*T) in n tokens: data.NumWindows."""
    return (n - 1) // T if n >= 1 and T >= 1 else 0


def window(toks, k, T):
    """(inputs, targets) of window k: tokens [kT, kT+T) and [kT+1, kT+T+1)."""
    return toks[k * T:k * T + T], toks[k * T + 1:k * T + T + 1]


class Sampler:
    """train.Sampler: windows in a seeded random order without replacement per epoch; the whole state is
    (epoch, pos). The permutation of an epoch is Fisher-Yates from rand.NewPCG(seed, 0x5eed0000 + epoch)."""

    def __init__(self, toks, T, seed, epoch=0, pos=0):
        self.toks, self.T, self.seed = toks, T, seed
        self.nw = num_windows(len(toks), T)
        if self.nw == 0:
            raise ValueError(f"{len(toks)} training tokens: need at least {T + 1} for one window of T={T}")
        if pos < 0 or pos > self.nw or epoch < 0:
            raise ValueError(f"sampler position epoch {epoch}, window {pos}: out of range ({self.nw} windows)")
        self.epoch, self.pos = epoch, pos
        self._shuffle()

    def _shuffle(self):
        perm = list(range(self.nw))
        rng = PCG(self.seed, 0x5eed0000 + self.epoch)
        for i in range(self.nw - 1, 0, -1):
            j = rng.intn(i + 1)
            perm[i], perm[j] = perm[j], perm[i]
        self.perm = perm

    def next_ids(self, n):
        """The next n window indices (advancing epochs as Go's Next does)."""
        out = []
        for _ in range(n):
            if self.pos == self.nw:
                self.epoch += 1
                self.pos = 0
                self._shuffle()
            out.append(self.perm[self.pos])
            self.pos += 1
        return out

    def batch(self, ids):
        """(inputs, targets) [len(ids), T] of the given windows."""
        xs, ys = zip(*(window(self.toks, k, self.T) for k in ids))
        return torch.stack(xs), torch.stack(ys)
