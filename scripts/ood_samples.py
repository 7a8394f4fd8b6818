#!/usr/bin/env python3
"""Rebuild corpus/ood/data/*.txt.gz from their sources (see corpus/ood/data/SOURCES.md).

usage: ood_samples.py TINYSHAKESPEARE_INPUT_TXT XIYOUJI_TXT SANGUO_TXT OUT_DIR
The inputs are karpathy/char-rnn data/tinyshakespeare/input.txt and hexhero/book-txt's 西游记.txt and
三国演义.txt (UTF-8). The outputs are byte-identical to the shipped files (gzip -9 -n).
"""
import gzip
import re
import sys

CHAPTER = re.compile(r'^第[一二三四五六七八九十百零]+回')


def shakespeare(text, limit=300_000):
    """The first whole speeches (blank-line separated) of at most limit bytes."""
    i = text.rfind('\n\n', 0, limit)
    return text[:i].rstrip('\n') + '\n'


def chapters(lines, limit_bytes=None, max_chapters=None):
    """Whole chapters from the first, while under limit_bytes and max_chapters; chapters joined by a blank line."""
    out, chap, size = [], [], 0
    for line in lines + ['第零回 end']:
        if CHAPTER.match(line):
            if chap:
                block = '\n'.join(chap) + '\n'
                if limit_bytes and size + len(block.encode()) > limit_bytes:
                    break
                out.append(block)
                size += len(block.encode())
                if max_chapters and len(out) == max_chapters:
                    break
            chap = [line]
        elif chap:
            chap.append(line)
    return '\n'.join(out)


def xiyouji(raw):
    """Drop the download site's header and line indentation; keep chapters 1-14 (under 300 KB)."""
    lines = [l.strip().strip('\u3000') for l in raw.lstrip('\ufeff').split('\n')]
    start = next(k for k, l in enumerate(lines) if '第一回' in l)
    keep = []
    for l in lines[start:]:
        l = l.replace('《》目录 ', '')
        if l and 'xstt5' not in l and 'TXT小说天堂' not in l:
            keep.append(l)
    return chapters(keep, limit_bytes=300_000)


def sanguo(raw):
    """Drop the site's header, "正文" prefixes and "更新时间" lines; keep chapters 1-18 (chapter 19 of this
    transcription has a mis-encoded passage)."""
    lines = [l.strip().strip('\u3000').strip() for l in raw.split('\n')]
    start = next(k for k, l in enumerate(lines) if '第一回' in l)
    keep = []
    for l in lines[start:]:
        if l.startswith('更新时间'):
            continue
        l = re.sub(r'^正文\s*', '', l)
        keep += [p.strip() for p in l.replace('\u3000\u3000', '\n').split('\n') if p.strip()]
    return chapters(keep, max_chapters=18)


def main():
    sh, xyj, sg, out = sys.argv[1:5]
    for name, text in [('en_shakespeare', shakespeare(open(sh, encoding='utf-8').read())),
                       ('zh_xiyouji', xiyouji(open(xyj, encoding='utf-8').read())),
                       ('zh_sanguo', sanguo(open(sg, encoding='utf-8').read()))]:
        with open(f'{out}/{name}.txt.gz', 'wb') as f:
            f.write(gzip.compress(text.encode(), compresslevel=9, mtime=0))


if __name__ == '__main__':
    main()
