"""Hugging Face-style models: keyword-called gates on torch 1.13, idempotent removable gates, diagnostics on
Hugging Face naming and outputs, norm variants, tied heads, the ε in the config, GPT-2 layouts by shape."""
import unittest

import torch
import torch.nn as nn

from smallinit_torch import Diagnostics, add_output_gate, gamma_init_, set_rmsnorm_eps
from smallinit_torch.diagnostics import training_record
from tests.hf_standins import GemmaRMSNorm, HFConfig, LlamaForCausalLM
from tests.standins import GPT2


def tokens(n=400, V=48):
    return (torch.arange(n) * 7 + 3) % V


class TestGateKeywordCalls(unittest.TestCase):
    def test_keyword_called_attention_is_gated(self):
        """A zero gate weight halves o_proj's input (sigmoid(0) = 1/2), so the gated attention output is half the
        ungated one, with self_attn called by keyword (hidden_states=) on this torch."""
        torch.manual_seed(0)
        m = LlamaForCausalLM()
        attn = m.model.layers[0].self_attn
        x = torch.randn(2, 5, 16)
        want, _ = attn(hidden_states=x)
        h = add_output_gate(m, "elementwise")
        self.assertEqual(len(h), 2)
        with torch.no_grad():
            attn.g_proj.weight.zero_()
        got, _ = attn(hidden_states=x)
        self.assertTrue(torch.allclose(got, want / 2, atol=1e-6))
        m(torch.randint(0, 48, (2, 8)))  # the whole model runs

    def test_second_gate_refused_and_handle_removes(self):
        torch.manual_seed(0)
        m = LlamaForCausalLM()
        ids = torch.randint(0, 48, (2, 8))
        before = m(ids).logits
        h = add_output_gate(m, "headwise")
        with self.assertRaisesRegex(ValueError, "already has a g_proj"):
            add_output_gate(m, "headwise")
        self.assertFalse(torch.equal(m(ids).logits, before))
        h.remove()
        self.assertTrue(torch.equal(m(ids).logits, before))
        self.assertFalse(any("g_proj" in n for n, _ in m.named_parameters()))
        add_output_gate(m, "headwise").remove()  # can be added again after removal


class TestDiagnosticsHF(unittest.TestCase):
    def test_activations_and_training_record(self):
        torch.manual_seed(0)
        m = LlamaForCausalLM()
        add_output_gate(m, "elementwise")
        gamma_init_(m, gamma=0.5, seed=1)
        d = Diagnostics(m)
        try:
            act = d.activations(tokens(), probes=4, probe_len=8)
        finally:
            d.close()
        self.assertEqual(len(act["layers"]), 2)
        self.assertEqual(len(act["layers"][0]["gate_mean"]), 4)
        self.assertIsNone(act["first_token_mass"])  # no CausalAttention core to observe: null, not a crash
        self.assertGreater(act["probe_loss"], 0)
        rec = training_record(m, tokens())
        self.assertEqual(set(rec), {"weights", "classes", "activations"})

    def test_gpt2_layout_refused_with_reason(self):
        with self.assertRaisesRegex(ValueError, "GPT-2-style"):
            Diagnostics(GPT2(40, 8, 8, 1))


class TestSilentMisinitialisation(unittest.TestCase):
    def test_conv1d_layout_by_shape_not_class_name(self):
        """The Conv1D layout under another class name gets the same d_in as under Conv1D."""
        g = GPT2(80, 16, 24, 1, conv=True)
        for mod in g.modules():
            if type(mod).__name__ == "Conv1D":
                mod.__class__ = type("TransposedLinear", (nn.Module,), {})
        by = {r["name"]: r for r in gamma_init_(g, gamma=1.0, seed=1)}
        self.assertEqual(by["transformer.h.0.attn.c_attn.weight[q]"]["d_in"], 24)
        self.assertEqual(by["transformer.h.0.mlp.c_fc.weight"]["d_in"], 24)
        self.assertEqual(by["transformer.h.0.mlp.c_proj.weight"]["d_in"], 96)
        self.assertAlmostEqual(by["transformer.h.0.attn.c_attn.weight[k]"]["intended_std"], 1 / 24)

    def test_gemma_norm_gets_unit_gain(self):
        m = LlamaForCausalLM(norm=GemmaRMSNorm)
        gamma_init_(m, seed=0)
        self.assertTrue(all(bool((mod.weight == 0).all()) for mod in m.modules() if isinstance(mod, GemmaRMSNorm)))
        x = torch.randn(3, 16)
        n = m.model.norm
        self.assertTrue(torch.allclose(n(x), x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + n.eps)))

    def test_tied_head_override_refused(self):
        m = LlamaForCausalLM(tie=True)
        with self.assertRaisesRegex(ValueError, "tied"):
            gamma_init_(m, classes={"head": {"gamma": 0.5}})
        gamma_init_(m)  # without the override it is the embedding, drawn once

    def test_set_eps_updates_config(self):
        m = LlamaForCausalLM(HFConfig(rms_norm_eps=1e-5))
        set_rmsnorm_eps(m, 1e-12)
        self.assertEqual(m.config.rms_norm_eps, 1e-12)
        self.assertEqual(m.model.norm.variance_epsilon, 1e-12)


if __name__ == "__main__":
    unittest.main()
