#!/usr/bin/env python3
"""check_catbabi.py - an independent reading of the bAbI files (plain Python, written from
docs/MODEL.md) compared with the trainer's (catbabi_dump): the vocabulary in order and a
digest of every split's token stream.

usage: check_catbabi.py CATBABI_DUMP DATA_DIR FOLDER   (exit 77 = skipped: no data)
"""
import os
import subprocess
import sys

SPLITS = ("train", "valid", "test")


def words_of(text):
    out = []
    for w in text.lower().split():
        if len(w) > 1 and w[-1] in ".?":
            out += [w[:-1], w[-1]]
        else:
            out.append(w)
    return out


def stories(path):
    result = []
    for line in open(path, encoding="ascii").read().splitlines():
        if not line:
            continue
        ident, text = line.split(" ", 1)
        if ident == "1":
            result.append([])
        if "\t" in text:
            question, answer, _ = text.split("\t")
            result[-1] += words_of(question) + [answer.lower()]
        else:
            result[-1] += words_of(text)
    return result


def main():
    dump, data_dir, folder = sys.argv[1:4]
    if not os.path.isdir(os.path.join(data_dir, folder)):
        print("SKIP: no data at", os.path.join(data_dir, folder))
        return 77
    vocab = {"<pad>": 0, "<eos>": 1}
    split_stories = {}
    for split in SPLITS:
        split_stories[split] = []
        for task in range(1, 21):
            path = os.path.join(data_dir, folder, "qa%d_%s.txt" % (task, split))
            if not os.path.exists(path) and folder.endswith("-10k") and split == "train":
                path = os.path.join(data_dir, folder[:-4], "qa%d_%s.txt" % (task, split))
            for story in stories(path):
                for w in story:
                    vocab.setdefault(w, len(vocab))
                split_stories[split].append(story)
    out = subprocess.run([dump, data_dir, folder], check=True, capture_output=True,
                         text=True).stdout.splitlines()
    got_words = [l.split(" ", 2)[2] for l in out if l.startswith("word ")]
    want_words = sorted(vocab, key=vocab.get)
    failures = 0
    if got_words != want_words:
        first = next((i for i, (a, b) in enumerate(zip(got_words, want_words)) if a != b),
                     min(len(got_words), len(want_words)))
        print("vocabulary differs at id %d: trainer %r, reference %r (sizes %d, %d)" % (
            first, got_words[first:first + 3], want_words[first:first + 3], len(got_words),
            len(want_words)))
        failures += 1
    for line in out:
        if not line.startswith("split "):
            continue
        _, split, samples, tokens, digest = line.split()
        h, n = 0, 0
        for story in split_stories[split]:
            for token in [1] + [vocab[w] for w in story]:
                h = (h * 1000003 + token) % (1 << 64)
                n += 1
        want = (len(split_stories[split]), n, h)
        got = (int(samples), int(tokens), int(digest))
        status = "ok" if got == want else "DIFFERS"
        print("%s: trainer (samples, tokens, digest) %s, reference %s: %s" % (split, got, want,
                                                                              status))
        failures += got != want
    print("vocabulary: %d words, %s" % (len(got_words), "ok" if got_words == want_words else
                                         "DIFFERS"))
    print("check_catbabi: %s" % ("all checks passed" if not failures else
                                 "%d check(s) failed" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
