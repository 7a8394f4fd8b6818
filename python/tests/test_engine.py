"""The trainer as an engine on any device: the model runs on the meta device (and CUDA when present), device
errors are one line, the fast step reads nothing on the host between log steps and agrees with the reference
step, checkpoints cross between the two optimizer paths, SIGTERM checkpoints, token files are mapped, and the
run config's presets and [init] are Go's."""
import contextlib
import io
import json
import os
import signal
import shutil
import sys
import tempfile
import unittest

import torch

from smallinit_torch import device as devmod
from smallinit_torch import train as trainmod
from smallinit_torch.data import open_tokens, write_tokens, TOK_MAGIC
from smallinit_torch.model import Config, Llama
from smallinit_torch.runconfig import load_run_config, resolve_model
from smallinit_torch.train import main, parser, run
from tests.test_train import CFG, lines, make_run_dir

RUN = """seed = 5
[schedule]
lr = 1e-2
warmup_steps = 2
[data]
train = "{d}/train.tok"
val = "{d}/val.tok"
[train]
batch_size = 4
steps = {steps}
log_interval = {log}
eval_interval = 0
checkpoint_interval = {ck}
diagnostics_interval = 0
grad_clip = 0.05
threads = 1
{extra}
"""


class Runs(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp()
        self.model = make_run_dir(self.d)
        self.n = 0

    def tearDown(self):
        shutil.rmtree(self.d)

    def config(self, steps=6, log=2, ck=0, extra=""):
        self.n += 1
        p = os.path.join(self.d, f"e{self.n}.toml")
        with open(p, "w") as f:
            f.write(RUN.format(d=self.d, steps=steps, log=log, ck=ck, extra=extra))
        return p

    def train(self, cfg, *flags):
        out = os.path.join(self.d, f"run{self.n}-{len(os.listdir(self.d))}")
        logged = run(parser().parse_args(["--model", self.model, "--config", cfg, "--out", out, "--quiet", *flags]))
        return out, logged


_READS = ("item", "tolist", "cpu", "numpy", "nonzero", "__bool__", "__float__", "__int__", "__index__")


@contextlib.contextmanager
def host_reads():
    """Counts the calls the package's own code makes that read a tensor's value on the host (on a GPU each is a
    synchronisation): Tensor.item/tolist/cpu/numpy/nonzero, bool/float/int of a tensor, torch.cuda.synchronize.
    Calls from inside torch (the CPU step counters of AdamW) are not the package's and are not counted. On the
    CPU nothing synchronises, so this counts the places that would."""
    calls = []
    saved = {n: getattr(torch.Tensor, n) for n in _READS}
    saved_sync = torch.cuda.synchronize

    def wrap(name, f):
        def counted(*a, **k):
            if "smallinit_torch" in sys._getframe(1).f_code.co_filename:
                calls.append(name)
            return f(*a, **k)
        return counted
    try:
        for n, f in saved.items():
            setattr(torch.Tensor, n, wrap(n, f))
        torch.cuda.synchronize = wrap("synchronize", saved_sync)
        yield calls
    finally:
        for n, f in saved.items():
            setattr(torch.Tensor, n, f)
        torch.cuda.synchronize = saved_sync


class TestDevices(unittest.TestCase):
    def test_forward_backward_on_meta_device(self):
        """Every tensor the forward creates (the RoPE table among them) follows the model onto the meta device."""
        m = Llama(Config(dict(CFG, qk_norm=True))).to("meta")
        x = torch.randint(0, 64, (2, 16)).to("meta")
        _, loss = m(x, x)
        loss.backward()
        self.assertEqual(loss.device.type, "meta")
        self.assertEqual(m.model.embed_tokens.weight.grad.device.type, "meta")

    @unittest.skipUnless(torch.cuda.is_available(), "no CUDA device")
    def test_forward_backward_on_cuda(self):
        """The model trains a step on CUDA, and its loss equals the CPU's within float32 rounding."""
        torch.manual_seed(0)
        m = Llama(Config(CFG))
        x = torch.randint(0, 64, (2, 16))
        _, want = m(x, x)
        g = m.cuda()
        _, got = g(x.cuda(), x.cuda())
        got.backward()
        self.assertLess(abs(got.item() - want.item()), 1e-4)

    def test_device_flag(self):
        """--device takes auto, cpu, cuda and cuda:N; a bad value or a GPU this machine lacks is a ValueError
        that names the flag's value."""
        self.assertEqual(devmod.parse_device("cpu"), torch.device("cpu"))
        self.assertEqual(devmod.parse_device("auto").type, "cuda" if torch.cuda.is_available() else "cpu")
        for bad in ("gpu", "cpu:1", "cuda:x", ""):
            with self.assertRaisesRegex(ValueError, "--device"):
                devmod.parse_device(bad)
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        with self.assertRaisesRegex(ValueError, f"--device cuda:{n}"):
            devmod.parse_device(f"cuda:{n}")

    def test_device_errors_are_one_line(self):
        """A CUDA runtime error (out of memory) becomes `smallinit_torch: device D: <first line>`."""
        e = RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB\nmore detail")
        self.assertTrue(devmod.is_device_error(e))
        line = devmod.device_error_line(e, "cuda:0")
        self.assertTrue(line.startswith("smallinit_torch: device cuda:0: CUDA out of memory."), line)
        self.assertNotIn("\n", line)
        self.assertFalse(devmod.is_device_error(RuntimeError("shape mismatch")))

    def test_memory_check_reads_the_device(self):
        """check_memory compares with the device's memory: the CPU's MemTotal, a GPU's own memory."""
        limit, where = devmod.device_memory(torch.device("cpu"))
        self.assertGreater(limit, 0)
        self.assertIn("machine", where)
        if torch.cuda.is_available():
            limit, where = devmod.device_memory(torch.device("cuda", 0))
            self.assertLessEqual(limit, torch.cuda.get_device_properties(0).total_memory)
            self.assertIn("cuda:0", where)


class TestTrainerOnDevice(Runs):
    def test_cuda_without_cuda_is_one_line(self):
        """--device cuda on a machine without CUDA exits with one line naming the device, no traceback."""
        if torch.cuda.is_available():
            self.skipTest("this machine has CUDA")
        err = io.StringIO()
        with self.assertRaises(SystemExit) as cm, contextlib.redirect_stderr(err):
            main(["--model", self.model, "--config", self.config(), "--out", os.path.join(self.d, "x"), "--quiet",
                  "--device", "cuda"])
        self.assertRegex(str(cm.exception.code), r"^smallinit_torch: --device cuda: .*(CUDA|GPU)")
        self.assertNotIn("\n", str(cm.exception.code))

    def test_fast_step_reads_nothing_between_log_steps(self):
        """The host reads of a run whose only log step is its last do not grow with its steps under the fast
        step (0 a step); the reference step reads every step."""
        per_step = {}
        for step in ("fast", "reference"):
            counts = []
            for steps in (2, 6):
                with host_reads() as calls:
                    self.train(self.config(steps=steps, log=steps), "--step", step)
                counts.append(len(calls))
            per_step[step] = (counts[1] - counts[0]) / 4
        self.assertEqual(per_step["fast"], 0)
        self.assertGreater(per_step["reference"], 1)

    def test_moe_block_reads_its_counts_only(self):
        """An MoE block reads one thing from the device per forward (the kept assignments per expert, which size
        the experts' matmuls), and its record still gives the routed counts when asked."""
        c = Config({"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                    "num_attention_heads": 2, "max_position_embeddings": 16, "rms_norm_eps": 1e-5, "num_experts": 4,
                    "num_experts_per_tok": 2, "moe_intermediate_size": 32})
        m = Llama(c)
        x = torch.randint(0, 64, (2, 16))
        with host_reads() as calls:
            m(x, x)
        self.assertEqual(len(calls), c.num_hidden_layers, calls)
        moe = [mod for mod in m.modules() if type(mod).__name__ == "MoE"]
        self.assertEqual(len(moe), c.num_hidden_layers)
        self.assertEqual(sum(moe[0].stats["routed"]), 2 * 16 * 2)

    def test_moe_router_bias_trains(self):
        """router_bias_update_rate > 0 (Go's MoE presets) trains: each step moves every MoE block's selection bias by
        rate * sign(1/E - f_e) from the step's loads (model.BalanceRouters), the bias steers the choice of experts,
        and a run with it checkpoints and resumes exactly."""
        from smallinit_torch.model import balance_routers
        cj = {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
              "num_attention_heads": 2, "max_position_embeddings": 16, "rms_norm_eps": 1e-5, "num_experts": 4,
              "num_experts_per_tok": 2, "moe_intermediate_size": 32, "router_bias_update_rate": 3e-3}
        m = Llama(Config(cj))
        x = torch.randint(0, 64, (2, 16), generator=torch.Generator().manual_seed(1))
        _, loss = m(x, x)
        moe = [mod for mod in m.modules() if type(mod).__name__ == "MoE"]
        routed = [torch.tensor(b.stats["routed"]) for b in moe]
        balance_routers(m)
        for b, r in zip(moe, routed):
            f = r.double() / r.sum()
            want = torch.where(f < 0.25, 3e-3, torch.where(f > 0.25, -3e-3, 0.0)).float()
            self.assertTrue(torch.equal(b.gate.e_score_correction_bias, want), (b.gate.e_score_correction_bias, f))
            self.assertEqual(int(b.routed_sum.sum()), 0)
        with torch.no_grad():  # a large bias on expert 3 puts it in every token's top 2
            moe[0].gate.e_score_correction_bias.copy_(torch.tensor([0.0, 0.0, 0.0, 10.0]))
            m(x, x)
        self.assertTrue(bool((moe[0].stats["sel"] == 3).any(-1).all()))
        d = os.path.join(self.d, "moe-model")
        os.makedirs(d)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(dict(cj, architectures=["LlamaForCausalLM"], model_type="llama"), f)
        cfg = self.config(steps=6, log=1, ck=3)
        with open(cfg) as f:
            text = f.read()
        whole, part = os.path.join(self.d, "moe-whole"), os.path.join(self.d, "moe-part")
        run(parser().parse_args(["--model", d, "--config", cfg, "--out", whole, "--quiet"]))
        run(parser().parse_args(["--model", d, "--config", cfg, "--out", part, "--quiet", "--max-steps", "3"]))
        run(parser().parse_args(["--resume", part, "--quiet"]))
        self.assertEqual(lines(os.path.join(whole, "metrics.jsonl")), lines(os.path.join(part, "metrics.jsonl")))
        from smallinit_torch.safetensors import read_safetensors
        w = read_safetensors(os.path.join(whole, "final", "model.safetensors"))
        self.assertGreater(float(w["model.layers.0.mlp.gate.e_score_correction_bias"].abs().max()), 0, text)

    def test_memory_check_counts_token_files_on_the_device(self):
        """check_memory adds what the run puts on the device beside the model (the token files the fast step keeps
        on a GPU) and names it."""
        from smallinit_torch.model import check_memory
        c = Config({"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                    "num_attention_heads": 2, "max_position_embeddings": 16, "rms_norm_eps": 1e-5})
        check_memory(c, 4)
        limit, _ = devmod.device_memory(torch.device("cpu"))
        with self.assertRaisesRegex(ValueError, "and .* GB of token files on the device needs about"):
            check_memory(c, 4, extra=int(limit), extra_what="and 1e+03 GB of token files on the device")

    def test_fast_step_agrees_with_reference(self):
        """The fast step's losses and gradient norms equal the reference step's within float32 rounding (the
        same arithmetic: float64 norm and clip factor, AdamW; only the order of a few sums differs)."""
        cfg = self.config(steps=8, log=1)
        _, fast = self.train(cfg, "--step", "fast")
        _, ref = self.train(cfg, "--step", "reference")
        self.assertEqual(len(fast), len(ref))
        for a, b in zip(fast, ref):
            for k in ("loss", "grad_norm"):
                self.assertLess(abs(a[k] - b[k]), 1e-5 * max(1.0, abs(b[k])), (a["step"], k, a[k], b[k]))

    def test_checkpoints_cross_optimizer_paths(self):
        """A checkpoint written by one step path (and AdamW path) resumes under the other, and the resumed run
        ends where an uninterrupted run of the resuming path ends (within float32 rounding)."""
        cfg = self.config(steps=6, log=1, ck=3)
        for first, second in (("reference", "fast"), ("fast", "reference")):
            whole, want = self.train(cfg, "--step", second)
            out, _ = self.train(cfg, "--step", first, "--max-steps", "3")
            run(parser().parse_args(["--resume", out, "--quiet", "--step", second]))
            got = [json.loads(l) for l in _read(os.path.join(out, "metrics.jsonl")).splitlines()]
            self.assertEqual([m["step"] for m in got], [m["step"] for m in want])
            for a, b in zip(got, want):
                self.assertLess(abs(a["loss"] - b["loss"]), 1e-5, (first, second, a["step"]))

    def test_nonfinite_step_stops_or_skips_in_both_paths(self):
        """A non-finite loss stops the run naming its step under both step paths (the fast one finds it at the
        next log step, before writing a metrics line or a checkpoint), and train.skip_nonfinite skips it under
        both, counting the same skipped steps."""
        from smallinit_torch.safetensors import read_safetensors, write_safetensors
        path = os.path.join(self.model, "model.safetensors")
        w = read_safetensors(path)
        w["model.norm.weight"][0] = float("nan")
        write_safetensors(path, w)
        cfg = self.config(steps=4, log=4)
        for step in ("fast", "reference"):
            with self.assertRaisesRegex(FloatingPointError, "^step 0: non-finite"):
                self.train(cfg, "--step", step)
        cfg = self.config(steps=4, log=2, extra="skip_nonfinite = true")
        skipped = {step: [m["skipped"] for m in self.train(cfg, "--step", step)[1]] for step in ("fast", "reference")}
        self.assertEqual(skipped["fast"], [2, 4])
        self.assertEqual(skipped["fast"], skipped["reference"])

    def test_sigterm_checkpoints_and_resumes(self):
        """SIGTERM during a step: the run checkpoints at the end of that step and stops (exit 143 from main);
        --resume then finishes it exactly as an uninterrupted run."""
        cfg = self.config(steps=6, log=1)
        whole, _ = self.train(cfg)
        real = trainmod.lr_at

        def lr_at(s, step, total):
            if step == 2:
                os.kill(os.getpid(), signal.SIGTERM)
            return real(s, step, total)
        out = os.path.join(self.d, "term")
        trainmod.lr_at = lr_at
        try:
            with self.assertRaises(SystemExit) as cm, contextlib.redirect_stderr(io.StringIO()):
                main(["--model", self.model, "--config", cfg, "--out", out, "--quiet"])
        finally:
            trainmod.lr_at = real
        self.assertEqual(cm.exception.code, 143)
        self.assertEqual(os.listdir(os.path.join(out, "checkpoints")), ["step-000003"])
        self.assertIs(signal.getsignal(signal.SIGTERM), signal.SIG_DFL)
        run(parser().parse_args(["--resume", out, "--quiet"]))
        self.assertEqual(lines(os.path.join(out, "metrics.jsonl")), lines(os.path.join(whole, "metrics.jsonl")))

    def test_max_steps_below_log_interval_says_where_it_stopped(self):
        """--max-steps that stops before the first log step says so on stderr (the run is not silent)."""
        err = io.StringIO()
        out = os.path.join(self.d, "short")
        with contextlib.redirect_stderr(err):
            run(parser().parse_args(["--model", self.model, "--config", self.config(steps=6, log=4), "--out", out,
                                     "--max-steps", "1"]))
        self.assertIn(f"stopped at step 1 of 6 (--max-steps 1), checkpoint written: continue with --resume {out}",
                      err.getvalue())

    def test_trainer_takes_the_run_lock(self):
        """The trainer holds RUN/lock (Go's format) while it trains and removes it when done; a run directory
        whose lock another process holds is refused, naming the holder, before anything is written; --quiet
        prints nothing on a resume."""
        from smallinit_torch.runlock import RunLock
        cfg = self.config(steps=2, log=1)
        out = os.path.join(self.d, "locked")
        os.makedirs(out)
        held = RunLock.acquire(out)
        try:
            with self.assertRaisesRegex(ValueError, f"{out}: locked by pid {os.getpid()} on "):
                run(parser().parse_args(["--model", self.model, "--config", cfg, "--out", out, "--quiet"]))
            self.assertEqual(sorted(os.listdir(out)), ["lock"])
        finally:
            held.release()
        seen = []
        real = trainmod.Owner.take

        def take(own, o):
            real(own, o)
            seen.append(os.path.exists(os.path.join(o, "lock")))
        trainmod.Owner.take = take
        try:
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                run(parser().parse_args(["--model", self.model, "--config", cfg, "--out", out, "--quiet", "--max-steps", "1"]))
                run(parser().parse_args(["--resume", out, "--quiet"]))
        finally:
            trainmod.Owner.take = real
        self.assertEqual(seen, [True, True])
        self.assertFalse(os.path.exists(os.path.join(out, "lock")))
        self.assertEqual(err.getvalue(), "")

    def test_bf16_is_refused_where_it_sums_in_bf16(self):
        """train.precision = "bf16" trains under autocast with float32 weights where the one-matmul probe finds
        float32 accumulation; where it does not (Debian's torch 1.13 on the CPU sums bf16 matmuls in bf16), the
        run is refused before anything is written, with the probe's reason."""
        cfg = self.config(steps=2, log=1, extra='precision = "bf16"')
        why = devmod.bf16_problem(torch.device("cpu"))
        if why:
            out = os.path.join(self.d, "bf16")
            with self.assertRaisesRegex(ValueError, "train.precision = bf16: torch .* sums bf16 matmuls on cpu in "
                                                    "bfloat16, not float32"):
                run(parser().parse_args(["--model", self.model, "--config", cfg, "--out", out, "--quiet"]))
            self.assertFalse(os.path.exists(out))
            return
        out, logged = self.train(cfg)
        self.assertTrue(all(m["loss"] == m["loss"] for m in logged))
        pj = json.loads(_read(os.path.join(out, "pytorch.json")))
        self.assertEqual((pj["precision"], pj["engine"], pj["step"]), ("bf16", "torch", "fast"))

    def test_bf16_probe_reads_the_accumulation(self):
        """bf16_problem is a probe, not a version table: with autocast made a no-op (float32 matmuls) it passes,
        and with a matmul that rounds its sum to bfloat16 it fails, naming the sum it got."""
        real_autocast, real_matmul = torch.autocast, torch.Tensor.__matmul__
        try:
            torch.autocast = lambda *a, **k: contextlib.nullcontext()
            self.assertEqual(devmod.bf16_problem(torch.device("cpu")), "")
            torch.Tensor.__matmul__ = lambda a, b: torch.tensor([[4.0]])
            self.assertRegex(devmod.bf16_problem(torch.device("cpu")), "gives 4, want 41")
        finally:
            torch.autocast, torch.Tensor.__matmul__ = real_autocast, real_matmul

    def test_compile_is_refused_before_torch_2(self):
        """--compile on a torch without torch.compile is a one-line ValueError naming the version."""
        if devmod.has_compile():
            self.skipTest("this torch has torch.compile")
        with self.assertRaisesRegex(ValueError, "--compile: torch.compile needs torch 2.0"):
            self.train(self.config(steps=1), "--compile")

    def test_init_std_is_zero_for_the_gamma_rule(self):
        """A model directory that `smallinit init` wrote records std = 0.02 beside its γ rule; the run's
        config.toml [init] says std = 0, as Go's trainer writes it, so both engines' runs share a report arm."""
        cj = json.loads(_read(os.path.join(self.model, "config.json")))
        cj["smallinit_init"] = {"recipe": {"rule": "gamma", "gamma": 1, "std": 0.02}, "seed": 3}
        with open(os.path.join(self.model, "config.json"), "w") as f:
            json.dump(cj, f)
        out, _ = self.train(self.config(steps=1))
        c, _ = load_run_config(os.path.join(out, "config.toml"))
        self.assertEqual((c["init"]["rule"], c["init"]["std"]), ("gamma", 0.0))


class TestRunConfig(unittest.TestCase):
    def test_scale_presets_are_accepted(self):
        """model.preset = "0.1b" (and 0.3b, 0.7b, 1.5b, any case) resolves as in Go for a matching model."""
        shapes = {"0.1b": (768, 12, 12, 2048), "0.3b": (1024, 20, 16, 2752), "0.7b": (1536, 22, 12, 4096),
                  "1.5B": (2048, 28, 16, 5504)}
        for name, (d, L, H, f) in shapes.items():
            cj = {"vocab_size": 32000, "hidden_size": d, "intermediate_size": f, "num_hidden_layers": L,
                  "num_attention_heads": H, "max_position_embeddings": 2048, "rms_norm_eps": 1e-5}
            got = resolve_model({"model": {"preset": name}}, Config(cj), cj, "run.toml", "m")
            self.assertEqual(got["preset"], name.lower())


class TestTokenFiles(unittest.TestCase):
    def test_token_file_is_mapped_not_widened(self):
        """open_tokens maps the file: opening a 4M-token file and gathering windows adds far less anonymous
        memory than the file's size (reading it whole as int64 added 4x, 9x at the peak)."""
        d = tempfile.mkdtemp()
        try:
            n = 4 << 20
            p = os.path.join(d, "big.tok")
            ids = (torch.arange(n, dtype=torch.int64) * 7919 % 50000).to(torch.int32).to(torch.int16)
            with open(p, "wb") as f:
                import struct
                f.write(TOK_MAGIC + struct.pack("<IIQ", 1, 2, n))
                f.write(ids.numpy().tobytes())
            del ids
            before = _anon_kb()
            toks = open_tokens(p, 50000)
            grew = (_anon_kb() - before) * 1024
            self.assertLess(grew, 2 * n / 2, f"anonymous memory grew {grew} bytes for a {2 * n}-byte file")
            x, y = toks.windows([0, 1000, 5000], 64)
            self.assertEqual(len(toks), n)
            self.assertEqual(x[1, 0].item(), (1000 * 64) * 7919 % 50000)
            self.assertTrue(torch.equal(x[:, 1:], y[:, :-1]))
            with self.assertRaisesRegex(ValueError, "outside the vocabulary"):
                open_tokens(p, 1000)
        finally:
            shutil.rmtree(d)

    def test_windows_match_slices(self):
        """TokenFile.windows gathers exactly the windows that slicing gives, ids above 32767 included."""
        d = tempfile.mkdtemp()
        try:
            p = os.path.join(d, "t.tok")
            ids = [(i * 40503) % 65536 for i in range(1000)]
            write_tokens(p, ids)
            toks = open_tokens(p)
            x, y = toks.windows([3, 0, 7], 16)
            for row, k in enumerate((3, 0, 7)):
                self.assertEqual(x[row].tolist(), ids[k * 16:k * 16 + 16])
                self.assertEqual(y[row].tolist(), ids[k * 16 + 1:k * 16 + 17])
        finally:
            shutil.rmtree(d)


def _read(path):
    with open(path) as f:
        return f.read()


def _anon_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return 0


if __name__ == "__main__":
    unittest.main()
