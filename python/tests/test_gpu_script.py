"""scripts/gpu/h1-replica.sh, the prepared GPU run, smoke-tested on the CPU: two arms of a few steps on a small
token file; each run evaluates every 10% of its steps, and $OUT gets the summary and one tarball."""
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

import torch

from smallinit_torch.data import write_tokens

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class TestH1ReplicaScript(unittest.TestCase):
    def test_cpu_smoke_run_reports_every_tenth(self):
        """Two arms of 4 steps on the CPU: both finish, validation losses at every 10% of the steps (here every
        step), the H1 pair is summarised, and $OUT holds at most 8 files."""
        d = tempfile.mkdtemp()
        try:
            data, out = os.path.join(d, "data"), os.path.join(d, "out")
            os.makedirs(data)
            g = torch.Generator().manual_seed(0)
            write_tokens(os.path.join(data, "train.tok"), torch.randint(0, 4096, (20000,), generator=g).tolist())
            write_tokens(os.path.join(data, "val.tok"), torch.randint(0, 4096, (3000,), generator=g).tolist())
            env = dict(os.environ, OUT=out, PYTHON=sys.executable)
            r = subprocess.run(["bash", os.path.join(ROOT, "scripts", "gpu", "h1-replica.sh"), "--device", "cpu",
                                "--steps", "4", "--only", "2", "--no-256", "--probe-seconds", "1", "--data", data,
                                "--minutes", "3"], env=env, capture_output=True, text=True, timeout=240)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertLessEqual(len(os.listdir(out)), 8)
            with open(os.path.join(out, "summary.json")) as f:
                doc = json.load(f)
            self.assertEqual([x["status"] for x in doc["runs"]], ["done", "done"])
            self.assertEqual([x["name"] for x in doc["runs"]], ["d128-g0.5-lr0.002-s0", "d128-g1-lr0.002-s0"])
            self.assertEqual(len(doc["h1_matched_lr"]), 1)
            with tarfile.open(os.path.join(out, "runs.tar.gz")) as tar:
                m = tar.extractfile("d128-g1-lr0.002-s0/metrics.jsonl").read().decode()
            evals = [json.loads(l)["step"] for l in m.splitlines() if "val_loss" in json.loads(l)]
            self.assertEqual(evals, [0, 1, 2, 3, 4])
        finally:
            shutil.rmtree(d)


if __name__ == "__main__":
    unittest.main()
