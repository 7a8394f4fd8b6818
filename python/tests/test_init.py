"""gamma_init_ against the table Go's gammainit writes: Go's intended std per tensor, drawn stds within sampling
error, and the other projects' namings (torchtitan, GPT-2 Conv1D, nanoGPT)."""
import math
import unittest

import torch

from smallinit_torch import gamma_init_
from smallinit_torch.init import table
from smallinit_torch.model import Config, Llama
from tests.standins import GPT2, Titan

Z = 5  # standard errors of the sampled std: 1/sqrt(2n) relative


def kwargs(recipe):
    return dict(rule=recipe["rule"], gamma=recipe.get("gamma", 1.0), std=recipe.get("std") or 0.02,
                depth_scale=recipe.get("depth_scale", False), classes=recipe.get("classes") or {})


def within_sampling_error(tc, rec, n):
    tc.assertLess(abs(rec["drawn_std"] / rec["intended_std"] - 1), Z / math.sqrt(2 * n) + 1e-7, rec)


class TestTable(unittest.TestCase):
    def test_go_examples(self):
        """Every example of the table (two configs x at least six recipes: every rule, depth scaling, overrides):
        the same tensors in the same order, Go's intended std to 1e-12, drawn std within sampling error."""
        ex = table()["examples"]
        self.assertGreaterEqual(len(ex), 12)
        used = {e["recipe"]["rule"] for e in ex} | {o.get("rule") for e in ex for o in (e["recipe"].get("classes") or {}).values()}
        self.assertLessEqual({r["name"] for r in table()["rules"]}, used)
        for e in ex:
            import json
            m = Llama(Config(json.loads(json.dumps(e["config"]))))
            recs = gamma_init_(m, seed=3, **kwargs(e["recipe"]))
            self.assertEqual([r["name"] for r in recs], [t["name"] for t in e["tensors"]], e["recipe"])
            sizes = {n: p.numel() for n, p in m.named_parameters()}
            for r, t in zip(recs, e["tensors"]):
                self.assertEqual((r["class"], r["d_in"]), (t["class"], t["d_in"]), t["name"])
                self.assertAlmostEqual(r["intended_std"] / t["intended_std"], 1, delta=1e-12, msg=(t, e["recipe"]))
                self.assertAlmostEqual(r["gamma_eff"], t["gamma_eff"], delta=1e-9)
                within_sampling_error(self, r, sizes[t["name"]])
            for n, p in m.named_parameters():
                if n.endswith("norm.weight"):
                    self.assertTrue(bool((p == 1).all()), n)
                elif n.endswith(".bias"):
                    self.assertTrue(bool((p == 0).all()), n)

    def test_streams_per_tensor(self):
        """A tensor's draw depends on the seed and its name only."""
        e = table()["examples"][0]
        a, b = Llama(Config(e["config"])), Llama(Config(e["config"]))
        gamma_init_(a, seed=1)
        gamma_init_(b, seed=1)
        self.assertTrue(all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters())))
        gamma_init_(b, seed=2)
        self.assertFalse(torch.equal(a.model.embed_tokens.weight, b.model.embed_tokens.weight))


