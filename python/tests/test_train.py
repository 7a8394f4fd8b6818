"""The trainer on its own: an interrupted and resumed run equals the uninterrupted one bit for bit, the run
directory has Go's layout, and the diagnostics records have Go's keys."""
import json
import os
import shutil
import tempfile
import unittest

import torch

from smallinit_torch import gamma_init_
from smallinit_torch.data import write_tokens
from smallinit_torch.model import Config, Llama
from smallinit_torch.safetensors import read_safetensors, write_safetensors
from smallinit_torch.train import parser, run

CFG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 64, "hidden_size": 32,
       "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "head_dim": 8,
       "max_position_embeddings": 16, "rms_norm_eps": 1e-5, "attn_gate": "headwise"}


def make_run_dir(d):
    g = torch.Generator().manual_seed(0)
    toks = (torch.arange(4000) * 7 + torch.randint(0, 3, (4000,), generator=g)) % 64
    write_tokens(os.path.join(d, "train.tok"), toks.tolist())
    write_tokens(os.path.join(d, "val.tok"), toks[:600].tolist())
    m = os.path.join(d, "model")
    os.makedirs(m)
    model = Llama(Config(CFG))
    gamma_init_(model, gamma=1.0, seed=3)
    write_safetensors(os.path.join(m, "model.safetensors"), {n: p.detach() for n, p in model.named_parameters()})
    with open(os.path.join(m, "config.json"), "w") as f:
        json.dump(CFG, f)
    with open(os.path.join(d, "run.toml"), "w") as f:
        f.write(f"""seed = 5
[schedule]
lr = 1e-2
warmup_steps = 2
[data]
train = "{d}/train.tok"
val = "{d}/val.tok"
[train]
batch_size = 4
steps = 8
log_interval = 2
eval_interval = 4
eval_windows = 8
checkpoint_interval = 3
keep_checkpoints = 2
diagnostics_interval = 4
threads = 1
""")
    return m


def read(path):
    with open(path) as f:
        return f.read()


def lines(path):
    out = []
    for l in read(path).splitlines():
        r = json.loads(l)
        r.pop("tokens_per_s", None)
        out.append(r)
    return out


class TestTrain(unittest.TestCase):
    def test_resume_layout_diagnostics(self):
        d = tempfile.mkdtemp()
        try:
            m = make_run_dir(d)
            a, b = os.path.join(d, "a"), os.path.join(d, "b")
            run(parser().parse_args(["--model", m, "--config", f"{d}/run.toml", "--out", a, "--quiet"]))
            run(parser().parse_args(["--model", m, "--config", f"{d}/run.toml", "--out", b, "--quiet", "--max-steps", "5"]))
            self.assertFalse(os.path.exists(os.path.join(b, "final")))
            run(parser().parse_args(["--resume", b, "--quiet"]))
            self.assertEqual(lines(f"{a}/metrics.jsonl"), lines(f"{b}/metrics.jsonl"))
            self.assertEqual(read(f"{a}/diagnostics.jsonl"), read(f"{b}/diagnostics.jsonl"))
            wa, wb = read_safetensors(f"{a}/final/model.safetensors"), read_safetensors(f"{b}/final/model.safetensors")
            self.assertTrue(all(torch.equal(wa[k], wb[k]) for k in wa))
            self.assertEqual(sorted(os.listdir(f"{a}/checkpoints")), ["step-000006", "step-000008"])
            for f in ("config.json", "model.safetensors", "optimizer.safetensors", "state.json"):
                self.assertTrue(os.path.isfile(f"{a}/checkpoints/step-000008/{f}"), f)
            opt = read_safetensors(f"{a}/checkpoints/step-000008/optimizer.safetensors")
            self.assertIn("exp_avg_sq.model.layers.1.self_attn.g_proj.weight", opt)
            st = json.loads(read(f"{a}/checkpoints/step-000008/state.json"))
            self.assertEqual((st["step"], st["adam_step"], st["tokens"]), (8, 8, 8 * 4 * 16))
            ms = lines(f"{a}/metrics.jsonl")
            self.assertEqual([r["step"] for r in ms], [0, 2, 4, 6, 8])
            self.assertIn("val_loss", ms[0])
            self.assertLess(ms[-1]["loss"], ms[1]["loss"])
            diag = [json.loads(l) for l in read(f"{a}/diagnostics.jsonl").splitlines()]
            self.assertEqual([r["step"] for r in diag], [0, 4, 8])
            dg = diag[0]["diagnostics"]
            self.assertEqual(set(dg), {"weights", "classes", "activations"})
            self.assertEqual(set(dg["weights"][0]), {"name", "class", "layer", "rows", "cols", "frobenius_sq", "sigma_max",
                                                    "stable_rank", "stable_rank_exact", "effective_rank", "mean_abs_cos",
                                                    "random_baseline", "cos_ratio", "frac_abs_cos_above_0_9",
                                                    "cos_rows_used", "zero_rows"})
            la = dg["activations"]["layers"][0]
            self.assertEqual(len(la["gate_mean"]), 4)
            self.assertEqual(len(la["sink_alpha"]), 4)
            self.assertEqual(dg["activations"]["probe_len"], 16)
            init = json.loads(read(f"{a}/init.json"))
            self.assertEqual(len(init["tensors"]), 1 + 2 * 8 + 1)  # embed, 8 matrices per block (q, k, v, g, o, gate, up, down), head
            with self.assertRaises(ValueError):  # the directory holds a run already
                run(parser().parse_args(["--model", m, "--config", f"{d}/run.toml", "--out", a, "--quiet"]))
        finally:
            shutil.rmtree(d)


if __name__ == "__main__":
    unittest.main()
