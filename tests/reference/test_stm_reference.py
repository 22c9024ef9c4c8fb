#!/usr/bin/python3
"""test_stm_reference.py - checks of the STM's two references against each other and the spec.

What it checks: the tensor list and the state size match model_format/stm/stm_hparams.h (compiled
with -Wall -Wextra -Werror when there is a C compiler) and the documented counts at the paper's bAbI
sizes and the catbAbI size; numpy and PyTorch agree on outputs and final memories in both input
modes; autograd gradients agree with numpy finite differences; the memories evolve with every
sentence and an answer depends on an earlier sentence through them; a question, its answer slot and
words before a sentence end leave the memories alone; <eos> restores the reset state; a written
model file reads back identically with its checksum and fingerprint.
Run: /usr/bin/python3 tests/reference/test_stm_reference.py   (exit 0 on success; the PyTorch parts
are skipped with a message when python3-torch is missing).
"""

import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stm_reference as ref  # noqa: E402

try:
    import torch
    import stm_torch as tref
except ImportError:
    tref = None

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
failures = []
checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def tiny(**kw):
    base = dict(vocab_size=12, embedding_length=6, sentence_length=5, memory_size=5, query_count=3,
                relation_length=4, answer_hidden=7, statement_end_token_id=2,
                question_end_token_id=3, eos_token_id=1)
    base.update(kw)
    return ref.default_hparams(**base)


def lively(hp, seed):
    """Initial parameters with the alphas moved off (1, 0, 0), so every path carries signal."""
    p = ref.init_params(hp, np.random.default_rng(seed))
    p["stm.alpha"] = np.array([0.9, 0.7, 0.3])
    return p


STORY = [4, 5, 6, 2, 7, 8, 9, 10, 2, 4, 11, 3, 6, 5, 7, 2, 8, 3, 9]  # ". " = 2, "?" = 3


def test_counts():
    c = ref.counts(ref.default_hparams())
    check(c["total"] == 456267, f"sentence mode, bAbI sizes: {c['total']} parameters")
    check(c["state_floats"] == 170100 and c["state_bytes"] == 680472, f"bAbI state {c}")
    w = ref.counts(ref.default_hparams(**ref.CATBABI_WORD))
    check(w["total"] == 683839, f"word mode, catbAbI size: {w['total']} parameters")
    check(w["state_floats"] == 56 * 56 * 13 and w["state_words"] == 0, "catbAbI state")
    check(len(ref.tensor_list(ref.default_hparams())) == 38, "sentence tensor count")
    check(len(ref.tensor_list(ref.default_hparams(input_mode=1))) == 23, "word tensor count")


def test_header_matches():
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        print("skip: no C compiler for the header check")
        return
    src = r"""
#include "stm/stm_hparams.h"
int main(int argc, char **argv) {
    fwm_stm_hparams hp;
    (void)argv;
#define D_(f, k, kind, def, lo, hi) hp.f = def;
    FWM_STM_HPARAM_LIST(D_)
#undef D_
    if (argc > 1) { hp.input_mode = FWM_STM_INPUT_WORD; hp.memory_size = 7; hp.query_count = 3; }
#define K_(f, k, kind, def, lo, hi) printf("key %s %s\n", #f, k);
    FWM_STM_HPARAM_LIST(K_)
#undef K_
    for (size_t i = 0; i < fwm__stm_tensor_count(&hp); i++) {
        char name[48]; uint64_t r, c;
        fwm__stm_tensor_at(&hp, i, name, &r, &c);
        printf("%s %llu %llu\n", name, (unsigned long long)r, (unsigned long long)c);
    }
    printf("state %llu %llu %llu\n", (unsigned long long)fwm__stm_hparams_state_floats(&hp),
           (unsigned long long)fwm__stm_state_words(&hp), (unsigned long long)fwm__stm_state_bytes(&hp));
    return 0;
}
"""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "t.c"), "w") as f:
            f.write(src)
        exe = os.path.join(d, "t")
        r = subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", os.path.join(ROOT, "include"),
                            "-I", os.path.join(ROOT, "model_format"),
                            "-I", os.path.join(ROOT, "model_format", "fwm"), os.path.join(d, "t.c"), "-o", exe],
                           capture_output=True, text=True)
        check(r.returncode == 0, "header compiles: " + r.stderr[-2000:])
        if r.returncode != 0:
            return
        for variant, hp in ((False, ref.default_hparams()),
                            (True, ref.default_hparams(input_mode=1, memory_size=7, query_count=3))):
            out = subprocess.run([exe] + (["x"] if variant else []), capture_output=True,
                                 text=True).stdout.splitlines()
            keys = [ln.split()[1:] for ln in out if ln.startswith("key ")]
            check(keys == [[f, k] for f, k, _, _ in ref.HPARAMS], "hparam keys and order match the header")
            tl = [ln.split() for ln in out if not ln.startswith(("key ", "state "))]
            want = [[n, str(s[0]), str(s[1] if len(s) > 1 else 1)] for n, s in ref.tensor_list(hp)]
            check(tl == want, f"tensor list matches the header (word mode {variant})")
            c = ref.counts(hp)
            st = [ln for ln in out if ln.startswith("state ")]
            check(st == [f"state {c['state_floats']} {c['state_words']} {c['state_bytes']}"],
                  f"state size matches the header (word mode {variant})")