class TestNamings(unittest.TestCase):
    def ref_records(self, V, d, L, H, dh, f, qk_norm, **recipe):
        cfg = {"vocab_size": V, "hidden_size": d, "intermediate_size": f, "num_hidden_layers": L,
               "num_attention_heads": H, "head_dim": dh, "max_position_embeddings": 16, "rms_norm_eps": 1e-5,
               "qk_norm": qk_norm}
        return gamma_init_(Llama(Config(cfg)), **recipe)

    def test_torchtitan_llama3_qwen3(self):
        for qk_norm in (False, True):
            for recipe in ({"gamma": 1.0}, {"gamma": 0.5, "depth_scale": True}, {"rule": "xavier"}):
                t = Titan(96, 32, 3, 4, 8, 80, qk_norm)
                got = gamma_init_(t, seed=5, **recipe)
                want = self.ref_records(96, 32, 3, 4, 8, 80, qk_norm, **recipe)
                hf = t.to_hf()
                self.assertEqual(len(got), len(want))
                by = {r["name"]: r for r in want}
                m = {"tok_embeddings.weight": "model.embed_tokens.weight", "output.weight": "lm_head.weight"}
                names = list(hf)
                for r in got:
                    n = m.get(r["name"]) or next(x for x in names if x.endswith(r["name"].split(".", 2)[2].replace(
                        "attention.wq", "self_attn.q_proj").replace("attention.wk", "self_attn.k_proj").replace(
                        "attention.wv", "self_attn.v_proj").replace("attention.wo", "self_attn.o_proj").replace(
                        "feed_forward.w1", "mlp.gate_proj").replace("feed_forward.w2", "mlp.down_proj").replace(
                        "feed_forward.w3", "mlp.up_proj")) and x.startswith("model.layers." + r["name"].split(".")[1] + "."))
                    self.assertEqual((r["class"], r["d_in"]), (by[n]["class"], by[n]["d_in"]), r["name"])
                    self.assertAlmostEqual(r["intended_std"], by[n]["intended_std"], delta=1e-15)
                    within_sampling_error(self, r, hf[n].numel())
                for n, p in t.named_parameters():
                    if "norm" in n:
                        self.assertTrue(bool((p == 1).all()), n)

    def test_gpt2_conv1d_and_nanogpt(self):
        V, T, d, L = 80, 16, 24, 2
        for conv in (True, False):
            g = GPT2(V, T, d, L, conv)
            recs = gamma_init_(g, gamma=1.0, depth_scale=True, seed=1)
            by = {r["name"]: r for r in recs}
            self.assertEqual(len(recs), 2 + L * 6)  # wte, wpe; per layer c_attn[q|k|v], c_proj, c_fc, mlp.c_proj
            for l in range(L):
                p = f"transformer.h.{l}."
                for qkv in "qkv":
                    r = by[p + f"attn.c_attn.weight[{qkv}]"]
                    self.assertEqual((r["class"], r["d_in"]), (qkv, d))
                    self.assertAlmostEqual(r["intended_std"], d ** -1.0)
                    within_sampling_error(self, r, d * d)
                self.assertEqual(by[p + "attn.c_proj.weight"]["class"], "o")
                self.assertAlmostEqual(by[p + "attn.c_proj.weight"]["intended_std"], d ** -1.0 / math.sqrt(2 * L))
                self.assertEqual((by[p + "mlp.c_fc.weight"]["class"], by[p + "mlp.c_fc.weight"]["d_in"]), ("ffn_up", d))
                down = by[p + "mlp.c_proj.weight"]
                self.assertEqual((down["class"], down["d_in"]), ("ffn_down", 4 * d))
                self.assertAlmostEqual(down["intended_std"], (4 * d) ** -1.0 / math.sqrt(2 * L))
                within_sampling_error(self, down, 4 * d * d)
            self.assertEqual(by["transformer.wte.weight"]["d_in"], d)
            self.assertEqual(by["transformer.wpe.weight"]["class"], "embed")
            for n, p in g.named_parameters():
                if n.endswith(".bias"):
                    self.assertTrue(bool((p == 0).all()), n)
                elif "ln_" in n:
                    self.assertTrue(bool((p == 1).all()), n)

    def test_torchtitan_moe_grouped_experts(self):
        """torchtitan's MoE: router [E, d] and grouped experts [E, d_out, d_in] (d_in is the last axis)."""
        E, d, f = 4, 16, 24
        m = torch.nn.Module()
        blk = torch.nn.Module()
        blk.moe = torch.nn.Module()
        blk.moe.router = torch.nn.Module()
        blk.moe.router.gate = torch.nn.Linear(d, E, bias=False)
        blk.moe.experts = torch.nn.Module()
        for n, shape in (("w1", (E, f, d)), ("w2", (E, d, f)), ("w3", (E, f, d))):
            setattr(blk.moe.experts, n, torch.nn.Parameter(torch.zeros(shape)))
        m.layers = torch.nn.ModuleDict({"0": blk})
        by = {r["name"]: r for r in gamma_init_(m, gamma=1.0)}
        self.assertEqual((by["layers.0.moe.router.gate.weight"]["class"], by["layers.0.moe.router.gate.weight"]["d_in"]), ("router", d))
        for n, cls, d_in in (("w1", "ffn_gate", d), ("w2", "ffn_down", f), ("w3", "ffn_up", d)):
            r = by[f"layers.0.moe.experts.{n}"]
            self.assertEqual((r["class"], r["d_in"]), (cls, d_in))
            within_sampling_error(self, r, E * d * f)

    def test_unknown_refused_or_classified(self):
        m = torch.nn.Module()
        m.embed_tokens = torch.nn.Embedding(10, 4)
        m.mystery = torch.nn.Linear(4, 6)
        m.other = torch.nn.Parameter(torch.zeros(3, 3))
        with self.assertRaises(ValueError) as cm:
            gamma_init_(m)
        self.assertIn("mystery.weight [6, 4]", str(cm.exception))
        self.assertIn("other [3, 3]", str(cm.exception))
        self.assertIn("mystery.bias [6]", str(cm.exception))  # the bias of an unclassified matrix is refused too
        recs = gamma_init_(m, classify=lambda n, p: {"mystery.weight": "ffn_up", "mystery.bias": "bias"}.get(n))
        self.assertEqual([r["name"] for r in recs], ["embed_tokens.weight", "mystery.weight"])
        self.assertAlmostEqual(recs[1]["intended_std"], 0.25)
        self.assertTrue(bool((m.other == 0).all()))  # classify returned None: untouched
        with self.assertRaises(ValueError):
            gamma_init_(m, classes={"nonsense": {"gamma": 1}})
        with self.assertRaises(ValueError):
            gamma_init_(m, rule="orthogonal")


if __name__ == "__main__":
    unittest.main()
