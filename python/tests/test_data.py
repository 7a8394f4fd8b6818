"""Token files and the Go sampler's window order (values printed by train.NewSampler in Go)."""
import json
import os
import tempfile
import unittest

import torch

from smallinit_torch import data
from smallinit_torch.data import Sampler, read_tokens, write_tokens
from smallinit_torch.gorand import PCG


class TestData(unittest.TestCase):
    def test_go_permutation(self):
        toks = torch.zeros(1000 * 7 + 1, dtype=torch.long)
        self.assertEqual(list(Sampler(toks, 7, 42).perm[:10]), [215, 842, 278, 434, 456, 335, 445, 72, 338, 23])
        self.assertEqual(list(Sampler(toks, 7, 42, epoch=3).perm[:10]), [650, 832, 806, 344, 107, 763, 413, 525, 656, 794])

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



class TestStartupAtScale(unittest.TestCase):
    """Opening a token file reads no ids when its prepared directory's stats.json describes it, and the reads of
    a whole file widen one chunk at a time."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.d = self._tmp.name
        write_tokens(os.path.join(self.d, "train.tok"), [1, 2, 3] * 100 + [70])
        self.saved_chunk = data.CHUNK

    def tearDown(self):
        data.CHUNK = self.saved_chunk
        self._tmp.cleanup()

    def stats(self, tokens, vocab=64):
        with open(os.path.join(self.d, "stats.json"), "w") as f:
            json.dump({"vocab_size": vocab, "train": {"tokens": tokens}, "val": {"tokens": 0}}, f)

    def test_stats_json_is_trusted_for_the_vocabulary(self):
        """With stats.json's count and a vocabulary within the model's, no id is read; without it (or with another
        count), the ids are scanned and an id past the vocabulary is found."""
        path = os.path.join(self.d, "train.tok")
        real = data.TokenFile.max_id
        data.TokenFile.max_id = lambda *a, **k: self.fail("scanned a file its stats.json describes")
        try:
            self.stats(301, vocab=64)
            self.assertEqual(len(data.open_tokens(path, 128)), 301)
        finally:
            data.TokenFile.max_id = real
        self.stats(300, vocab=64)  # not this file: scanned
        with self.assertRaisesRegex(ValueError, "token 300 has id 70, outside the vocabulary"):
            data.open_tokens(path, 64)

    def test_whole_file_reads_widen_a_chunk_at_a_time(self):
        """read_tokens gives int32 (4 bytes an id, not 8), and analyze's token counts and the vocabulary scan widen
        at most one chunk of ids at a time, never the whole file."""
        path = os.path.join(self.d, "train.tok")
        data.CHUNK = 64
        widened = []
        real = data.TokenFile._widen
        data.TokenFile._widen = lambda self_, t: (widened.append(t.numel()), real(self_, t))[1]
        try:
            t = read_tokens(path, 100)
            f = data.open_tokens(path)
            self.assertEqual(f.max_id(), (70, 300))
            from smallinit_torch.diagnostics import frequent_tokens
            self.assertEqual(frequent_tokens(f, 128)[:3], [1, 2, 3])
        finally:
            data.TokenFile._widen = real
        self.assertEqual((t.dtype, t[-1].item(), len(t)), (torch.int32, 70, 301))
        self.assertLessEqual(max(widened), 64)

    def test_max_id_reads_unsigned_ids_in_their_width(self):
        """Ids past the signed range of the file's width (uint16 65535, uint32 70000) are found as themselves."""
        for ids, want in (([0, 65535, 5], (65535, 1)), ([70000, 1, 2**31 + 5], (2**31 + 5, 2))):
            p = os.path.join(self.d, "w.tok")
            write_tokens(p, ids)
            self.assertEqual(data.open_tokens(p).max_id(), want)


class TestPermutation(unittest.TestCase):
    def test_vectorised_fisher_yates_is_go_s(self):
        """The sampler's permutation, built lanes draws at a time without a list, is the sequential PCG's (Go's
        order) for sizes around the lane count, powers of two and odd sizes, and is a compact array."""
        import array
        from smallinit_torch.gorand import _fisher_yates_sequential, fisher_yates
        for n, seed in ((1, 1), (2, 3), (1000, 42), (4095, 7), (4096, 7), (4097, 7), (12345, 0x5eed0003), (65536, 5)):
            got = fisher_yates(n, seed, 0x5eed0000, lanes=256 if n > 5000 else 4096)
            self.assertEqual(got, _fisher_yates_sequential(n, seed, 0x5eed0000), (n, seed))
            self.assertIsInstance(got, array.array)
            self.assertEqual(got.itemsize, 4)


if __name__ == "__main__":
    unittest.main()
