#!/usr/bin/python3
"""test_gfw_torch.py - the trainer's Gated Fast Weights model against the independent references.

gfw_dump (the trainer's model, one lane) gives the logits after every token of a window, in double
and in float, and the gradients of the window's mean loss in double. The golden logits come from
tests/reference/gfw_reference.py (numpy, float64, written from the spec alone); the gradients from
PyTorch's autograd through tests/reference/gfw_torch.py's forward. Cases: the paper's sizes and
small ones (V, E, m, N, P), LM and QM with padding targets, from the reset state and from the state
a prefix left (carried in, detached), Glorot-initialised weights with random biases (the spec's
initialisation; large random weights make the recurrence chaotic, docs/MODEL.md). Tolerances:
double logits within 1e-10 of the row's largest, float logits within 1e-4 (per row:
|got - want| <= tol * max(max_j |want_j|, 1e-3)); gradients within 1e-9 of the largest. Skips (77)
without numpy or PyTorch.

usage: test_gfw_torch.py GFW_DUMP
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))

try:
    import numpy as np
    import torch
    import gfw_reference as ref
    import gfw_torch
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

QMARK = 3


def worst_row_error(got, want):
    scale = np.maximum(np.max(np.abs(want), axis=1, keepdims=True), 1e-3)
    return float(np.max(np.abs(got - want) / scale))


def torch_gradients(hp, params, x, y, mask, prefix):
    P = gfw_torch.to_torch(params, requires_grad=True)
    state = None
    if prefix:
        with torch.no_grad():
            _, state = gfw_torch.forward(hp, P, [[t] for t in prefix])
        state = tuple(s.detach() for s in state)
    logits, _ = gfw_torch.forward(hp, P, [[t] for t in x], state)
    logits = logits[:, 0, :]
    rows = [i for i, k in enumerate(mask) if k]
    loss = torch.nn.functional.cross_entropy(logits[rows], torch.tensor([y[i] for i in rows]))
    loss.backward()
    return float(loss), {k: v.grad.numpy() for k, v in P.items()}


def run_case(dump, name, sizes, mode, prefix_len, seed, T=18):
    hp = ref.default_hparams(**sizes)
    V = hp["vocab_size"]
    rng = np.random.default_rng(seed)
    params = ref.init_params(hp, rng)
    for n, shape in ref.tensor_list(hp):
        if len(shape) == 1:  # biases too, so that they matter
            params[n] = rng.uniform(-0.3, 0.3, size=shape)
    x = [QMARK if rng.random() < 0.3 else int(rng.integers(1, V)) for _ in range(T)]
    y = [0 if rng.random() < 0.15 else int(rng.integers(1, V)) for _ in range(T)]
    mask = [int(yi != 0 and (mode == "lm" or xi == QMARK)) for xi, yi in zip(x, y)]
    if sum(mask) == 0:
        x[0], y[0], mask[0] = QMARK, 2, 1
    prefix = [int(rng.integers(1, V)) for _ in range(prefix_len)]
    with tempfile.TemporaryDirectory() as tmp:
        files = {k: os.path.join(tmp, k) for k in ("p", "l64", "l32", "g")}
        with open(files["p"], "wb") as f:
            for n, _ in ref.tensor_list(hp):
                f.write(np.asarray(params[n], dtype="<f8").tobytes())
        ids = lambda v: ",".join(str(i) for i in v)  # noqa: E731
        args = [dump] + [str(hp[k]) for k in ("vocab_size", "embedding_length", "fast_hidden",
                                               "slow_hidden", "slow_inner")]
        args += [repr(hp["layer_norm_epsilon"]), mode, str(QMARK), files["p"], ids(x), ids(y),
                 ids(prefix) if prefix else "-", files["l64"], files["l32"], files["g"]]
        out = subprocess.run(args, capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{name}: gfw_dump failed: {out.stderr}")
            return False
        c_loss, c_rows = float(out.stdout.split()[0]), int(out.stdout.split()[1])
        l64 = np.fromfile(files["l64"], dtype="<f8").reshape(T, V)
        l32 = np.fromfile(files["l32"], dtype="<f8").reshape(T, V)
        cg = np.fromfile(files["g"], dtype="<f8")
    state = ref.forward(hp, params, prefix)[1] if prefix else None
    want, _ = ref.forward(hp, params, x, state)
    e64, e32 = worst_row_error(l64, want), worst_row_error(l32, want)
    loss, grads = torch_gradients(hp, params, x, y, mask, prefix)
    ok = c_rows == sum(mask)
    at, worst, scale = 0, 0.0, 0.0
    for n, shape in ref.tensor_list(hp):
        size = int(np.prod(shape))
        c = cg[at:at + size].reshape(shape)
        at += size
        scale = max(scale, float(np.max(np.abs(grads[n]))))
        worst = max(worst, float(np.max(np.abs(c - grads[n]))))
        if not np.any(grads[n] != 0):
            print(f"{name}: {n}: torch's gradient is zero")
            ok = False
    rel = worst / scale
    print(f"{name}: logits vs gfw_reference.py: worst {e64:.3g} (double), {e32:.3g} (float) of "
          f"the row's largest; loss {c_loss:.12f} (torch {loss:.12f}) over {c_rows} rows; worst "
          f"gradient difference {rel:.3g} of the largest")
    if e64 > 1e-10 or e32 > 1e-4 or rel > 1e-9 or abs(c_loss - loss) > 1e-10 * max(1, loss):
        ok = False
    return ok


def main():
    dump = sys.argv[1]
    paper = {}
    small = dict(vocab_size=9, embedding_length=4, fast_hidden=5, slow_hidden=6, slow_inner=7)
    cases = [("paper sizes LM", paper, "lm", 0), ("paper sizes QM, prefix", paper, "qm", 10),
             ("small LM, prefix", small, "lm", 7), ("small QM", small, "qm", 0),
             ("m=2 LM, prefix", dict(small, fast_hidden=2), "lm", 5)]
    ok = True
    for i, (name, sizes, mode, prefix) in enumerate(cases):
        ok = run_case(dump, name, sizes, mode, prefix, 200 + i) and ok
    print("test_gfw_torch:", "all checks passed" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
