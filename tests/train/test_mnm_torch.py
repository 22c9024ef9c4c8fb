#!/usr/bin/python3
"""test_mnm_torch.py - the trainer's MNM gradients against PyTorch's autograd.

tests/reference/mnm_torch.py (independent of the C code) gives the objective (mean cross entropy
plus the meta weight times the mean meta term) and its gradient with respect to every tensor by
autograd; mnm_grads_dump (the trainer's double-precision model) gives the same numbers for the same
random tiny model and tokens. Cases: one to three memory layers, LM and QM, meta weight 0, 1 and 2,
from the reset state and from the state a prefix left (carried, detached). Skips (77) without
PyTorch.

usage: test_mnm_torch.py MNM_GRADS_DUMP
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))

try:
    import numpy as np
    import torch  # noqa: F401
    import mnm_torch
    from mnm_reference import default_hparams, tensor_list
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

QMARK = 3


def run_case(dump, name, layers, mode, meta_weight, prefix, seed):
    hp = default_hparams(vocab_size=9, embedding_length=5, hidden_size=6, head_count=2,
                         key_length=3, value_length=4, memory_hidden=5, memory_layers=layers,
                         output_length=7, forget_bias=0.5)
    rng = np.random.default_rng(seed)
    params = {n: rng.uniform(-0.8, 0.8, size=shape) for n, shape in tensor_list(hp)}
    T = 14
    x = [QMARK if rng.random() < 0.3 else (0 if rng.random() < 0.1 else int(rng.integers(1, 9)))
         for _ in range(T)]
    y = [0 if rng.random() < 0.1 else int(rng.integers(1, 9)) for _ in range(T)]
    mask = [int(yi != 0 and (mode == "lm" or xi == QMARK)) for xi, yi in zip(x, y)]
    if sum(mask) == 0:
        mask[0], y[0] = 1, 2
        x[0] = QMARK
    pre = [int(rng.integers(1, 9)) for _ in range(9)] if prefix else None
    with tempfile.TemporaryDirectory() as tmp:
        pfile, gfile = os.path.join(tmp, "p.f64"), os.path.join(tmp, "g.f64")
        with open(pfile, "wb") as f:
            for n, _ in tensor_list(hp):
                f.write(np.asarray(params[n], dtype="<f8").tobytes())
        ids = lambda v: ",".join(str(i) for i in v)  # noqa: E731
        args = [dump] + [str(hp[k]) for k in ("vocab_size", "embedding_length", "hidden_size",
                                               "head_count", "key_length", "value_length",
                                               "memory_hidden", "memory_layers", "output_length")]
        args += [repr(hp["forget_bias"]), repr(meta_weight), mode, str(QMARK), pfile, ids(x),
                 ids(y), ids(pre) if pre else "-", gfile]
        out = subprocess.run(args, capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{name}: mnm_grads_dump failed: {out.stderr}")
            return False
        c_total, c_task, c_meta = (float(v) for v in out.stdout.split())
        cg = np.fromfile(gfile, dtype="<f8")
    col = lambda v: np.array(v).reshape(-1, 1)  # noqa: E731
    total, task, meta, grads = mnm_torch.gradients(
        hp, params, col(x), col(y), col(mask), meta_weight,
        prefix=col(pre) if pre else None)
    ok = True
    if abs(total - c_total) > 1e-10 * max(1, abs(total)) or abs(meta - c_meta) > 1e-10:
        print(f"{name}: objective {c_total} (task {c_task}, meta {c_meta}) against torch's "
              f"{total} (task {task}, meta {meta})")
        ok = False
    at, worst, scale = 0, 0.0, 0.0
    for n, shape in tensor_list(hp):
        size = int(np.prod(shape))
        c = cg[at:at + size].reshape(shape)
        at += size
        ref = np.asarray(grads[n])
        if n.startswith("mnm.memory."):  # not trained: the trainer gives it no gradient
            if np.any(c != 0):
                print(f"{name}: {n} has a gradient")
                ok = False
            continue
        scale = max(scale, float(np.max(np.abs(ref))))
        err = float(np.max(np.abs(c - ref))) if size else 0.0
        worst = max(worst, err)
        if not np.any(ref != 0):
            print(f"{name}: {n}: torch's gradient is zero")
            ok = False
    rel = worst / scale
    print(f"{name}: objective {c_total:.12f} (torch {total:.12f}), worst gradient difference "
          f"{worst:.3g} = {rel:.3g} of the largest")
    if rel > 1e-9:
        ok = False
    return ok


def main():
    dump = sys.argv[1]
    ok = True
    cases = [("Lm=3 LM meta 1", 3, "lm", 1.0, False), ("Lm=3 LM meta 1, prefix", 3, "lm", 1.0, True),
             ("Lm=3 QM meta 2, prefix", 3, "qm", 2.0, True), ("Lm=1 LM meta 1", 1, "lm", 1.0, True),
             ("Lm=2 QM meta 0", 2, "qm", 0.0, True), ("Lm=2 LM meta 1", 2, "lm", 1.0, False)]
    for i, (name, layers, mode, lam, prefix) in enumerate(cases):
        ok = run_case(dump, name, layers, mode, lam, prefix, 100 + i) and ok
    print("test_mnm_torch:", "all checks passed" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
