#!/usr/bin/python3
"""ar_task.py - the reference generator of the Gated Fast Weights paper's sequence-to-sequence
Associative Retrieval (AR) task, and its metrics (docs/AR_TASK.md).

What it is for: writing the train, validation and test streams of the task as text files, from a
seed, with a generator simple enough to reimplement exactly (SplitMix64 and a fixed draw order,
docs/AR_TASK.md); checking a stream against the task's grammar; and the paper's metrics (total and
partial accuracy, total and partial bits per character).

CLI:
  ar_task.py generate OUTDIR [--seed 1] [--train 100000] [--valid 5000] [--test 5000]
      writes OUTDIR/ar_train.txt, ar_valid.txt, ar_test.txt (two lines each: input, target)
  ar_task.py check FILE          parses a split file and prints its statistics
"""

import argparse
import math
import os
import sys

# Token ids of the task's 15 symbols: the space (the default target; never an input), the eight
# key/value characters, then the syntax.
VOCAB = [" ", "a", "b", "c", "d", "e", "f", "g", "h", "S", "Q", "(", ")", ",", "."]
TOKEN_ID = {c: i for i, c in enumerate(VOCAB)}
VALUES = "abcdefgh"
SPLITS = {"train": 0, "valid": 1, "test": 2}
DEFAULT_COUNTS = {"train": 100000, "valid": 5000, "test": 5000}
MASK64 = (1 << 64) - 1


class SplitMix64:
    """SplitMix64 (Steele, Lea & Flood 2014); below(n) = next() mod n."""

    def __init__(self, state):
        self.state = state & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, n):
        return self.next() % n


def split_state(seed, split):
    """The generator's initial state for a split: 4 * seed + split index (train 0, valid 1, test 2)."""
    return (4 * seed + SPLITS[split]) & MASK64


def generate(n_queries, seed, split="train", storages=(1, 10), key_lengths=(2, 4)):
    """(x, y): the input and target streams (equal-length strings) of n_queries query groups.
    storages and key_lengths are inclusive ranges; the defaults are the paper's (smaller ones only
    for quick demonstrations)."""
    rng = SplitMix64(split_state(seed, split))
    s_lo, s_hi = storages
    k_lo, k_hi = key_lengths
    xs, ys = [], []
    for _ in range(n_queries):
        n = s_lo + rng.below(s_hi - s_lo + 1)
        stored = []
        for _ in range(n):
            klen = k_lo + rng.below(k_hi - k_lo + 1)
            key = "".join(VALUES[rng.below(8)] for _ in range(klen))
            value = VALUES[rng.below(8)]
            stored.append((key, value))
            item = f"S({key},{value}),"
            xs.append(item)
            ys.append(" " * len(item))
        key = stored[rng.below(n)][0]
        value = [v for k, v in stored if k == key][-1]  # the latest storage of the key wins
        q = f"Q({key})"
        xs.append(q + value + ".")
        ys.append(" " * (len(q) - 1) + value + "  ")  # the value is the target at the ')'
    return "".join(xs), "".join(ys)


def write_split(path, x, y):
    """A split file: the input stream, a newline, the target stream, a newline (ASCII)."""
    with open(path, "w", encoding="ascii", newline="\n") as f:
        f.write(x + "\n" + y + "\n")


def read_split(path):
    with open(path, "r", encoding="ascii", newline="\n") as f:
        lines = f.read().split("\n")
    if len(lines) != 3 or lines[2] != "" or len(lines[0]) != len(lines[1]):
        raise ValueError(f"{path}: expected two lines of equal length")
    return lines[0], lines[1]


