#!/usr/bin/env python3
"""check_ar_task.py - the trainer's associative retrieval generator (train/ar_task.c, printed by
ar_dump) against the reference generator tests/reference/ar_task.py: the same input and target
streams, character for character, for every split of seed 1 at the paper's sizes (5,747,401
training characters), and for other seeds and an easier setting (fewer storages per query); each
dumped stream also passes the reference's grammar check.

usage: check_ar_task.py AR_DUMP
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import ar_task  # noqa: E402

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAILED:", what)


def dump(exe, seed, max_storages, counts):
    out = subprocess.run([exe, str(seed), str(max_storages)] + [str(c) for c in counts],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    splits = {}
    for k in range(3):
        head, x, y = out[3 * k], out[3 * k + 1], out[3 * k + 2]
        _, name, queries, chars = head.split()
        splits[name] = (int(queries), int(chars), x, y)
    return splits


def compare(exe, seed, max_storages, counts, expect_chars=None):
    got = dump(exe, seed, max_storages, counts)
    for name, count in zip(("train", "valid", "test"), counts):
        x, y = ar_task.generate(count, seed, name, storages=(1, max_storages))
        queries, chars, cx, cy = got[name]
        tag = f"seed {seed}, storages 1..{max_storages}, {name}"
        check(queries == count, f"{tag}: {queries} queries, expected {count}")
        check(chars == len(x) == len(cx), f"{tag}: {chars} / {len(cx)} characters, reference {len(x)}")
        check(cx == x, f"{tag}: the input streams differ (first at {first_difference(cx, x)})")
        check(cy == y, f"{tag}: the target streams differ (first at {first_difference(cy, y)})")
        if expect_chars and name in expect_chars:
            check(len(cx) == expect_chars[name], f"{tag}: {len(cx)} characters, docs say "
                  f"{expect_chars[name]}")
        try:
            groups = ar_task.parse(cx, cy)
            check(len(groups) == count, f"{tag}: {len(groups)} groups parsed")
        except ValueError as e:
            check(False, f"{tag}: the grammar check fails: {e}")


def first_difference(a, b):
    for i, (p, q) in enumerate(zip(a, b)):
        if p != q:
            return i
    return min(len(a), len(b)) if len(a) != len(b) else None


def main():
    exe = sys.argv[1]
    # the paper's sizes at seed 1 (docs/AR_TASK.md "Sizes")
    compare(exe, 1, 10, (100000, 5000, 5000),
            {"train": 5747401, "valid": 289337, "test": 287810})
    compare(exe, 7, 10, (300, 50, 50))
    compare(exe, 2, 2, (500, 100, 100))
    # SplitMix64's first output from state 0 (docs/AR_TASK.md)
    check(ar_task.SplitMix64(0).next() == 0xE220A8397B1DCDAF, "the reference's SplitMix64")
    if failures:
        print(f"{failures} check(s) failed")
        return 1
    print("ok: the C generator equals ar_task.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
