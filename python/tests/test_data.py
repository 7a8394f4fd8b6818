"""Token files and the Go sampler's window order (values printed by train.NewSampler in Go)."""
import os
import tempfile
import unittest

import torch

from smallinit_torch.data import Sampler, read_tokens, write_tokens
from smallinit_torch.gorand import PCG


class TestData(unittest.TestCase):
    def test_go_permutation(self):
        toks = torch.zeros(1000 * 7 + 1, dtype=torch.long)
        self.assertEqual(Sampler(toks, 7, 42).perm[:10], [215, 842, 278, 434, 456, 335, 445, 72, 338, 23])
        self.assertEqual(Sampler(toks, 7, 42, epoch=3).perm[:10], [650, 832, 806, 344, 107, 763, 413, 525, 656, 794])

    def test_epochs_and_positions(self):
        toks = torch.arange(5 * 4 + 1)
        s = Sampler(toks, 4, 1)
        ids = s.next_ids(12)
        self.assertEqual(sorted(ids[:5]), list(range(5)))
        self.assertEqual((s.epoch, s.pos), (2, 2))
        r = Sampler(toks, 4, 1, epoch=2, pos=2)
        self.assertEqual(r.next_ids(3), s.next_ids(3))
        x, y = s.batch([1, 3])
        self.assertEqual(x.tolist(), [[4, 5, 6, 7], [12, 13, 14, 15]])
        self.assertEqual(y.tolist(), [[5, 6, 7, 8], [13, 14, 15, 16]])

    def test_pcg_intn_powers_of_two(self):
        a, b = PCG(1, 2), PCG(1, 2)
        self.assertEqual(a.intn(8), b.uint64() & 7)

    def test_tok_roundtrip_and_errors(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "a.tok")
            write_tokens(p, [0, 5, 65535])
            self.assertEqual(read_tokens(p).tolist(), [0, 5, 65535])
            write_tokens(p, [70000, 1])
            self.assertEqual(read_tokens(p).tolist(), [70000, 1])
            with self.assertRaisesRegex(ValueError, "outside the vocabulary"):
                read_tokens(p, vocab=100)
            with open(p, "r+b") as f:
                f.truncate(30)
            with self.assertRaisesRegex(ValueError, "a.tok: header says 2 tokens"):
                read_tokens(p)
            with open(p, "wb") as f:
                f.write(b"NOTATOKENFILE" * 3)
            with self.assertRaisesRegex(ValueError, "not a token file"):
                read_tokens(p)


if __name__ == "__main__":
    unittest.main()
