#!/usr/bin/env python3
"""Writes gpt2_mini.json: a minimal GPT-2-style tokenizer.json. The 256 byte tokens are in GPT-2's id order,
computed with bytes_to_unicode() copied from OpenAI's GPT-2 encoder.py; then GPT-2's first ten merges, with
the ids GPT-2 gives their results, and <|endoftext|> last (in the vocab and in added_tokens, as in GPT-2's
file). Merges are written as "a b" strings, the pre-tokenizer is ByteLevel with its default regex."""
import json

def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(2**8):
        if b not in bs:
            bs.append(b)
            cs.append(2**8 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))

b2u = bytes_to_unicode()
vocab = {b2u[b]: i for i, b in enumerate(sorted(b2u, key=lambda b: list(b2u.values()).index(b2u[b])))}
assert vocab["Ġ"] == 220 and vocab["!"] == 0 and vocab["t"] == 83
merges = ["Ġ t", "Ġ a", "h e", "i n", "r e", "o n", "Ġt he", "e r", "Ġ s", "a t"]
for m in merges:
    vocab["".join(m.split(" "))] = len(vocab)
vocab["<|endoftext|>"] = len(vocab)
doc = {
    "version": "1.0",
    "truncation": None,
    "padding": None,
    "added_tokens": [{"id": vocab["<|endoftext|>"], "content": "<|endoftext|>", "single_word": False,
                      "lstrip": False, "rstrip": False, "normalized": True, "special": True}],
    "normalizer": None,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True},
    "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False},
    "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True},
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
              "end_of_word_suffix": "", "fuse_unk": False, "vocab": vocab, "merges": merges},
}
json.dump(doc, open("gpt2_mini.json", "w"), ensure_ascii=False, indent=2)