def parse(x, y=None):
    """Check a stream against the grammar; returns the list of groups, each
    {"storages": [(key, value)], "query": key, "answer": value}. Raises ValueError naming the
    offset of the first problem. When y is given, checks it is the stream's target."""
    groups, i, n = [], 0, len(x)
    stored = []
    want_y = []

    def expect(c):
        nonlocal i
        if i >= n or x[i] != c:
            raise ValueError(f"offset {i}: expected {c!r}")
        i += 1

    def word():
        nonlocal i
        j = i
        while i < n and x[i] in VALUES:
            i += 1
        return x[j:i]

    while i < n:
        start = i
        if x[i] == "S":
            i += 1
            expect("(")
            key = word()
            expect(",")
            value = word()
            expect(")")
            expect(",")
            if not 2 <= len(key) <= 4 or len(value) != 1:
                raise ValueError(f"offset {start}: key {key!r}, value {value!r}")
            stored.append((key, value))
            want_y.append(" " * (i - start))
        elif x[i] == "Q":
            i += 1
            expect("(")
            key = word()
            expect(")")
            answer = word()
            expect(".")
            keys = [k for k, _ in stored]
            if key not in keys or len(answer) != 1:
                raise ValueError(f"offset {start}: query {key!r} not stored since the last query")
            if answer != [v for k, v in stored if k == key][-1]:
                raise ValueError(f"offset {start}: answer {answer!r} is not the latest value")
            if not 1 <= len(stored) <= 10:
                raise ValueError(f"offset {start}: {len(stored)} storages before the query")
            groups.append({"storages": stored, "query": key, "answer": answer})
            stored = []
            want_y.append(" " * (len(key) + 2) + answer + "  ")
        else:
            raise ValueError(f"offset {i}: unexpected {x[i]!r}")
    if stored:
        raise ValueError("stream ends with storages after the last query")
    if y is not None and y != "".join(want_y):
        raise ValueError("target stream differs from the one the input implies")
    return groups


def encode(s):
    return [TOKEN_ID[c] for c in s]


def metrics(logits, targets):
    """The paper's metrics of predictions (logits [T, V], numpy) against target ids [T]: total and
    partial (non-space targets only) accuracy (argmax) and bits per character; partial_bpc_all is
    the non-space targets' bits divided by all positions (what the paper's Table 1 seems to report,
    docs/AR_TASK.md)."""
    import numpy as np
    logits = np.asarray(logits, dtype=np.float64)
    t = np.asarray(targets)
    m = logits.max(axis=1, keepdims=True)
    logp = logits - m - np.log(np.exp(logits - m).sum(axis=1, keepdims=True))
    nll = -logp[np.arange(len(t)), t] / math.log(2.0)
    hit = logits.argmax(axis=1) == t
    part = t != TOKEN_ID[" "]
    return {"total_accuracy": float(hit.mean()), "partial_accuracy": float(hit[part].mean()),
            "total_bpc": float(nll.mean()), "partial_bpc": float(nll[part].mean()),
            "partial_bpc_all": float(nll[part].sum() / len(t)), "partial_count": int(part.sum())}


def partial_accuracy(predicted, target):
    """Share of the non-space target characters predicted exactly (equal-length strings)."""
    pairs = [(p, t) for p, t in zip(predicted, target) if t != " "]
    return sum(p == t for p, t in pairs) / len(pairs)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("outdir")
    g.add_argument("--seed", type=int, default=1)
    for s, c in DEFAULT_COUNTS.items():
        g.add_argument(f"--{s}", type=int, default=c)
    c = sub.add_parser("check")
    c.add_argument("file")
    args = ap.parse_args(argv)
    if args.cmd == "generate":
        os.makedirs(args.outdir, exist_ok=True)
        for split in SPLITS:
            x, y = generate(getattr(args, split), args.seed, split)
            write_split(os.path.join(args.outdir, f"ar_{split}.txt"), x, y)
            print(f"{split}: {getattr(args, split)} queries, {len(x)} characters")
    else:
        x, y = read_split(args.file)
        groups = parse(x, y)
        ns = [len(gr["storages"]) for gr in groups]
        print(f"{len(groups)} queries, {len(x)} characters, {sum(ns) / len(ns):.3f} storages per query")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
