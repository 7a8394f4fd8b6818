"""The drop-ins used on other people's models: gamma_init_'s seeds and namings, the hooked output gate under
copy and pickle, and the diagnostics' weight report under classify= and wrappers."""
import copy
import io
import os
import unittest

import torch
import torch.nn as nn

from smallinit_torch import add_output_gate, gamma_init_
from smallinit_torch.diagnostics import Diagnostics, weight_report
from smallinit_torch.model import Config, Llama

SMALL = {"vocab_size": 32, "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
         "num_attention_heads": 4, "max_position_embeddings": 8, "rms_norm_eps": 1e-5}


class TestGammaInitSeeds(unittest.TestCase):
    def test_no_seed_follows_torch_manual_seed(self):
        """Without seed=, torch.manual_seed decides the draws (as nn.init): two seeds differ, one seed repeats."""
        def draw(s):
            torch.manual_seed(s)
            m = Llama(Config(SMALL))
            gamma_init_(m, gamma=1.0)
            return m.model.layers[0].self_attn.q_proj.weight.detach().clone()
        a, b, a2 = draw(1), draw(2), draw(1)
        self.assertFalse(torch.equal(a, b))
        self.assertTrue(torch.equal(a, a2))

    def test_explicit_seed_ignores_torch_manual_seed(self):
        """seed=N draws from (N, tensor name) alone, whatever torch's generator holds."""
        out = []
        for s in (1, 2):
            torch.manual_seed(s)
            m = Llama(Config(SMALL))
            gamma_init_(m, gamma=1.0, seed=7)
            out.append(m.model.layers[0].self_attn.q_proj.weight.detach().clone())
        self.assertTrue(torch.equal(out[0], out[1]))


class Net(nn.Module):  # GPT-2-style names with LayerNorm (weight and bias) norms
    def __init__(self, d=8, V=16):
        super().__init__()
        self.transformer = nn.Module()
        self.transformer.wte = nn.Embedding(V, d)
        self.transformer.h = nn.ModuleList([nn.Module()])
        h = self.transformer.h[0]
        h.ln_1, h.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        h.attn = nn.Module()
        h.attn.c_attn, h.attn.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        h.mlp = nn.Module()
        h.mlp.c_fc, h.mlp.c_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.transformer.ln_f = nn.LayerNorm(d)


