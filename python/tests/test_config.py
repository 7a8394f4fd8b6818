"""Config reads rope_scaling as model/file.go does: null, absent or an empty object is plain RoPE; fields without
a rope_type (or type) are refused; llama3's three fields are kept for llama3 only."""
import unittest

from smallinit_torch.model import Config

BASE = {"vocab_size": 32, "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
        "num_attention_heads": 4, "max_position_embeddings": 8, "rms_norm_eps": 1e-5}
LLAMA3 = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 1000}


class TestRopeScaling(unittest.TestCase):
    def test_plain(self):
        for rs in (None, {}, {"rope_type": "default"}):
            with self.subTest(rope_scaling=rs):
                self.assertIsNone(Config(dict(BASE, rope_scaling=rs)).rope_scaling)

    def test_no_type_refused(self):
        for rs in ({"original_max_position_embeddings": 1000}, {"factor": 2.0}):
            with self.subTest(rope_scaling=rs), self.assertRaisesRegex(ValueError, "names no rope_type"):
                Config(dict(BASE, rope_scaling=rs))

    def test_fields_by_type(self):
        linear = Config(dict(BASE, rope_scaling=dict(LLAMA3, type="linear"))).rope_scaling
        self.assertEqual(linear, {"rope_type": "linear", "factor": 8.0})
        llama3 = Config(dict(BASE, rope_scaling=dict(LLAMA3, rope_type="llama3"))).rope_scaling
        self.assertEqual(llama3, dict(LLAMA3, rope_type="llama3"))


if __name__ == "__main__":
    unittest.main()
