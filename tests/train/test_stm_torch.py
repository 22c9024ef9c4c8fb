#!/usr/bin/python3
"""test_stm_torch.py - the trainer's STM against the independent references.

stm_dump (the trainer's model, one lane) gives the logits of every position that predicts, in double
and in float, read as two windows with the state carried (the split falls inside a sentence), and
the gradients of the summed loss of the whole stream in double. The golden logits come from
tests/reference/stm_reference.py (numpy, float64, written from the spec alone); the gradients from
PyTorch's autograd through tests/reference/stm_torch.py's forward. Cases: both input modes, small
sizes and the catbAbI word size's shape (smaller), alpha as drawn (sentence (1, 0, 0), word (0, 0,
0)) and all three non-zero, streams with statements, sentences longer than P, questions with their
answers and <eos> resets (reset_on_eos on; word mode also off), each starting with <eos> (the state
a window starts from is detached, the reset state included: the initial memories learn through the
resets inside a window; without reset_on_eos their gradient must be zero). alpha2 = 0 leaves the
value and select maps, alpha3 = 0 the transfer, alpha1 = alpha2 = 0 the initial relational memory
without gradient. Weights: the spec's initialisation with random biases and gains. Tolerances:
double logits within 1e-10 of the row's largest, float logits within 1e-4 (|got - want| <= tol *
max(max_j |want_j|, 1e-3)); gradients within 1e-9 of the largest. Skips (77) without numpy or
PyTorch.

usage: test_stm_torch.py STM_DUMP
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
    import stm_reference as ref
    import stm_torch
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

DOT, QMARK = 2, 3


def worst_row_error(got, want):
    scale = np.maximum(np.max(np.abs(want), axis=1, keepdims=True), 1e-3)
    return float(np.max(np.abs(got - want) / scale))


def sentence_stream(rng, V, T):
    """Statements of 1..7 words, questions with an answer after them, an <eos> after the first
    question (drawn again until there are three questions)."""
    while True:
        x, questions = [], 0
        while len(x) < T:
            x += [int(rng.integers(4, V)) for _ in range(int(rng.integers(1, 8)))]
            if rng.random() < 0.4:
                x += [QMARK, int(rng.integers(4, V))]
                questions += 1
                if questions == 1:
                    x.append(1)
            else:
                x.append(DOT)
        x = x[:T]
        if x.count(QMARK) >= 3 and x[-1] != QMARK and 1 in x:
            return x, x[1:] + [4]


def run_case(dump, name, sizes, alpha, seed, T=40):
    hp = ref.default_hparams(**sizes)
    hp.update(statement_end_token_id=DOT, question_end_token_id=QMARK, sam_norm_eps=1e-5,
              answer_norm_eps=1e-12)
    V, sentence = hp["vocab_size"], hp["input_mode"] == ref.SENTENCE
    rng = np.random.default_rng(seed)
    params = ref.init_params(hp, rng)
    for n, shape in ref.tensor_list(hp):
        if n.endswith("bias") or n.endswith("bias1") or n.endswith("bias2"):
            params[n] = params[n] + rng.uniform(-0.3, 0.3, size=shape)
        elif n in ("stm.sam.norm.weight", "stm.answer.norm"):
            params[n] = params[n] + rng.uniform(-0.3, 0.3, size=shape)
    params["stm.alpha"] = np.array(alpha, dtype=float)
    if sentence:
        x, y = sentence_stream(rng, V, T)
    else:
        x = [1 if rng.random() < 0.1 else int(rng.integers(2, V)) for _ in range(T)]
        y = [int(rng.integers(1, V)) for _ in range(T)]
    # every story starts with <eos>: the reset inside the window is what passes gradients to the
    # initial memories (the state a window starts from is detached, the reset state included)
    x[0] = 1
    split = T // 2 + 1
    if sentence:  # the split inside a sentence: after a word that ends nothing
        while x[split - 1] in (DOT, QMARK, 1) or x[split] in (DOT, QMARK) or x[split - 2] == QMARK:
            split += 1
    with tempfile.TemporaryDirectory() as tmp:
        files = {k: os.path.join(tmp, k) for k in ("p", "l64", "l32", "g")}
        with open(files["p"], "wb") as f:
            for n, _ in ref.tensor_list(hp):
                f.write(np.asarray(params[n], dtype="<f8").tobytes())
        ids = lambda v: ",".join(str(i) for i in v)  # noqa: E731
        args = [dump, "sentence" if sentence else "word"]
        args += [str(hp[k]) for k in ("vocab_size", "embedding_length", "sentence_length",
                                      "memory_size", "query_count", "relation_length",
                                      "answer_hidden")]
        args += ["1" if hp["reset_on_eos"] else "0", str(DOT), str(QMARK), files["p"], ids(x),
                 ids(y), str(split), files["l64"], files["l32"], files["g"]]
        out = subprocess.run(args, capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{name}: stm_dump failed: {out.stderr}")
            return False
        c_loss, c_rows = float(out.stdout.split()[0]), int(out.stdout.split()[1])
        l64 = np.fromfile(files["l64"], dtype="<f8").reshape(c_rows, V)
        l32 = np.fromfile(files["l32"], dtype="<f8").reshape(c_rows, V)
        cg = np.fromfile(files["g"], dtype="<f8")
    outs, _ = ref.forward(hp, params, x)
    rows = [i for i, o in enumerate(outs) if o is not None]
    want = np.array([outs[i] for i in rows])
    if len(rows) != c_rows or c_rows < 3:
        print(f"{name}: {c_rows} loss rows, the reference predicts at {len(rows)}")
        return False
    e64, e32 = worst_row_error(l64, want), worst_row_error(l32, want)
    loss, grads = stm_torch.gradients(hp, params, x, [y[i] for i in rows])
    ok = True
    at, worst, scale = 0, 0.0, 0.0
    for n, shape in ref.tensor_list(hp):
        size = int(np.prod(shape))
        c = cg[at:at + size].reshape(shape)
        at += size
        if not hp["reset_on_eos"] and n in ("stm.item.init", "stm.relation.init"):
            # no reset inside the window: the trainer passes nothing to the initial memories
            if np.any(c != 0):
                print(f"{name}: {n}: a gradient without a reset in the window")
                ok = False
            continue
        scale = max(scale, float(np.max(np.abs(grads[n]))))
        worst = max(worst, float(np.max(np.abs(c - grads[n]))))
        if os.environ.get("STM_TORCH_VERBOSE"):
            print(f"  {n}: worst {float(np.max(np.abs(c - grads[n]))):.3g}")
        unused = (n.startswith("stm.transfer") and alpha[2] == 0) or (
            n.startswith(("stm.value", "stm.select")) and alpha[1] == 0) or (
            n == "stm.relation.init" and alpha[0] == 0 and alpha[1] == 0)
        if not np.any(grads[n] != 0) and not unused:
            print(f"{name}: {n}: torch's gradient is zero")
            ok = False
    rel = worst / scale
    print(f"{name}: logits vs stm_reference.py: worst {e64:.3g} (double), {e32:.3g} (float) of "
          f"the row's largest; loss {c_loss:.12f} (torch {loss:.12f}) over {c_rows} rows; worst "
          f"gradient difference {rel:.3g} of the largest")
    if e64 > 1e-10 or e32 > 1e-4 or rel > 1e-9 or abs(c_loss - loss) > 1e-10 * max(1, loss):
        ok = False
    return ok


def main():
    dump = sys.argv[1]
    sent = dict(vocab_size=14, input_mode=ref.SENTENCE, embedding_length=6, sentence_length=5,
                memory_size=5, query_count=3, answer_hidden=7)
    word = dict(vocab_size=12, input_mode=ref.WORD, embedding_length=7, memory_size=4,
                query_count=3, relation_length=5)
    cases = [("sentence, alpha (1, 0, 0)", sent, (1, 0, 0)),
             ("sentence, alpha (0.9, 0.4, 0.3)", sent, (0.9, 0.4, 0.3)),
             ("word, alpha (0, 0, 0)", word, (0, 0, 0)),
             ("word, alpha (1, 0, 0)", word, (1, 0, 0)),
             ("word, alpha (0.8, 0.5, 0.4)", word, (0.8, 0.5, 0.4)),
             ("word, reset_on_eos off", dict(word, reset_on_eos=False), (0.8, 0.5, 0.4))]
    ok = True
    for i, (name, sizes, alpha) in enumerate(cases):
        ok = run_case(dump, name, sizes, alpha, 300 + i) and ok
    print("test_stm_torch:", "all checks passed" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
