"""The batched trainer (train-batch): three runs of one shape that differ in seed, γ, learning rate, weight
decay and clip, trained as one batched model, give each run the losses of its solo run (1e-6 relative) and
the solo run's directory; a batch stopped at a checkpoint resumes batched and alone to the same end."""
import json
import os
import shutil
import tempfile
import unittest

from smallinit_torch.batch import main as batch_main
from smallinit_torch.batch import parser as batch_parser
from smallinit_torch.batch import run_batch
from smallinit_torch.data import write_tokens
from smallinit_torch.train import metrics_line, parser, run

CFG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 64, "hidden_size": 32,
       "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
       "head_dim": 8, "max_position_embeddings": 16, "rms_norm_eps": 1e-5, "attn_gate": "elementwise"}

# The runs' own keys: seed, γ, lr, weight decay, clip (run 2's clip of 0.05 clips every step).
RUNS = [(5, 1.0, 1e-2, 0.1, 1.0), (6, 0.5, 3e-3, 0.0, 0.0), (7, 0.75, 2e-2, 0.3, 0.05)]


def write_inputs(d, cfg=CFG, runs=RUNS, steps=8):
    """Token files, a weightless model directory ([init] draws the weights) and a run config per run."""
    toks = [(i * 7 + (i * i) % 5) % 64 for i in range(4000)]
    write_tokens(os.path.join(d, "train.tok"), toks)
    write_tokens(os.path.join(d, "val.tok"), toks[:600])
    m = os.path.join(d, "model")
    os.makedirs(m)
    with open(os.path.join(m, "config.json"), "w") as f:
        json.dump(cfg, f)
    out = []
    for k, (seed, gamma, lr, wd, clip) in enumerate(runs):
        path = os.path.join(d, f"run{k}.toml")
        with open(path, "w") as f:
            f.write(f"""seed = {seed}
[init]
gamma = {gamma}
[optimizer]
weight_decay = {wd}
[schedule]
lr = {lr}
warmup_steps = 2
[data]
train = "{d}/train.tok"
val = "{d}/val.tok"
[train]
batch_size = 4
steps = {steps}
grad_clip = {clip}
log_interval = 1
eval_interval = 4
eval_windows = 8
checkpoint_interval = 3
keep_checkpoints = 2
diagnostics_interval = 4
threads = 1
""")
        out.append((m, path))
    return out


def metrics(path):
    with open(path) as f:
        return [json.loads(l) for l in f]


def tree(d):
    """The run directory's files (relative paths), torch-input-free."""
    out = set()
    for root, _, files in os.walk(d):
        for f in files:
            out.add(os.path.relpath(os.path.join(root, f), d))
    return out


