"""The run directory's lock (smallinit_torch.runlock), in Go's format: one writer per run."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import unittest

from smallinit_torch import runlock
from smallinit_torch.runlock import LockWatch, RunLock
from smallinit_torch.train import LockLost, Owner


class RunLockTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.d = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def test_second_holder_is_refused_naming_the_first(self):
        """A held lock refuses a second acquire with the holder's pid; released, it is gone and can be taken."""
        a = RunLock.acquire(self.d)
        with open(os.path.join(self.d, "lock")) as f:
            li = json.loads(f.read())
        self.assertEqual((li["pid"], li["host"]), (os.getpid(), socket.gethostname()))
        self.assertEqual(sorted(li), ["host", "pid", "started", "token"])  # Go's lockInfo keys
        with self.assertRaisesRegex(ValueError, f"locked by pid {os.getpid()} on "):
            RunLock.acquire(self.d)
        a.release()
        self.assertFalse(os.path.exists(os.path.join(self.d, "lock")))
        RunLock.acquire(self.d).release()

    def test_lock_of_a_dead_process_is_taken_over(self):
        """A lock naming a process of this host that is gone is stale, and taken over at once."""
        p = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
        with open(os.path.join(self.d, "lock"), "w") as f:
            json.dump({"pid": int(p.stdout), "host": socket.gethostname(), "token": "t", "started": "2026-01-01T00:00:00Z"}, f)
        RunLock.acquire(self.d).release()

    def test_taken_over_lock_is_lost(self):
        """When another process replaces the lock, the holder's heartbeat says it is lost, and the trainer's
        per-step check stops the run with LockLost."""
        own = Owner(held=False)
        own.lock = RunLock.acquire(self.d, every=0.01)
        with open(os.path.join(self.d, "lock"), "w") as f:
            f.write('{"pid": 1, "host": "elsewhere", "token": "x", "started": "2026-01-01T00:00:00Z"}')
        for _ in range(200):
            if own.lock.lost:
                break
            time.sleep(0.01)
        with self.assertRaisesRegex(LockLost, "its lock was taken over"):
            own.check(self.d)
        own.release()
        self.assertTrue(os.path.exists(os.path.join(self.d, "lock")))  # another's lock is not removed

    def test_lock_held_must_name_the_parent(self):
        """--lock-held: the lock must name this process's parent; else the trainer refuses to start."""
        with self.assertRaisesRegex(ValueError, "--lock-held, but its lock does not name"):
            LockWatch(self.d, os.getppid())
        with open(os.path.join(self.d, "lock"), "w") as f:
            json.dump({"pid": os.getppid(), "host": socket.gethostname(), "token": "t", "started": "x"}, f)
        w = LockWatch(self.d, os.getppid(), every=0.01)
        self.assertFalse(w.lost)
        os.remove(os.path.join(self.d, "lock"))
        for _ in range(200):
            if w.lost:
                break
            time.sleep(0.01)
        self.assertTrue(w.lost)
        w.release()

    def test_stale_after_is_go_s(self):
        self.assertEqual((runlock.HEARTBEAT, runlock.STALE_AFTER, runlock.FILE_NAME), (10.0, 30.0, "lock"))


if __name__ == "__main__":
    unittest.main()
