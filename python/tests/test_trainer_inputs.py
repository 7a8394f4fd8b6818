"""The trainer's run config and inputs: the resolved config.toml and init/ (what Go's report reads), the
steps/tokens budget, every [model] key checked, the recorded γ is the drawn one, and hostile inputs refused as
`smallinit_torch: <file>: <what>` with a non-zero exit (never a traceback, a hang or an OOM)."""
import contextlib
import io
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

try:
    import tomllib
except ImportError:
    import tomli as tomllib

from smallinit_torch.runconfig import defaults, lr_at
from smallinit_torch.safetensors import read_safetensors, write_safetensors
from smallinit_torch.train import main
from tests.test_train import CFG, make_run_dir

RUN = """seed = 5
[data]
train = "{d}/train.tok"
val = "{d}/val.tok"
[train]
batch_size = 4
steps = 2
log_interval = 1
eval_interval = 0
checkpoint_interval = 1
threads = 1
"""


class Base(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp()
        self.model = make_run_dir(self.d)
        self.n = 0

    def tearDown(self):
        shutil.rmtree(self.d)

    def config(self, text):
        self.n += 1
        p = os.path.join(self.d, f"r{self.n}.toml")
        with open(p, "w") as f:
            f.write(text.replace("{d}", self.d))
        return p

    def train(self, cfg, model=None, out=None):
        out = out or os.path.join(self.d, f"out{self.n}")
        main(["--model", model or self.model, "--config", cfg, "--out", out, "--quiet"])
        return out

    def refused(self, args, want):
        """main(args) exits with `smallinit_torch: ... want ...`."""
        err = io.StringIO()
        with self.assertRaises(SystemExit) as cm, contextlib.redirect_stderr(err):
            main(args)
        msg = str(cm.exception.code)
        self.assertTrue(msg.startswith("smallinit_torch: "), msg)
        self.assertIn(want, msg)
        return msg

    def refused_config(self, text, want, model=None):
        return self.refused(["--model", model or self.model, "--config", self.config(text),
                             "--out", os.path.join(self.d, f"bad{self.n}"), "--quiet"], want)


class TestResolvedRun(Base):
    def test_sparse_config_written_resolved_with_init_dir(self):
        """A run config without [model] gives a config.toml with every model key of the model directory (d = 32,
        headwise gate), and init/ holds the step-0 weights."""
        out = self.train(self.config(RUN))
        with open(os.path.join(out, "config.toml"), "rb") as f:
            c = tomllib.load(f)
        self.assertEqual(set(c["model"]) - {"preset"}, set(defaults()["types"]["model"]) - {"preset"})
        self.assertEqual((c["model"]["hidden_size"], c["model"]["attn_gate"], c["model"]["norm_eps"]), (32, "headwise", 1e-5))
        self.assertEqual(c["train"]["steps"], 2)
        for f in ("config.json", "model.safetensors"):
            self.assertTrue(os.path.isfile(os.path.join(out, "init", f)), f)
        main(["--resume", out, "--quiet"])  # the resolved config resumes against the same model directory

    def test_steps_and_tokens_cannot_both_win(self):
        self.refused_config(RUN.replace("steps = 2", "tokens = 640"), "both set a budget")
        out = self.train(self.config(RUN.replace("steps = 2", "steps = 0\ntokens = 128")))
        with open(os.path.join(out, "metrics.jsonl")) as f:
            self.assertEqual(json.loads(f.read().splitlines()[-1])["step"], 2)  # 128 // (4 x 16)

    def test_every_model_key_checked(self):
        for extra, want in (("norm_eps = 1e-12", "model.norm_eps"), ('attn_gate = "none"', "model.attn_gate"),
                            ('preset = "small"', "model.preset"), ("hiden_size = 32", "unknown key model.hiden_size"),
                            ("hidden_size = 32\nnum_hidden_layers = 3", "model.num_hidden_layers")):
            self.refused_config(RUN + "[model]\n" + extra + "\n", want)

    def test_recorded_gamma_is_the_drawn_one(self):
        """A config.json-only model directory recording γ = 1, drawn at [init] gamma = 0.5: init.json and
        final/config.json say 0.5, and the drawn std is d^-0.5."""
        m = os.path.join(self.d, "bare")
        os.makedirs(m)
        with open(os.path.join(m, "config.json"), "w") as f:
            json.dump(dict(CFG, smallinit_init={"recipe": {"rule": "gamma", "gamma": 1.0}, "seed": 3}), f)
        out = self.train(self.config(RUN + "[init]\ngamma = 0.5\n"), model=m)
        with open(os.path.join(out, "init.json")) as f:
            init = json.load(f)
        self.assertEqual(init["recipe"]["gamma"], 0.5)
        q = next(r for r in init["tensors"] if r["name"].endswith("layers.0.self_attn.q_proj.weight"))
        self.assertAlmostEqual(q["intended_std"], 32 ** -0.5)
        self.assertLess(abs(q["drawn_std"] / q["intended_std"] - 1), 0.1)
        with open(os.path.join(out, "final", "config.json")) as f:
            self.assertEqual(json.load(f)["smallinit_init"]["recipe"]["gamma"], 0.5)
        with open(os.path.join(out, "config.toml"), "rb") as f:
            self.assertEqual(tomllib.load(f)["init"]["gamma"], 0.5)

    def test_explicit_init_contradicting_the_weights_refused(self):
        """A model directory with weights and a recorded recipe (γ = 1), and a run config whose [init] says
        γ = 0.5: refused (the weights are loaded, not drawn), rather than labelled 0.5."""
        with open(os.path.join(self.model, "config.json")) as f:
            cfg = json.load(f)
        with open(os.path.join(self.model, "config.json"), "w") as f:
            json.dump(dict(cfg, smallinit_init={"recipe": {"rule": "gamma", "gamma": 1.0}, "seed": 3}), f)
        self.refused_config(RUN + "[init]\ngamma = 0.5\n", "[init] draws weights only for a model directory without them")

    def test_schedule_matches_go(self):
        """lr_at reproduces recipe.Schedule.LR's values that Go exported (train_defaults.json)."""
        for ex in defaults()["lr_examples"]:
            s = ex["schedule"]
            for step, want in enumerate(ex["lr"]):
                self.assertAlmostEqual(lr_at(s, step, s["total_steps"]), want, delta=1e-15 * max(1, want))


class TestHostileInputs(Base):
    def model_with(self, cfg=None, tensors=None, raw=None):
        m = os.path.join(self.d, f"m{self.n}")
        self.n += 1
        shutil.copytree(self.model, m)
        if cfg is not None:
            with open(os.path.join(m, "config.json"), "w") as f:
                json.dump(cfg, f)
        if tensors is not None:
            write_safetensors(os.path.join(m, "model.safetensors"), tensors)
        if raw is not None:
            with open(os.path.join(m, "model.safetensors"), "wb") as f:
                f.write(raw)
        return m

    def header(self, h):
        b = json.dumps(h).encode()
        return struct.pack("<Q", len(b)) + b + b"\0" * 64

    def test_bad_config_json(self):
        for k, v, want in (("hidden_size", -1, "hidden_size = -1"), ("hidden_size", "64", "hidden_size = '64'"),
                           ("num_attention_heads", 0, "num_attention_heads = 0"),
                           ("hidden_size", 10 ** 9, "memory"), ("vocab_size", 10 ** 9, "memory"),
                           ("num_hidden_layers", 10 ** 5, "num_hidden_layers = 100000")):
            self.refused_config(RUN, want, model=self.model_with(cfg=dict(CFG, **{k: v})))

    def test_bad_safetensors(self):
        sd = read_safetensors(os.path.join(self.model, "model.safetensors"))
        e = "model.embed_tokens.weight"
        for raw, want in ((self.header([1, 2]), "header is a JSON list"),
                          (self.header({"__metadata__": 5}), "__metadata__"),
                          (self.header({e: {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}), "shape"),
                          (self.header({e: {"dtype": "F32", "shape": ["a"], "data_offsets": [0, 4]}}), "shape"),
                          (self.header({e: {"dtype": "F32", "shape": [100], "data_offsets": [0, 4]}}), "data_offsets"),
                          (self.header({"../x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}), "not a tensor name")):
            self.refused_config(RUN, want, model=self.model_with(raw=raw))
        missing = dict(sd)
        del missing[e]
        self.refused_config(RUN, "lacks 1 tensor", model=self.model_with(tensors=missing))
        ints = dict(sd, **{e: sd[e].to(__import__("torch").int32)})
        self.refused_config(RUN, "want floating-point weights", model=self.model_with(tensors=ints))

    def test_bad_run_config(self):
        self.refused_config(RUN.replace("batch_size = 4", 'batch_size = "4"'), "train.batch_size = '4'")
        self.refused_config(RUN.replace("steps = 2", "steps = 0"), "set a budget")
        self.refused_config(RUN.replace("steps = 2", "steps = -3"), "must be >= 0")
        self.refused_config("a = " + "{b = " * 2000 + "1" + "}" * 2000, ".toml: ")  # deep nesting: an error, not a crash

    @unittest.skipUnless(hasattr(os, "mkfifo"), "no FIFOs")
    def test_fifos_and_devices_refused_not_waited_for(self):
        fifo = os.path.join(self.d, "fifo")
        os.mkfifo(fifo)
        self.refused_config(RUN.replace("{d}/train.tok", fifo), "a FIFO")
        m = self.model_with()
        os.remove(os.path.join(m, "config.json"))
        os.mkfifo(os.path.join(m, "config.json"))
        self.refused_config(RUN, "a FIFO", model=m)
        self.refused(["--model", self.model, "--config", fifo, "--out", os.path.join(self.d, "x")], "a FIFO")
        m = self.model_with()  # a shard index that is a FIFO, then /dev/zero
        os.remove(os.path.join(m, "model.safetensors"))
        os.mkfifo(os.path.join(m, "model.safetensors.index.json"))
        self.refused_config(RUN, "model.safetensors.index.json: a FIFO", model=m)
        os.remove(os.path.join(m, "model.safetensors.index.json"))
        os.symlink("/dev/zero", os.path.join(m, "model.safetensors.index.json"))
        self.refused_config(RUN, "model.safetensors.index.json: a device", model=m)
        m = self.model_with()  # config.json that is /dev/zero
        os.remove(os.path.join(m, "config.json"))
        os.symlink("/dev/zero", os.path.join(m, "config.json"))
        self.refused_config(RUN, "config.json: a device", model=m)

    def test_resume_refuses_logs_that_disagree_with_state(self):
        out = self.train(self.config(RUN.replace("steps = 2", "steps = 4")), out=os.path.join(self.d, "r"))
        shutil.rmtree(os.path.join(out, "final"))
        ck = os.path.join(out, "checkpoints", "step-000004", "state.json")
        with open(ck) as f:
            st = json.load(f)
        for n, want in ((st["metrics_bytes"] + 100, "fewer than"), (st["metrics_bytes"] - 3, "not the end of a line")):
            with open(ck, "w") as f:
                json.dump(dict(st, metrics_bytes=n), f)
            size = os.path.getsize(os.path.join(out, "metrics.jsonl"))
            self.refused(["--resume", out, "--quiet"], want)
            self.assertEqual(os.path.getsize(os.path.join(out, "metrics.jsonl")), size)  # nothing cut or padded

    def test_analyze_refuses_probe_counts_past_the_bound(self):
        """--probes is held to MAX_PROBE_WINDOWS (Go's diag.MaxProbeWindows) before the model is loaded: a
        billion probes no longer stacks the whole token file."""
        from smallinit_torch.diagnostics import MAX_PROBE_WINDOWS, main as analyze_main
        for n in (0, MAX_PROBE_WINDOWS + 1, 1000000000):
            with self.assertRaises(SystemExit) as cm:
                analyze_main(["--model", self.model, "--tokens", os.path.join(self.d, "train.tok"), "--probes", str(n)])
            self.assertEqual(str(cm.exception.code), f"smallinit_torch: --probes = {n}: must be in [1, {MAX_PROBE_WINDOWS}]")

    @unittest.skipUnless(hasattr(os, "mkfifo"), "no FIFOs")
    def test_analyze_refuses_fifo_tokens(self):
        from smallinit_torch.diagnostics import main as analyze_main
        fifo = os.path.join(self.d, "tok-fifo")
        os.mkfifo(fifo)
        with self.assertRaises(SystemExit) as cm:
            analyze_main(["--model", self.model, "--tokens", fifo])
        self.assertEqual(str(cm.exception.code), f"smallinit_torch: {fifo}: a FIFO, want a regular file")

    def test_cli_exit_code_and_one_line(self):
        """The command itself: exit 1 and one `smallinit_torch:` line on stderr, no traceback."""
        cfg = self.config(RUN.replace("steps = 2", "steps = 0"))
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        p = subprocess.run([sys.executable, "-m", "smallinit_torch", "train", "--model", self.model, "--config", cfg,
                            "--out", os.path.join(self.d, "cli")], cwd=here, capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 1)
        self.assertTrue(p.stderr.startswith("smallinit_torch: " + cfg + ": "), p.stderr)
        self.assertNotIn("Traceback", p.stderr)


if __name__ == "__main__":
    unittest.main()
