#!/usr/bin/python3
"""mnm_recall_demo.py - evidence that the MNM spec learns: a small model trained on associative recall.

What it is for: showing, with the PyTorch reference (mnm_torch.py) and Adam, that the model as
docs/MODEL.md specifies it learns to bind keys to values. Each sample is PAIRS (key, value) token
pairs, then "?" and one of the keys; the loss is at the last position only, where the target is
that key's value. With --memory-only the controller cannot remember: W_hh is zero and frozen and
the forget gate is shut (forget_bias -1e4). The past then reaches the output only through the
memory net's weights (and the read-out fed back), so accuracy above what guessing among the
story's values gives (about 1/3 here) means the learned write and read work. This is not a unit
test (minutes of CPU); it prints validation accuracy every 100 steps.

Run: /usr/bin/python3 tests/reference/mnm_recall_demo.py [--memory-only] [--steps 1500] [--meta-weight 1]
"""

import argparse
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mnm_reference as ref  # noqa: E402
import mnm_torch as tref  # noqa: E402

N_KEYS, N_VALUES, PAIRS = 8, 8, 4


def make_batch(rng, lanes, query_token):
    toks, tgts, mask = [], [], []
    for _ in range(lanes):
        keys = rng.choice(N_KEYS, PAIRS, replace=False)
        vals = rng.integers(0, N_VALUES, PAIRS)
        seq = []
        for k, v in zip(keys, vals):
            seq += [2 + k, 2 + N_KEYS + v]
        j = rng.integers(PAIRS)
        seq += [query_token, 2 + keys[j]]
        toks.append(seq)
        tgts.append(seq[1:] + [2 + N_KEYS + vals[j]])
        mask.append([False] * (len(seq) - 1) + [True])
    return np.array(toks).T, np.array(tgts).T, np.array(mask).T


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--memory-only", action="store_true")
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--meta-weight", type=float, default=ref.DEFAULT_META_WEIGHT)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    V = 2 + N_KEYS + N_VALUES + 1  # <pad>, <eos>, keys, values, "?"
    hp = ref.default_hparams(vocab_size=V, embedding_length=32, hidden_size=64, head_count=1,
                             key_length=32, value_length=32, memory_hidden=32, memory_layers=3,
                             output_length=64, forget_bias=-1e4 if args.memory_only else 0.0)
    rng = np.random.default_rng(args.seed)
    P = tref.to_torch(ref.init_params(hp, rng), requires_grad=True)
    frozen = {"lstm.weight_hh"} if args.memory_only else set()
    if args.memory_only:
        with torch.no_grad():
            P["lstm.weight_hh"].zero_()
    opt = torch.optim.Adam([v for k, v in P.items() if ref.is_trained(k) and k not in frozen],
                           lr=3e-3)
    t0 = time.time()
    for it in range(1, args.steps + 1):
        toks, tgts, mask = make_batch(rng, 32, V - 1)
        total, task, meta, _ = tref.objective(hp, P, toks, tgts, mask, args.meta_weight)
        opt.zero_grad()
        total.backward()
        opt.step()
        if it % 100 == 0:
            with torch.no_grad():
                toks, tgts, _ = make_batch(rng, 256, V - 1)
                logits, _, _ = tref.forward(hp, P, toks)
                acc = float((logits[-1].argmax(1).numpy() == tgts[-1]).mean())
            print(f"step {it}  task {float(task):.3f}  meta {float(meta):.4f}  recall accuracy {acc:.3f}"
                  f"  ({time.time() - t0:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
