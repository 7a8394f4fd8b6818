"""smallinit's token files (.tok, the format data/tokfile.go owns) and the training sampler's window order
(train/sampler.go), so that a PyTorch run sees exactly the batches of the Go run with the same seed."""
from __future__ import annotations

import array
import os
import struct
import sys

import torch

from .files import MAX_TENSORS, open_regular, read_json
from .gorand import fisher_yates

TOK_MAGIC = b"SITOKENS"
CHUNK = 1 << 20  # ids read at a time by the whole-file reads (max_id, counts, read_tokens): a few MB of temporaries


class TokenFile:
    """A .tok file mapped into memory, never read or widened whole: the ids stay on disk (paged in as windows
    are read) in the file's own width, uint16 or uint32, and only the windows a batch gathers are widened to
    int64. len(), a slice (an int64 tensor) and windows() read it."""

    def __init__(self, path: str, raw: torch.Tensor, width: int) -> None:
        self.path, self._raw, self.width = path, raw, width  # raw: int16 / int32 view of the id bytes

    def __len__(self) -> int:
        return self._raw.shape[0]

    def _widen(self, t: torch.Tensor) -> torch.Tensor:
        return t.to(torch.int64) & (0xFFFF if self.width == 2 else 0xFFFFFFFF)

    def __getitem__(self, s: slice) -> torch.Tensor:
        if not isinstance(s, slice):
            raise TypeError(f"{self.path}: a token file is read by slices, not {type(s).__name__}")
        return self._widen(self._raw[s])

    @property
    def nbytes(self) -> int:
        return len(self) * self.width

    def to_device(self, device: "torch.device | str") -> None:
        """Keep the ids on device (a GPU), in the file's width, so that windows() gathers there: the host then
        sends only the window indices each step."""
        self._raw = self._raw.to(device)

    def windows(self, ids, T: int, device: "torch.device | str" = "cpu") -> "tuple[torch.Tensor, torch.Tensor]":
        """(inputs, targets) [len(ids), T] int64 on device of windows ids (window k: tokens [kT, kT+T] as
        data.Window), in the order of ids. When the ids live on device (to_device) the windows are gathered
        there from the indices alone; else one gather of the windows' T+1 tokens each on the host, then one
        copy to the device (asynchronous from pinned memory when the device is a GPU)."""
        device = torch.device(device)
        k = torch.as_tensor(ids, dtype=torch.int64)
        here = self._raw.device
        if here.type == "cuda":
            k = k.pin_memory().to(here, non_blocking=True)
        idx = k[:, None] * T + torch.arange(T + 1, dtype=torch.int64, device=here)
        w = self._raw[idx]
        if w.device != device:
            w = w.pin_memory().to(device, non_blocking=True) if device.type == "cuda" else w.to(device)
        w = self._widen(w)
        return w[:, :-1], w[:, 1:]

    def max_id(self, chunk: int = 0) -> "tuple[int, int]":
        """(largest id, index of its first occurrence) over the file, read chunk by chunk in the file's own width,
        never widened: the ids are stored unsigned in a signed view, and flipping the sign bit (x ^ lo, lo the
        view's minimum) orders them as unsigned, so one max of the flipped chunk gives the largest id - lo;
        (-1, -1) when empty."""
        best, at, chunk = -1, -1, chunk or CHUNK
        lo = -(1 << (8 * self.width - 1))
        for i in range(0, len(self), chunk):
            part = self._raw[i:i + chunk]
            m = int((part ^ lo).max()) - lo
            if m > best:
                raw = m if m < -lo else m + 2 * lo  # m as the signed view stores it
                best, at = m, i + int((part == raw).to(torch.uint8).argmax())
        return best, at

    def counts(self, vocab: int, chunk: int = 0) -> torch.Tensor:
        """[vocab] int64: how often each id below vocab occurs, chunk by chunk (one chunk widened at a time)."""
        c, chunk = torch.zeros(vocab, dtype=torch.int64), chunk or CHUNK
        for i in range(0, len(self), chunk):
            part = self[i:i + chunk]
            c += torch.bincount(part[part < vocab], minlength=vocab)[:vocab]
        return c


def trusted_max_id(path: str, count: int) -> "int | None":
    """The largest id a token file can hold by the stats.json that `smallinit data prepare` wrote beside it:
    vocab_size - 1 (the tokenizer makes no other ids), when the file is a split stats.json describes (train.tok,
    val.tok, val.<lang>.tok) with the token count it records; else None (the file is scanned)."""
    d, name = os.path.split(path)
    sp = os.path.join(d, "stats.json")
    if not os.path.isfile(sp):
        return None
    try:
        st = read_json(sp)
    except ValueError:
        return None
    if name in ("train.tok", "val.tok"):
        split = st.get(name[:-4])
    elif name.startswith("val.") and name.endswith(".tok"):
        split = (st.get("val_by_lang") or {}).get(name[4:-4])
    else:
        return None
    vocab = st.get("vocab_size")
    if not isinstance(split, dict) or split.get("tokens") != count or isinstance(vocab, bool) or not isinstance(vocab, int) or vocab < 1:
        return None
    return vocab - 1


def open_tokens(path: str, vocab: int = 0) -> TokenFile:
    """A .tok file (data/tokfile.go's format) as a TokenFile mapped from disk. Checks the magic, version, width,
    that the file holds exactly the count its header claims, and (vocab > 0) that every id is below vocab: by
    the prepared directory's stats.json when it describes the file (trusted_max_id: no read of the ids, so a
    30-billion-token file opens in milliseconds), else by a scan chunk by chunk; errors name the file."""
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
    dtype = torch.int16 if width == 2 else torch.int32
    if count == 0:
        raw = torch.empty(0, dtype=dtype)
    else:  # a private, read-only mapping: pages are read as windows touch them
        storage = torch.UntypedStorage.from_file(path, False, size)
        raw = torch.empty(0, dtype=torch.uint8).set_(storage)[24:].view(dtype)
        if sys.byteorder != "little":
            raise ValueError(f"read tokens {path}: token files are little-endian; this machine is not")
    toks = TokenFile(path, raw, width)
    if vocab > 0 and count:
        bound = trusted_max_id(path, count)
        if bound is not None and bound < vocab:
            return toks
        m, i = toks.max_id()
        if m >= vocab:
            raise ValueError(f"read tokens {path}: token {i} has id {m}, outside the vocabulary [0, {vocab})")
    return toks


def read_tokens(path: str, vocab: int = 0) -> torch.Tensor:
    """All token ids of a .tok file as an int32 tensor (4 bytes an id, widened chunk by chunk; ids are below 2^31),
    for small files and tests: the trainer and analyze map files with open_tokens. Checks as open_tokens."""
    toks = open_tokens(path, vocab)
    out = torch.empty(len(toks), dtype=torch.int32)
    for i in range(0, len(toks), CHUNK):
        out[i:i + CHUNK] = toks[i:i + CHUNK]
    return out


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
        self.perm = fisher_yates(self.nw, self.seed, 0x5eed0000 + self.epoch)  # array('i'), 4 bytes a window

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

    def batch(self, ids, device="cpu"):
        """(inputs, targets) [len(ids), T] int64 on device of the given windows."""
        if isinstance(self.toks, TokenFile):
            return self.toks.windows(ids, self.T, device)
        xs, ys = zip(*(window(self.toks, k, self.T) for k in ids))
        return torch.stack(xs).to(device), torch.stack(ys).to(device)