class TestBatch(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp()
        self.inputs = write_inputs(self.d)

    def tearDown(self):
        shutil.rmtree(self.d, ignore_errors=True)

    def solo(self, k, out, *extra):
        m, cfg = self.inputs[k]
        return run(parser().parse_args(["--model", m, "--config", cfg, "--out", out, "--quiet", "--device", "cpu", *extra]))

    def batch(self, outs, *extra):
        argv = ["--quiet", "--device", "cpu", *extra]
        for (m, cfg), out in zip(self.inputs, outs):
            argv += ["--run", m, cfg, out]
        return run_batch(batch_parser().parse_args(argv))

    def assert_close(self, solo, batched, what):
        self.assertEqual(len(solo), len(batched), what)
        worst = 0.0
        for a, b in zip(solo, batched):
            self.assertEqual(a["step"], b["step"], what)
            self.assertEqual(set(a) - {"tokens_per_s"}, set(b) - {"tokens_per_s"}, f"{what} step {a['step']}: keys")
            for k in ("loss", "val_loss", "grad_norm", "lr"):
                if k in a:
                    rel = abs(a[k] - b[k]) / abs(a[k])
                    worst = max(worst, rel)
                    self.assertLessEqual(rel, 1e-6, f"{what} step {a['step']} {k}: solo {a[k]!r}, batched {b[k]!r}")
        return worst

    def test_batched_runs_equal_solo_runs(self):
        solo = [os.path.join(self.d, f"solo{k}") for k in range(len(RUNS))]
        outs = [os.path.join(self.d, f"batch{k}") for k in range(len(RUNS))]
        for k, out in enumerate(solo):
            self.solo(k, out)
        logged = self.batch(outs)
        worst = 0.0
        for k in range(len(RUNS)):
            a, b = metrics(f"{solo[k]}/metrics.jsonl"), metrics(f"{outs[k]}/metrics.jsonl")
            self.assertEqual(len(a), 8 + 1, "one line a step and the step-0 evaluation")
            self.assertEqual(b, [json.loads(metrics_line(r)) for r in logged[k]])
            worst = max(worst, self.assert_close(a, b, f"run {k}"))
            self.assertEqual(tree(solo[k]), tree(outs[k]), f"run {k}: the files of its directory")
            with open(f"{solo[k]}/config.toml") as f1, open(f"{outs[k]}/config.toml") as f2:
                self.assertEqual(f1.read(), f2.read(), f"run {k}: config.toml")
        # the runs differ: a batch that mixed them up would not match each solo run
        self.assertNotEqual(metrics(f"{outs[0]}/metrics.jsonl")[-1]["loss"], metrics(f"{outs[1]}/metrics.jsonl")[-1]["loss"])
        clipped = metrics(f"{outs[2]}/metrics.jsonl")[-1]["grad_norm"]
        self.assertGreater(clipped, 0.05, "run 2's clip must bind for the test to test it")

    def test_batch_resumes_batched_and_alone(self):
        whole = [os.path.join(self.d, f"whole{k}") for k in range(len(RUNS))]
        cut = [os.path.join(self.d, f"cut{k}") for k in range(len(RUNS))]
        self.batch(whole)
        self.batch(cut, "--max-steps", "5")  # checkpoints at 3 and 5
        self.assertFalse(os.path.exists(os.path.join(cut[0], "final")))
        run_batch(batch_parser().parse_args(["--quiet", "--device", "cpu", "--resume", cut[0], "--resume", cut[1]]))
        run(parser().parse_args(["--resume", cut[2], "--quiet", "--device", "cpu"]))  # a batched run resumes alone
        for k in range(len(RUNS)):
            a, b = metrics(f"{whole[k]}/metrics.jsonl"), metrics(f"{cut[k]}/metrics.jsonl")
            for r in a + b:
                r.pop("tokens_per_s", None)
            if k < 2:
                self.assertEqual(a, b, f"run {k}: resumed batched")
            else:
                self.assert_close(a, b, f"run {k}: resumed alone")
            self.assertTrue(os.path.isfile(os.path.join(cut[k], "final", "model.safetensors")))

    def test_refusals(self):
        outs = [os.path.join(self.d, f"r{k}") for k in range(2)]
        other = os.path.join(self.d, "other.toml")
        with open(self.inputs[1][1]) as f:
            text = f.read().replace("batch_size = 4", "batch_size = 2")
        with open(other, "w") as f:
            f.write(text)
        argv = ["--quiet", "--device", "cpu", "--run", self.inputs[0][0], self.inputs[0][1], outs[0],
                "--run", self.inputs[0][0], other, outs[1]]
        with self.assertRaises(SystemExit) as e:
            batch_main(argv)
        self.assertIn("train.batch_size = 2", str(e.exception.code))
        self.assertFalse(os.path.exists(outs[0]), "nothing is written for a refused batch")
        with self.assertRaises(SystemExit) as e:
            batch_main(["--quiet", "--device", "cpu", "--run", self.inputs[0][0], self.inputs[0][1], outs[0],
                        "--run", self.inputs[0][0], self.inputs[1][1], outs[0]])
        self.assertIn("named twice", str(e.exception.code))
        self.batch(outs[:1] + [os.path.join(self.d, "r-other")], "--max-steps", "3")
        with self.assertRaises(SystemExit) as e:  # a resumed run and a new one: refused before a file is written
            batch_main(["--quiet", "--device", "cpu", "--resume", outs[0], "--run", self.inputs[1][0], self.inputs[1][1], outs[1]])
        self.assertIn("different steps", str(e.exception.code))
        self.assertFalse(os.path.exists(outs[1]))


if __name__ == "__main__":
    unittest.main()
