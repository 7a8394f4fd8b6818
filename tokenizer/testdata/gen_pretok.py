#!/usr/bin/env python3
"""Generates pretok_cases.json: the splits of the three pre-tokenizer regexes on edge cases, corpus snippets and
random strings, computed with the Python `regex` module (the same leftmost-alternative semantics as the regex
engines of Hugging Face tokenizers). Run from this directory: python3 gen_pretok.py [corpus dir]."""
import gzip, json, os, random, sys
import regex

GPT2 = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
SMALLINIT = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?(?:(?![\p{Han}\p{Hiragana}\p{Katakana}])\p{L})+"""
             r"""| ?[\p{Han}\p{Hiragana}\p{Katakana}]{1,2}"""
             r"""|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")

edge = [
    "", " ", "  ", "a", " a", "  a", "\n", "\n\n", " \n", "\n ", " \n ", "a\n\nb", "a \n \n b", "a  \t b",
    "Hello, world! It's 12345 o'clock.", "I'LL DON'T 'sdf 'Re 'x", "“Call me Ishmael.”\n\nSome years",
    "end.\n\n\nNext", "x!!\r\n\r\ny", "tab\tsep\tvalues\n", "   leading and trailing   ", "1,234,567.89 2016",
    "子曰：“学而时习之，不亦说乎？”", "弟子规 圣人训 首孝弟", "abc中文def 中 文", "〇一二三 ⅠⅡ ²³ ①②",
    "ひらがなカタカナ漢字 한국어 текст ελληνικά", "e\u0301 cafe\u0301 na\u0303o", "(foo) [bar] {baz} -- —dash",
    "a\u3000b \u00a0c\u2028d\u0085e", "'''''", "''s", "can't won’t", "\t\tfoo\n\tbar", "  \n\n  x  \n",
    "x,\n\ny", "中\n\n文", "。”\n", " 。", " 1", "  1", "a1b22c333d4444", "12345678",
]

def corpus_snippets(d):
    out = []
    rnd = random.Random(7)
    for name in sorted(os.listdir(d)):
        if not name.endswith(".txt.gz"):
            continue
        text = gzip.open(os.path.join(d, name), "rt", encoding="utf-8").read()
        for _ in range(3):
            i = rnd.randrange(len(text) - 400)
            out.append(text[i:i + 400])
    return out

def random_strings():
    pool = list("aZ \n\r\t'sStTlLrReEvVdDmM0123456789.,!?-()\"“”’—") + list("中文学而一〇ひカ한é") + ["\u3000", "\u00a0", "\u0301", "²"]
    rnd = random.Random(1)
    return ["".join(rnd.choice(pool) for _ in range(rnd.randrange(1, 60))) for _ in range(300)]

def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "../../corpus/data"
    texts = edge + corpus_snippets(d) + random_strings()
    cases = []
    for name, pat in (("gpt2", GPT2), ("llama3", LLAMA3), ("smallinit", SMALLINIT)):
        r = regex.compile(pat)
        for t in texts:
            pieces = r.findall(t)
            assert "".join(pieces) == t, (name, t)
            cases.append({"splitter": name, "text": t, "pieces": pieces})
    json.dump({"regex": {"gpt2": GPT2, "llama3": LLAMA3, "smallinit": SMALLINIT}, "cases": cases},
              open("pretok_cases.json", "w"), ensure_ascii=False, indent=0)

main()
