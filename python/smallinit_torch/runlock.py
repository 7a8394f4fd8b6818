"""A run directory's lock, in the format of Go's internal/runlock, so that the PyTorch trainer, `smallinit train`
and a study never write one run at once: the file RUN/lock, created exclusively, holds {"pid", "host", "token",
"started"} as JSON; its holder touches it every heartbeat (10 s); it is stale when its mtime is more than three
heartbeats old, or when it names a process of this host that is gone, and a stale lock is taken over.

    lock = RunLock.acquire(run)            # ValueError "RUN: locked by pid P on H since T" when held
    ...
    lock.release()

    watch = LockWatch(run, os.getppid())   # --lock-held: the parent (the Go engine) holds the lock
    watch.check()                          # ValueError once the lock no longer names the parent

A lost lock (another process took it over, or the parent that held it died) stops the holder without a
checkpoint: `lost` is set by the heartbeat thread and the trainer checks it every step, as Go's ErrAbandoned."""
from __future__ import annotations

import datetime
import json
import os
import secrets
import signal
import socket
import sys
import threading
import time

FILE_NAME = "lock"
HEARTBEAT = 10.0
STALE_AFTER = 3 * HEARTBEAT
_MAX = 4096


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(_MAX)
    except OSError:
        return b""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def holder(path: str) -> "tuple[bytes, str, bool]":
    """(content, holder in words, stale) of the lock at path, as runlock.Inspect."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return b"", "a process that just released it", True
    b = _read(path)
    try:
        li = json.loads(b)
        who = f"pid {li['pid']} on {li['host']} since {li['started']}"
    except (ValueError, KeyError, TypeError):
        li, who = {}, f"an unreadable lock {path}"
    age = time.time() - st.st_mtime
    if age > STALE_AFTER:
        return b, who + f" (no heartbeat for {age:.0f}s)", True
    if isinstance(li, dict) and li.get("host") == socket.gethostname() and isinstance(li.get("pid"), int) \
            and li["pid"] > 0 and li["pid"] != os.getpid() and not _alive(li["pid"]):
        return b, who + " (process gone)", True
    return b, who, False


class _Heartbeat:
    """A daemon thread calling beat() every interval until stop(); lost is set when beat() returns False."""

    def __init__(self, beat, every: float) -> None:
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._beat, self._every = beat, every
        self._t = threading.Thread(target=self._loop, name="smallinit-runlock", daemon=True)
        self._t.start()

    def _loop(self) -> None:
        while not self._stop.wait(self._every):
            if not self._beat():
                self.lost.set()
                return

    def stop(self) -> None:
        self._stop.set()
        self._t.join()


class RunLock:
    """The lock of a run directory held by this process (acquire), heartbeating until release()."""

    def __init__(self, path: str, me: bytes, every: float) -> None:
        self.path, self._me = path, me
        self._hb = _Heartbeat(self._beat, every)

    @classmethod
    def acquire(cls, run: str, every: float = HEARTBEAT) -> "RunLock":
        path = os.path.join(run, FILE_NAME)
        me = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "token": secrets.token_hex(8),
                         "started": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")},
                        separators=(",", ":")).encode()
        for attempt in range(2):
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                old, who, stale = holder(path)
                if not stale or attempt:
                    raise ValueError(f"{run}: locked by {who}: another process trains this run") from None
                aside = f"{path}.stale-{secrets.token_hex(6)}"
                try:
                    os.rename(path, aside)
                except FileNotFoundError:
                    continue
                if _read(aside) != old:  # a fresh lock was moved: put it back
                    try:
                        os.link(aside, path)
                    except OSError:
                        pass
                os.remove(aside)
                continue
            try:
                os.write(fd, me)
                os.fsync(fd)
            finally:
                os.close(fd)
            return cls(path, me, every)
        raise ValueError(f"{run}: its lock changed hands while being taken: try again")

    def _beat(self) -> bool:
        if _read(self.path) != self._me:
            return False
        now = time.time()
        try:
            os.utime(self.path, (now, now))
        except OSError:
            pass
        return True

    @property
    def lost(self) -> bool:
        return self._hb.lost.is_set()

    def release(self) -> None:
        self._hb.stop()
        if _read(self.path) == self._me:
            os.remove(self.path)


class LockWatch:
    """--lock-held: the parent process (the Go engine or a study) holds the run's lock. The trainer checks at
    start that the lock names its parent, and a watch thread then checks every second that it still does and
    that the parent lives; lost says it no longer does (taken over as stale, or the parent died)."""

    def __init__(self, run: str, parent: int, every: float = 1.0) -> None:
        self.path, self.parent = os.path.join(run, FILE_NAME), parent
        if not self._ours():
            b = _read(self.path)
            raise ValueError(f"{run}: --lock-held, but its lock does not name this trainer's parent (pid {parent}): "
                             f"{b.decode(errors='replace') or 'no lock'}")
        self._hb = _Heartbeat(self._ours, every)

    def _ours(self) -> bool:
        if os.getppid() != self.parent:
            return False
        try:
            li = json.loads(_read(self.path))
        except ValueError:
            return False
        return isinstance(li, dict) and li.get("pid") == self.parent and li.get("host") == socket.gethostname()

    @property
    def lost(self) -> bool:
        return self._hb.lost.is_set()

    def release(self) -> None:
        self._hb.stop()


def die_with_parent() -> None:
    """On Linux, have the kernel SIGKILL this process when its parent dies (prctl PR_SET_PDEATHSIG), so that a
    killed study or spawner leaves no trainer writing into its run; and if the parent is gone already, exit.
    It imports nothing heavy, so that `python -m smallinit_torch train --lock-held` sets it before torch loads
    (seconds under load, during which a killed parent would otherwise leave the trainer running)."""
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):
            pass
    if parent == 1 or os.getppid() != parent:
        os._exit(1)