class TestGammaInitNorms(unittest.TestCase):
    def test_layernorm_with_nonzero_bias_gets_unit_gain(self):
        """A LayerNorm whose bias is not zero (any trained model) is an x·w norm: its gain starts at 1, not 0."""
        m = Net()
        with torch.no_grad():
            for mod in m.modules():
                if isinstance(mod, nn.LayerNorm):
                    mod.bias.fill_(0.3)
                    mod.weight.fill_(2.0)
        gamma_init_(m, gamma=1.0, seed=0)
        for name, mod in m.named_modules():
            if isinstance(mod, nn.LayerNorm):
                self.assertTrue(torch.equal(mod.weight, torch.ones_like(mod.weight)), name)
                self.assertTrue(torch.equal(mod.bias, torch.zeros_like(mod.bias)), name)

    def test_gemma_norm_still_gets_zero(self):
        """A norm of the x·(1 + w) form (Gemma's) still starts at w = 0, bias or not."""
        class GemmaRMSNorm(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.weight = nn.Parameter(torch.full((d,), 0.5))

            def forward(self, x):
                return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * (1 + self.weight)
        m = Llama(Config(SMALL))
        m.model.norm = GemmaRMSNorm(16)
        gamma_init_(m, seed=0)
        self.assertTrue(torch.equal(m.model.norm.weight, torch.zeros(16)))


class TestGammaInitLayouts(unittest.TestCase):
    def test_old_grouped_expert_layout_reads_d_in_from_embedding_width(self):
        """torchtitan's older grouped experts [E, dim, hidden] (w1, w3) and [E, hidden, dim] (w2) are drawn with
        d_in = dim and hidden, as the current [E, d_out, d_in] layout is."""
        d, f, E = 16, 40, 2

        class Titan(nn.Module):
            def __init__(self, old):
                super().__init__()
                self.tok_embeddings = nn.Embedding(32, d)
                self.layers = nn.ModuleDict({"0": nn.Module()})
                moe = nn.Module()
                moe.experts = nn.Module()
                gu, dn = ((E, d, f), (E, f, d)) if old else ((E, f, d), (E, d, f))
                moe.experts.w1, moe.experts.w3 = nn.Parameter(torch.empty(gu)), nn.Parameter(torch.empty(gu))
                moe.experts.w2 = nn.Parameter(torch.empty(dn))
                self.layers["0"].moe = moe
        got = {}
        for old in (False, True):
            recs = gamma_init_(Titan(old), gamma=1.0, seed=0, classify=lambda n, p: None)
            got[old] = {r["name"].rsplit(".", 1)[-1]: (r["d_in"], r["intended_std"]) for r in recs if "experts" in r["name"]}
        self.assertEqual(got[False], got[True])
        self.assertEqual(got[True]["w1"], (d, 1 / d))
        self.assertEqual(got[True]["w2"], (f, 1 / f))

    def test_classify_splits_a_fused_qkv_matrix(self):
        """classify= may return the row blocks of a fused matrix: each block is drawn with its own class and σ
        and recorded as name[class], and weight_report reports the blocks the same way."""
        d, kv = 16, 4

        class Fused(nn.Module):
            def __init__(self):
                super().__init__()
                self.qkv = nn.Linear(d, d + 2 * kv, bias=False)

        spec = {"qkv.weight": [("q", d), ("k", kv), ("v", kv)]}
        m = Fused()
        recs = gamma_init_(m, gamma=0.5, seed=0, classify=lambda n, p: spec.get(n),
                           classes={"k": {"gamma": 1.0}})
        self.assertEqual([(r["name"], r["class"]) for r in recs],
                         [("qkv.weight[q]", "q"), ("qkv.weight[k]", "k"), ("qkv.weight[v]", "v")])
        self.assertAlmostEqual(recs[0]["intended_std"], d ** -0.5)
        self.assertAlmostEqual(recs[1]["intended_std"], 1 / d)
        k_block = m.qkv.weight[d:d + kv]
        self.assertAlmostEqual(float(k_block.double().pow(2).mean().sqrt()), recs[1]["drawn_std"], places=12)
        rep = weight_report(m, classify=lambda n, p: spec.get(n))
        self.assertEqual([(r["name"], r["class"], r["rows"]) for r in rep],
                         [("qkv.weight[q]", "q", d), ("qkv.weight[k]", "k", kv), ("qkv.weight[v]", "v", kv)])
        with self.assertRaises(ValueError):
            gamma_init_(Fused(), seed=0, classify=lambda n, p: [("q", d), ("k", kv)])  # rows do not add up


class TestGateCopies(unittest.TestCase):
    def gated(self):
        m = Llama(Config(SMALL))
        for b in m.model.layers:
            b.self_attn.num_heads, b.self_attn.head_dim = 4, 4
        add_output_gate(m, "elementwise")
        gamma_init_(m, gamma=0.5, seed=1)
        return m

    def test_deepcopy_runs_its_own_weights(self):
        """A deep copy of a gated model computes with its own weights: zeroing the copy's matrices changes the
        copy's loss (to ln V), zeroing the original's leaves the copy's unchanged."""
        m = self.gated()
        x = torch.randint(0, 32, (2, 9), generator=torch.Generator().manual_seed(0))
        c = copy.deepcopy(m)
        _, before = c(x[:, :-1], x[:, 1:])
        with torch.no_grad():
            for p in m.parameters():
                p.zero_()
        _, after_orig = c(x[:, :-1], x[:, 1:])
        self.assertEqual(before.item(), after_orig.item())
        with torch.no_grad():
            for p in c.parameters():
                if p.dim() == 2:
                    p.zero_()
        _, zeroed = c(x[:, :-1], x[:, 1:])
        self.assertAlmostEqual(zeroed.item(), float(torch.tensor(32.0).log()), places=5)

    def test_pickle_round_trip_keeps_the_gate(self):
        """torch.save of a gated model pickles, and the loaded model computes the same loss."""
        m = self.gated()
        x = torch.randint(0, 32, (2, 9), generator=torch.Generator().manual_seed(0))
        buf = io.BytesIO()
        torch.save(m, buf)
        buf.seek(0)
        m2 = torch.load(buf, weights_only=False)  # a whole module (torch >= 2.6 loads weights only by default)
        self.assertEqual(m(x[:, :-1], x[:, 1:])[1].item(), m2(x[:, :-1], x[:, 1:])[1].item())


class TestDiagnosticsWrappers(unittest.TestCase):
    def test_weight_report_includes_classified_tensors(self):
        """A matrix of no known naming that classify= names is in the weight report with that class."""
        m = nn.Module()
        m.mystery = nn.Linear(8, 8, bias=False)
        rep = weight_report(m, classify=lambda n, p: "ffn_up" if n == "mystery.weight" else None)
        self.assertEqual([(r["name"], r["class"]) for r in rep], [("mystery.weight", "ffn_up")])
        self.assertEqual(weight_report(m), [])

    def test_diagnostics_unwrap_dataparallel(self):
        """Diagnostics and weight_report of a DataParallel-wrapped model equal those of the model itself."""
        m = Llama(Config(SMALL))
        gamma_init_(m, seed=0)
        toks = torch.randint(0, 32, (200,), generator=torch.Generator().manual_seed(0))
        wrapped = nn.DataParallel(m)
        self.assertEqual(weight_report(wrapped), weight_report(m))
        a = Diagnostics(wrapped)
        try:
            got = a.activations(toks, 2, 8)
        finally:
            a.close()
        b = Diagnostics(m)
        try:
            want = b.activations(toks, 2, 8)
        finally:
            b.close()
        self.assertEqual(got, want)


class TestSuiteFiles(unittest.TestCase):
    def test_main_guard_is_last_so_a_file_run_alone_runs_every_test(self):
        """In every tests/test_*.py the `if __name__ == "__main__"` block is the last statement: one placed
        before a test class makes `python tests/test_x.py` stop before defining it (test_gate.py ran 3 of 4)."""
        import ast
        here = os.path.dirname(os.path.abspath(__file__))
        for name in sorted(os.listdir(here)):
            if not (name.startswith("test_") and name.endswith(".py")):
                continue
            with open(os.path.join(here, name)) as f:
                body = ast.parse(f.read()).body
            guards = [i for i, n in enumerate(body) if isinstance(n, ast.If) and "__main__" in ast.dump(n.test)]
            self.assertTrue(all(i == len(body) - 1 for i in guards), f"{name}: a __main__ guard before the end")


if __name__ == "__main__":
    unittest.main()
