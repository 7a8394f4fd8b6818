"""scripts/gpu/h1-replica.sh, the prepared GPU run, smoke-tested on the CPU: two arms of a few steps on a small
token file; each run evaluates every 10% of its steps, and $OUT gets the summary and one tarball."""
import json
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import unittest

import torch

from smallinit_torch.data import TOK_MAGIC, write_tokens

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class TestH1ReplicaScript(unittest.TestCase):
    def test_cpu_smoke_run_reports_every_tenth(self):
        """Two arms of 4 steps on the CPU: both finish, validation losses at every 10% of the steps (here every
        step), each final model scored on the whole of each language's validation file and the mixture taken at
        the training mix (stats.json train_by_lang: en 1000 tokens, zh 3000, so weights 0.25 and 0.75; val.en.tok
        is val.tok, so its score is the trainer's last validation loss), the H1 pair is summarised on that
        mixture, and $OUT holds at most 8 files."""
        d = tempfile.mkdtemp()
        try:
            data, out = os.path.join(d, "data"), os.path.join(d, "out")
            os.makedirs(data)
            g = torch.Generator().manual_seed(0)
            write_tokens(os.path.join(data, "train.tok"), torch.randint(0, 4096, (20000,), generator=g).tolist())
            val = torch.randint(0, 4096, (3000,), generator=g).tolist()
            write_tokens(os.path.join(data, "val.tok"), val)
            write_tokens(os.path.join(data, "val.en.tok"), val)  # the trainer's whole validation file: a reference
            write_tokens(os.path.join(data, "val.zh.tok"), torch.randint(0, 100, (2000,), generator=g).tolist())
            with open(os.path.join(data, "stats.json"), "w") as f:
                json.dump({"vocab_size": 4096, "train_by_lang": {"en": {"tokens": 1000}, "zh": {"tokens": 3000}}}, f)
            env = dict(os.environ, OUT=out, PYTHON=sys.executable)
            r = subprocess.run(["bash", os.path.join(ROOT, "scripts", "gpu", "h1-replica.sh"), "--device", "cpu",
                                "--steps", "4", "--only", "2", "--no-256", "--probe-seconds", "1", "--data", data,
                                "--minutes", "6"], env=env, capture_output=True, text=True, timeout=420)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertLessEqual(len(os.listdir(out)), 8)
            with open(os.path.join(out, "summary.json")) as f:
                doc = json.load(f)
            self.assertEqual([x["status"] for x in doc["runs"]], ["done", "done"])
            self.assertEqual((doc["precision"], doc["counts"]["done"]), ("f32", 2))
            self.assertEqual([x["name"] for x in doc["runs"]], ["d128-g0.5-lr0.002-s0", "d128-g1-lr0.002-s0"])
            self.assertEqual(len(doc["h1_matched_lr"]), 1)
            self.assertEqual([(f["lang"], f["file"], f["weight"]) for f in doc["scoring"]["files"]],
                             [("en", "val.en.tok", 0.25), ("zh", "val.zh.tok", 0.75)])
            self.assertEqual(doc["scoring"]["failed"], "")
            for x in doc["runs"]:
                sc = x["score"]
                self.assertNotAlmostEqual(sc["en"], sc["zh"], places=3)  # two files scored, not one twice
                # val.en.tok is val.tok, whose 23 windows the trainer's last validation read (fewer than its 64)
                self.assertAlmostEqual(sc["en"], x["val_loss"], delta=1e-6 * x["val_loss"])
                self.assertAlmostEqual(sc["mix"], 0.25 * sc["en"] + 0.75 * sc["zh"], places=12)
                self.assertEqual(x["h1_loss"], sc["mix"])
            self.assertEqual(doc["h1_matched_lr"][0]["mean_gain"], doc["runs"][0]["score"]["mix"] - doc["runs"][1]["score"]["mix"])
            self.assertEqual(doc["h1_matched_lr"][0]["loss"], "the whole split at the training mix")
            with tarfile.open(os.path.join(out, "runs.tar.gz")) as tar:
                m = tar.extractfile("d128-g1-lr0.002-s0/metrics.jsonl").read().decode()
            evals = [json.loads(l)["step"] for l in m.splitlines() if "val_loss" in json.loads(l)]
            self.assertEqual(evals, [0, 1, 2, 3, 4])
        finally:
            shutil.rmtree(d)

    def replica(self, *args, env=None, timeout=240):
        return subprocess.run(["bash", os.path.join(ROOT, "scripts", "gpu", "h1-replica.sh"), "--device", "cpu", *args],
                              env={**os.environ, "PYTHON": sys.executable, **(env or {})}, capture_output=True, text=True,
                              timeout=timeout)

    def test_refusals_come_before_any_run(self):
        """Without --data (not a smoke run), with runs past one epoch, or with an interpreter that cannot import
        torch, the script stops with one line naming the fix, before any run is started."""
        d = tempfile.mkdtemp()
        try:
            data, out = os.path.join(d, "data"), os.path.join(d, "out")
            os.makedirs(data)
            write_tokens(os.path.join(data, "train.tok"), [1] * 20000)
            write_tokens(os.path.join(data, "val.tok"), [1] * 3000)
            r = self.replica("--out", out)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("--data DIR is required", r.stderr)
            r = self.replica("--data", data, "--out", out, "--plan")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.count("not started: "), 11, r.stdout)
            r = self.replica("--data", data, "--out", out, "--no-256")
            self.assertIn("every run would see more than one epoch", r.stderr)
            r = self.replica("--data", data, "--out", out, "--steps", "2", env={"PYTHON": "/bin/false"})
            self.assertIn("h1-replica: no interpreter imports torch and smallinit_torch (/bin/false", r.stderr)
            self.assertFalse(os.path.exists(out))
        finally:
            shutil.rmtree(d)

    def test_cut_run_keeps_its_checkpoint(self):
        """A run cut at the deadline is counted as cut (not done, not failed) and its newest checkpoint (the one its
        SIGTERM wrote) is kept in runs.tar.gz."""
        d = tempfile.mkdtemp()
        try:
            data, out = os.path.join(d, "data"), os.path.join(d, "out")
            os.makedirs(data)
            g = torch.Generator().manual_seed(0)
            ids = torch.randint(0, 4096, (20_000_000,), generator=g).to(torch.int16)  # 9,689 steps an epoch
            with open(os.path.join(data, "train.tok"), "wb") as f:
                f.write(TOK_MAGIC + struct.pack("<IIQ", 1, 2, len(ids)) + ids.numpy().tobytes())
            write_tokens(os.path.join(data, "val.tok"), torch.randint(0, 4096, (3000,), generator=g).tolist())
            r = self.replica("--data", data, "--out", out, "--steps", "9000", "--only", "1", "--probe-seconds", "1",
                             "--minutes", "1.75", timeout=300)
            with open(os.path.join(out, "summary.json")) as f:
                doc = json.load(f)
            self.assertTrue(doc["runs"][0]["status"].startswith("cut at the deadline"), doc["runs"][0]["status"])
            self.assertEqual(doc["counts"]["cut"], 1)
            self.assertNotEqual(r.returncode, 0)  # nothing finished
            with tarfile.open(os.path.join(out, "runs.tar.gz")) as tar:
                names = tar.getnames()
            self.assertTrue(any("/checkpoints/step-" in n and n.endswith("state.json") for n in names), names)
            with open(os.path.join(out, "summary.md")) as f:
                self.assertIn("1 cut", f.read())
        finally:
            shutil.rmtree(d)


if __name__ == "__main__":
    unittest.main()
