"""The output gate and the RMSNorm-ε setter as drop-ins."""
import unittest

import torch
import torch.nn as nn

from smallinit_torch import OutputGate, set_rmsnorm_eps
from smallinit_torch.model import Config, Llama


class LlamaRMSNorm(nn.Module):  # Hugging Face's attribute name for ε
    def __init__(self, d):
        super().__init__()
        self.weight, self.variance_epsilon = nn.Parameter(torch.ones(d)), 1e-6


class TestGate(unittest.TestCase):
    def test_formula(self):
        torch.manual_seed(0)
        B, T, H, dh, d = 2, 5, 3, 4, 12
        n, y = torch.randn(B, T, d), torch.randn(B, T, H, dh)
        for mode, rows in (("elementwise", H * dh), ("headwise", H)):
            g = OutputGate(d, H, dh, mode)
            self.assertEqual(tuple(g.weight.shape), (rows, d))
            s = torch.sigmoid(n @ g.weight.t())
            want = y * (s.view(B, T, H, dh) if mode == "elementwise" else s.unsqueeze(-1))
            self.assertTrue(torch.allclose(g(n, y), want, atol=0, rtol=0))
        with self.assertRaises(ValueError):
            OutputGate(d, H, dh, "none")

    def test_checkpoint_names(self):
        for mode in ("elementwise", "headwise"):
            cfg = {"vocab_size": 16, "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
                   "num_attention_heads": 2, "max_position_embeddings": 4, "rms_norm_eps": 1e-5, "attn_gate": mode}
            names = dict(Llama(Config(cfg)).named_parameters())
            self.assertEqual(tuple(names["model.layers.0.self_attn.g_proj.weight"].shape), (8 if mode == "elementwise" else 2, 8))

    def test_set_eps(self):
        cfg = {"vocab_size": 16, "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 2,
               "num_attention_heads": 2, "max_position_embeddings": 4, "rms_norm_eps": 1e-5, "qk_norm": True}
        m = Llama(Config(cfg))
        changed = set_rmsnorm_eps(m, 1e-12)
        self.assertEqual(len(changed), 2 * 2 + 2 * 2 + 1)  # 2 norms + q/k norms per block, final norm
        self.assertTrue(all(mod.eps == 1e-12 for n, mod in m.named_modules() if type(mod).__name__ == "RMSNorm"))
        hf = nn.Sequential(LlamaRMSNorm(4), nn.LayerNorm(4))
        self.assertEqual(set_rmsnorm_eps(hf, 1e-12), ["0"])
        self.assertEqual(hf[0].variance_epsilon, 1e-12)
        self.assertEqual(hf[1].eps, 1e-5)
        set_rmsnorm_eps(hf, 1e-12, layernorm=True)
        self.assertEqual(hf[1].eps, 1e-12)
        with self.assertRaises(ValueError):
            set_rmsnorm_eps(nn.Linear(2, 2))



class TestAddOutputGate(unittest.TestCase):
    def test_hooked_gate_equals_built_in(self):
        """A model without a gate plus add_output_gate computes what the model with the built-in gate computes,
        and its state dict has the built-in gate's names."""
        from smallinit_torch import add_output_gate, gamma_init_
        for mode in ("elementwise", "headwise"):
            cfg = {"vocab_size": 32, "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
                   "num_attention_heads": 4, "max_position_embeddings": 8, "rms_norm_eps": 1e-5}
            ref = Llama(Config(dict(cfg, attn_gate=mode)))
            gamma_init_(ref, gamma=0.5, seed=1)
            plain = Llama(Config(cfg))
            for a in plain.model.layers:
                a.self_attn.num_heads, a.self_attn.head_dim = 4, 4
            self.assertEqual(len(add_output_gate(plain, mode)), 2)
            plain.load_state_dict(ref.state_dict(), strict=True)
            x = torch.randint(0, 32, (2, 9))
            _, l1 = ref(x[:, :-1], x[:, 1:])
            _, l2 = plain(x[:, :-1], x[:, 1:])
            self.assertAlmostEqual(l1.item(), l2.item(), delta=1e-6)


if __name__ == "__main__":
    unittest.main()
