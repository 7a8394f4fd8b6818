"""The package surface as PyTorch users expect it: `from smallinit_torch import *`, dir(), the nn.init-style
gamma_normal_, seeds that follow torch.manual_seed, a classify= that declares a transposed layout, and a clear
error for meta-device models."""
import math
import unittest

import torch
import torch.nn as nn

import smallinit_torch
from smallinit_torch import gamma_init_
from tests.hf_standins import LlamaForCausalLM


class TestSurface(unittest.TestCase):
    def test_import_star_and_dir(self):
        ns = {}
        exec("from smallinit_torch import *", ns)
        for name in smallinit_torch.__all__:
            self.assertIn(name, ns)
        self.assertIn("gamma_init_", dir(smallinit_torch))
        self.assertIn("init", dir(smallinit_torch))
        self.assertIs(smallinit_torch.init.gamma_normal_, smallinit_torch.gamma_normal_)

    def test_gamma_normal_(self):
        g = torch.Generator().manual_seed(1)
        w = smallinit_torch.init.gamma_normal_(torch.empty(256, 400), gamma=0.5, generator=g)
        self.assertLess(abs(float(w.std()) / 400 ** -0.5 - 1), 0.02)
        w = smallinit_torch.init.gamma_normal_(torch.empty(400, 256), gamma=1.0, mode="fan_out",
                                               generator=torch.Generator().manual_seed(1))
        self.assertLess(abs(float(w.std()) * 400 - 1), 0.02)
        w = smallinit_torch.init.gamma_normal_(torch.empty(1000), gamma=1.0, fan_in=50)
        self.assertLess(abs(float(w.std()) * 50 - 1), 0.1)
        with self.assertRaises(ValueError):
            smallinit_torch.init.gamma_normal_(torch.empty(3), gamma=1.0)
        with self.assertRaisesRegex(ValueError, "to_empty"):
            smallinit_torch.init.gamma_normal_(torch.empty(3, 3, device="meta"))

    def test_seed_none_follows_manual_seed(self):
        a, b = LlamaForCausalLM(), LlamaForCausalLM()
        torch.manual_seed(7)
        gamma_init_(a, seed=None)
        torch.manual_seed(7)
        gamma_init_(b, seed=None)
        self.assertTrue(all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters())))
        torch.manual_seed(8)
        gamma_init_(b, seed=None)
        self.assertFalse(torch.equal(a.lm_head.weight, b.lm_head.weight))
        gamma_init_(b, seed=None, generator=torch.Generator().manual_seed(7))  # an explicit generator

    def test_classify_transposed(self):
        m = nn.Module()
        m.embed_tokens = nn.Embedding(10, 8)
        m.up = nn.Parameter(torch.zeros(8, 32))  # [d_in, d_out]
        recs = gamma_init_(m, classify=lambda n, p: ("ffn_up", "transposed") if n == "up" else None)
        self.assertEqual(recs[1]["d_in"], 8)
        self.assertAlmostEqual(recs[1]["intended_std"], 1 / 8)
        with self.assertRaises(ValueError):
            gamma_init_(m, classify=lambda n, p: ("ffn_up", "sideways"))

    def test_meta_device_refused(self):
        m = LlamaForCausalLM().to("meta")
        with self.assertRaisesRegex(ValueError, r"to_empty\(device=...\)"):
            gamma_init_(m)


if __name__ == "__main__":
    unittest.main()