def test_sentence_semantics():
    hp = tiny()
    p = lively(hp, 1)
    outs, st = ref.forward(hp, p, STORY)
    produced = [i for i, o in enumerate(outs) if o is not None]
    check(produced == [11, 17], f"answers exactly at the question ends: {produced}")
    check(all(np.all(np.isfinite(outs[i])) for i in produced), "finite answers")
    # the memories change with every statement and with nothing else
    prev = ref.reset_state(hp, p)
    for i in range(len(STORY)):
        _, s = ref.forward(hp, p, STORY[: i + 1])
        changed = not np.array_equal(ref.state_vector(hp, s), ref.state_vector(hp, prev))
        check(changed == (STORY[i] == 2), f"memory changes at token {i} iff it ends a statement")
        prev = s
    # the answer slot: the token after "?" changes nothing, not even the buffer
    _, s1 = ref.forward(hp, p, STORY[:12])
    _, s2 = ref.forward(hp, p, STORY[:13])
    check(s1["answer_slot"] and not s2["answer_slot"] and s2["buffer"] == [], "answer slot consumed")
    # an answer depends on an earlier sentence, through the memories only
    alt = list(STORY)
    alt[1] = 9
    o_alt, _ = ref.forward(hp, p, alt)
    check(np.abs(o_alt[11] - outs[11]).max() > 1e-6, "the first sentence's words reach the answer")
    check(np.abs(o_alt[17] - outs[17]).max() > 1e-6, "... and the second answer")
    # the relational transfer matters: alpha3 = 0 changes the second answer, not the state's shape
    p0 = dict(p)
    p0["stm.alpha"] = np.array([0.9, 0.7, 0.0])
    o0, _ = ref.forward(hp, p0, STORY)
    check(np.abs(o0[17] - outs[17]).max() > 1e-6, "the relational transfer reaches later answers")
    # <eos> restores the reset state: a story after <eos> answers as from a fresh session
    o_e, s_e = ref.forward(hp, p, STORY + [1] + STORY)
    check(np.allclose(o_e[len(STORY) + 1 + 11], outs[11], rtol=0, atol=0), "<eos> resets (answer)")
    check(np.array_equal(ref.state_vector(hp, s_e), ref.state_vector(hp, st)), "<eos> resets (state)")
    hp_n = tiny(reset_on_eos=False)
    o_n, _ = ref.forward(hp_n, p, STORY + [1] + STORY)
    check(np.abs(o_n[len(STORY) + 1 + 11] - outs[11]).max() > 1e-6, "without reset_on_eos the state carries")
    # words past P are read but not encoded
    long = [4, 5, 6, 7, 8, 9, 10, 2, 4, 3]
    longer = [4, 5, 6, 7, 8, 9, 11, 2, 4, 3]
    a, _ = ref.forward(hp, p, long)
    b, _ = ref.forward(hp, p, longer)
    check(np.array_equal(a[9], b[9]), "a word beyond the first P does not count")


def test_word_mode():
    hp = tiny(input_mode=1, reset_on_eos=False)
    p = lively(hp, 2)
    toks = [4, 5, 2, 6, 3, 7, 1, 8]
    outs, st = ref.forward(hp, p, toks)
    check(all(o is not None and o.shape == (12,) for o in outs), "word mode: logits after every token")
    o2, _ = ref.forward(hp, p, [9] + toks[1:])
    check(np.abs(o2[-1] - outs[-1]).max() > 1e-6, "word mode: the first token reaches the last output")


def test_numpy_vs_torch():
    if tref is None:
        print("skip: PyTorch missing (python3-torch); numpy-vs-torch checks not run")
        return
    cases = [(tiny(), 1, STORY + [1] + STORY[:12]), (tiny(input_mode=1, reset_on_eos=False), 2, STORY[:10]),
             (ref.default_hparams(vocab_size=20), 3, [4, 5, 6, 7, 4, 8, 9, 7, 10, 5, 13, 12, 4, 7, 11, 13])]
    for hp, seed, toks in cases:
        p = lively(hp, seed)
        n_out, n_st = ref.forward(hp, p, toks)
        with torch.no_grad():
            t_out, t_mi, t_mr = tref.forward(hp, tref.to_torch(p), toks)
        same = all((a is None) == (b is None) for a, b in zip(n_out, t_out))
        check(same, f"outputs at the same positions (mode {hp['input_mode']})")
        err = max((np.abs(a - b.numpy()).max() for a, b in zip(n_out, t_out) if a is not None), default=0)
        check(err < 1e-10, f"numpy vs torch outputs, mode {hp['input_mode']} d {hp['memory_size']}: {err:.2e}")
        check(np.abs(n_st["Mi"] - t_mi.numpy()).max() < 1e-10, "numpy vs torch item memory")
        check(np.abs(n_st["Mr"] - t_mr.numpy()).max() < 1e-10, "numpy vs torch relational memory")


def test_gradients():
    if tref is None:
        print("skip: PyTorch missing; gradient checks not run")
        return
    for hp, toks in ((tiny(), STORY), (tiny(input_mode=1, reset_on_eos=False), STORY[:8])):
        p = lively(hp, 5)
        outs, _ = ref.forward(hp, p, toks)
        n = sum(o is not None for o in outs)
        targets = list(np.random.default_rng(6).integers(0, hp["vocab_size"], size=n))
        _, g = tref.gradients(hp, p, toks, targets)

        def loss(pp):
            o, _ = ref.forward(hp, pp, toks)
            z = np.array([x for x in o if x is not None])
            m = z.max(1, keepdims=True)
            return float((np.log(np.exp(z - m).sum(1)) + m[:, 0] - z[np.arange(len(z)), targets]).sum())
        rng = np.random.default_rng(7)
        for name, shape in ref.tensor_list(hp):
            check(np.abs(g[name]).max() > 0,
                  f"gradient reaches {name} (mode {hp['input_mode']})")
            for _ in range(2):
                idx = tuple(rng.integers(0, s) for s in shape)
                pp = {k: v.copy() for k, v in p.items()}
                h = 1e-6
                pp[name][idx] += h
                up = loss(pp)
                pp[name][idx] -= 2 * h
                fd = (up - loss(pp)) / (2 * h)
                check(abs(fd - g[name][idx]) < 1e-6 + 1e-5 * abs(fd),
                      f"gradient {name}{idx}: autograd {g[name][idx]:.8g} vs finite difference {fd:.8g}")


def test_file_roundtrip():
    hp = tiny()
    p = lively(hp, 8)
    vocab = ["<pad>", "<eos>", ".", "?"] + [f"w{i}" for i in range(8)]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.gguf")
        ref.write_model(path, hp, vocab, p, name="tiny-stm")
        hp2, vocab2, p2 = ref.read_model(path)
        check(hp2["input_mode"] == 0 and hp2["reset_on_eos"] is True and vocab2 == vocab, "keys read back")
        check(all(np.array_equal(p2[n], p[n].astype(np.float32)) for n, _ in ref.tensor_list(hp)),
              "tensors read back (as float32)")
        try:
            import xxhash  # noqa: F401
            from fwm_reference import read_gguf
            meta, _ = read_gguf(path)
            fp = meta["fwm.fingerprint"][1]
            check(fp == ref.fingerprint(hp2, vocab, meta["fwm.checksum"][1]), "fingerprint recomputes")
            hp3 = dict(hp2)
            hp3["question_end_token_id"] = 4
            check(fp != ref.fingerprint(hp3, vocab, meta["fwm.checksum"][1]), "fingerprint covers the keys")
            with open(path, "r+b") as f:
                f.seek(-4, 2)
                f.write(b"\x01\x02\x03\x04")
            try:
                ref.read_model(path)
                check(False, "a damaged tensor is refused")
            except Exception as e:  # FormatError
                check("checksum" in str(e), "a damaged tensor fails the checksum")
        except ImportError:
            print("skip: python3-xxhash missing; checksum checks not run")


def main():
    for t in (test_counts, test_header_matches, test_sentence_semantics, test_word_mode,
              test_numpy_vs_torch, test_gradients, test_file_roundtrip):
        t()
    print(f"{checks} checks, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
