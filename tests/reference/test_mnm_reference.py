#!/usr/bin/python3
"""test_mnm_reference.py - checks of the MNM baseline's two references against each other and the spec.

What it checks: the tensor list matches model_format/mnm/mnm_hparams.h (compiled with the system C
compiler when there is one) and the documented counts; the numpy and PyTorch forwards agree (logits,
final state, meta terms) at tiny and at the paper's sizes, one lane and several; the memory changes
at every step and stays put when the rate is forced to zero; later outputs depend on earlier tokens
through the memory alone (a memoryless controller, no read-out feedback); the training objective
agrees between the two and its gradients reach every trained tensor and change with the
meta-objective's coefficient; a written model file reads back identically.
Run: /usr/bin/python3 tests/reference/test_mnm_reference.py   (exit 0 on success, 1 on a failure, 77
(skipped) without numpy; PyTorch parts are skipped with a message when python3-torch is missing).
"""

import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("test_mnm_reference: numpy is not available: skipped")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mnm_reference as ref  # noqa: E402

try:
    import torch  # noqa: F401
    import mnm_torch as tref
except ImportError:
    tref = None

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
failures = []
checks = 0


def check(cond, what, verbose=os.environ.get("MNM_TEST_VERBOSE")):
    global checks
    checks += 1
    if verbose:
        print("ok " if cond else "", what)
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def tiny(**kw):
    base = dict(vocab_size=11, embedding_length=6, hidden_size=7, head_count=2, key_length=5,
                value_length=4, memory_hidden=6, memory_layers=3, output_length=8, forget_bias=0.5)
    base.update(kw)
    return ref.default_hparams(**base)


def test_counts():
    hp = ref.default_hparams()
    c = ref.counts(hp)
    check(c["trained"] == 1098845, f"trained parameters {c['trained']}")
    check(c["fixed_memory"] == 30000, f"fixed memory {c['fixed_memory']}")
    check(c["state_floats"] == 30612, f"state floats {c['state_floats']}")
    check(len(ref.tensor_list(hp)) == 17, "tensor count")
    f = ref.flops_per_token(hp)
    check(2.5e6 < f["inference"] < 3.2e6, f"inference FLOPs {f['inference']}")


def test_header_matches():
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        print("skip: no C compiler for the header check")
        return
    src = r"""
#include "mnm/mnm_hparams.h"
int main(int argc, char **argv) {
    fwm_mnm_hparams hp;
    (void)argv;
#define D_(f, k, kind, def, lo, hi) hp.f = def;
    FWM_MNM_HPARAM_LIST(D_)
#undef D_
    if (argc > 1) { hp.memory_layers = 1; hp.head_count = 2; hp.key_length = 7; hp.value_length = 5; }
#define K_(f, k, kind, def, lo, hi) printf("key %s %s\n", #f, k);
    FWM_MNM_HPARAM_LIST(K_)
#undef K_
    for (size_t i = 0; i < fwm__mnm_tensor_count(&hp); i++) {
        char name[48]; uint64_t r, c;
        fwm__mnm_tensor_at(&hp, i, name, &r, &c);
        printf("%s %llu %llu %d\n", name, (unsigned long long)r, (unsigned long long)c,
               (int)fwm__mnm_tensor_trained(&hp, i));
    }
    printf("state %llu\n", (unsigned long long)fwm__mnm_hparams_state_floats(&hp));
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
                            (True, ref.default_hparams(memory_layers=1, head_count=2, key_length=7,
                                                       value_length=5))):
            out = subprocess.run([exe] + (["x"] if variant else []), capture_output=True,
                                 text=True).stdout.splitlines()
            keys = [ln.split()[1:] for ln in out if ln.startswith("key ")]
            check(keys == [[f, k] for f, k, _, _ in ref.HPARAMS], "hparam keys and order match the header")
            tl = [ln.split() for ln in out if not ln.startswith(("key ", "state "))]
            want = [[n, str(s[0]), str(s[1] if len(s) > 1 else 1), str(int(ref.is_trained(n)))]
                    for n, s in ref.tensor_list(hp)]
            check(tl == want, f"tensor list matches the header (variant {variant})")
            st = [ln for ln in out if ln.startswith("state ")]
            check(st == [f"state {ref.counts(hp)['state_floats']}"], "state floats match the header")


def test_numpy_vs_torch():
    if tref is None:
        print("skip: PyTorch missing (python3-torch); numpy-vs-torch checks not run")
        return
    for hp, T, B, seed in ((tiny(), 30, 3, 1), (tiny(memory_layers=1), 12, 2, 2),
                           (tiny(memory_layers=4, head_count=1), 12, 2, 3),
                           (ref.default_hparams(), 12, 2, 4)):
        rng = np.random.default_rng(seed)
        p = ref.init_params(hp, rng)
        toks = rng.integers(0, hp["vocab_size"], size=(T, B))
        with torch.no_grad():
            tl, ts, tm = tref.forward(hp, tref.to_torch(p), toks)
        for b in range(B):
            nl, ns, nm = ref.forward(hp, p, toks[:, b])
            scale = max(1.0, np.abs(nl).max())
            err = np.abs(nl - tl[:, b].numpy()).max() / scale
            check(err < 1e-10, f"logits numpy vs torch (Lm {hp['memory_layers']}, lane {b}): {err:.2e}")
            tsv = np.concatenate([ts["h"][b].numpy(), ts["c"][b].numpy(), ts["r"][b].numpy()] +
                                 [m[b].numpy().reshape(-1) for m in ts["M"]])
            err = np.abs(ref.state_vector(hp, ns) - tsv).max()
            check(err < 1e-10, f"final state numpy vs torch: {err:.2e}")
            err = np.abs(nm - tm[:, b].numpy()).max()
            check(err < 1e-12, f"meta terms numpy vs torch: {err:.2e}")


def test_memory_evolves():
    hp = tiny()
    rng = np.random.default_rng(5)
    p = ref.init_params(hp, rng)
    state = ref.reset_state(hp, p)
    for t, tok in enumerate(rng.integers(0, hp["vocab_size"], size=20)):
        _, new, aux = ref.step(hp, p, state, int(tok))
        moved = max(np.abs(a - b).max() for a, b in zip(new["M"], state["M"]))
        check(moved > 1e-6, f"step {t}: the memory changed ({moved:.2e})")
        check(0.0 < aux["beta"] < 1.0, "beta in (0, 1)")
        state = new
    check(np.abs(state["r"]).max() > 0, "the read-out is non-zero")
    # a rate forced to zero leaves the memory at its initial value
    p0 = dict(p, **{"mnm.rate.bias": np.array([-1e4])})
    _, s0, _ = ref.forward(hp, p0, rng.integers(0, hp["vocab_size"], size=10))
    for l, m in enumerate(s0["M"]):
        check(np.array_equal(m, p[f"mnm.memory.{l}.init"]), f"beta = 0: M^{l + 1} unchanged")
    # the sign of the update: a one-layer memory whose targets are the values themselves
    # (W_q = I, b_q = 0) makes the write a delta rule, which lowers the stored pair's error
    hp1 = tiny(head_count=1, memory_layers=1)
    p1 = ref.init_params(hp1, np.random.default_rng(6))
    p1["mnm.target.weight"] = np.eye(hp1["value_length"])
    p1["mnm.target.bias"][:] = 0.0
    st = ref.reset_state(hp1, p1)
    for tok in (3, 4, 5):
        _, st2, aux = ref.step(hp1, p1, st, tok)
        before = np.mean((ref.memory_forward(st["M"], aux["kw"])[-1] - aux["vw"]) ** 2)
        check(0 <= aux["meta"] < before, f"the write lowers the pair's error ({before:.3e} -> {aux['meta']:.3e})")
        st = st2


def test_depends_on_earlier_tokens_through_memory():
    """With the controller made memoryless (W_hh = 0, forget gate shut) and no read-out feedback
    into it (the r columns of W_ih zero), only the memory M carries the past: changing the first
    token must change the last logits, and must not once the rate is forced to zero."""
    hp = tiny(forget_bias=-1e4)
    rng = np.random.default_rng(7)
    p = ref.init_params(hp, rng)
    p["lstm.weight_hh"][:] = 0.0
    p["lstm.weight_ih"][:, hp["embedding_length"]:] = 0.0
    # make the read-out matter: scale it up in the output projection
    p["mnm.out.weight"][:, hp["hidden_size"]:] *= 10.0
    seq = list(rng.integers(2, hp["vocab_size"], size=12))
    a, b = [2] + seq, [5] + seq
    la, _, _ = ref.forward(hp, p, a)
    lb, _, _ = ref.forward(hp, p, b)
    diff = np.abs(la[-1] - lb[-1]).max()
    check(diff > 1e-8, f"last logits depend on the first token through the memory ({diff:.2e})")
    p0 = dict(p, **{"mnm.rate.bias": np.array([-1e4])})
    la0, _, _ = ref.forward(hp, p0, a)
    lb0, _, _ = ref.forward(hp, p0, b)
    check(np.array_equal(la0[-1], lb0[-1]), "no memory writes: the first token is forgotten")
    # and with the full model, through everything
    p2 = ref.init_params(hp := tiny(), np.random.default_rng(8))
    la, _, _ = ref.forward(hp, p2, a)
    lb, _, _ = ref.forward(hp, p2, b)
    check(np.abs(la[-1] - lb[-1]).max() > 1e-8, "full model: last logits depend on the first token")


def test_objective_and_gradients():
    if tref is None:
        print("skip: PyTorch missing; objective and gradient checks not run")
        return
    hp = tiny()
    rng = np.random.default_rng(9)
    p = ref.init_params(hp, rng)
    T, B = 16, 2
    toks = rng.integers(1, hp["vocab_size"], size=(T, B))
    toks[-3:, 1] = hp["padding_token_id"]  # padding at the end of lane 1
    tgts = np.roll(toks, -1, axis=0)
    mask = (tgts != hp["padding_token_id"]) & (np.arange(T)[:, None] % 3 == 0)
    total, task, meta, grads = tref.gradients(hp, p, toks, tgts, mask, meta_weight=2.0)
    # the numpy objective over all lanes, normalised as the spec says
    logps, metas = [], []
    for b in range(B):
        logits, _, m = ref.forward(hp, p, toks[:, b])
        lp = logits - logits.max(1, keepdims=True)
        lp = lp - np.log(np.exp(lp).sum(1, keepdims=True))
        logps += list(lp[np.arange(T), tgts[:, b]][mask[:, b]])
        metas += list(m[toks[:, b] != hp["padding_token_id"]])
    n_task = -np.mean(logps)
    n_meta = np.mean(metas)
    check(abs(task - n_task) < 1e-10, f"task loss numpy vs torch {task} {n_task}")
    check(abs(meta - n_meta) < 1e-12, f"meta loss numpy vs torch {meta} {n_meta}")
    check(abs(total - (n_task + 2.0 * n_meta)) < 1e-10, "total = task + 2 meta")
    # one lane through ref.loss agrees with a one-lane torch objective
    t1, k1, m1 = ref.loss(hp, p, toks[:, 1], tgts[:, 1], mask[:, 1], meta_weight=2.0)
    tt1, _, _, _ = tref.gradients(hp, p, toks[:, 1:2], tgts[:, 1:2], mask[:, 1:2], meta_weight=2.0)
    check(abs(t1 - tt1) < 1e-10, "one-lane objective numpy vs torch")
    for name, _ in ref.tensor_list(hp):
        if ref.is_trained(name):
            check(np.abs(grads[name]).max() > 0, f"gradient reaches {name}")
    # the meta term's coefficient changes the gradient of the write path
    _, _, _, g0 = tref.gradients(hp, p, toks, tgts, mask, meta_weight=0.0)
    d = np.abs(g0["mnm.target.weight"] - grads["mnm.target.weight"]).max()
    check(d > 1e-8, f"meta coefficient changes the target net's gradient ({d:.2e})")
    # finite differences on a few entries of several tensors (central, h = 1e-6)
    rng2 = np.random.default_rng(10)
    worst = 0.0
    for name in ("lstm.weight_ih", "mnm.interact.weight", "mnm.rate.bias", "mnm.target.weight",
                 "mnm.out.weight", "token_embd.weight"):
        for _ in range(3):
            idx = tuple(rng2.integers(0, s) for s in p[name].shape)
            vals = []
            for sgn in (1, -1):
                q = {k: v.copy() for k, v in p.items()}
                q[name][idx] += sgn * 1e-6
                P = tref.to_torch(q)
                with torch.no_grad():
                    vals.append(float(tref.objective(hp, P, toks, tgts, mask, 2.0)[0]))
            fd = (vals[0] - vals[1]) / 2e-6
            an = grads[name][idx]
            worst = max(worst, abs(fd - an) / max(1e-5, abs(fd), abs(an)))
    check(worst < 1e-5, f"autograd vs finite differences: worst relative error {worst:.2e}")
    # from a carried, detached state: the gradient differs from the reset-state one, and matches
    # finite differences of the numpy objective run over prefix + window with the prefix fixed
    prefix = rng.integers(1, hp["vocab_size"], size=(9, B))
    _, _, _, gp = tref.gradients(hp, p, toks, tgts, mask, meta_weight=2.0, prefix=prefix)
    check(np.abs(gp["mnm.interact.weight"] - grads["mnm.interact.weight"]).max() > 1e-8,
          "a carried state changes the gradient")
    name, idx = "mnm.target.weight", (1, 2)

    carried = [ref.forward(hp, p, prefix[:, b])[1] for b in range(B)]  # prefix, weights fixed
    vals = []
    for sgn in (1, -1):
        q = {k: v.copy() for k, v in p.items()}
        q[name][idx] += sgn * 1e-6
        lps, ms = [], []
        for b in range(B):
            logits, _, m = ref.forward(hp, q, toks[:, b], state=carried[b])
            lp = logits - logits.max(1, keepdims=True)
            lp = lp - np.log(np.exp(lp).sum(1, keepdims=True))
            lps += list(lp[np.arange(T), tgts[:, b]][mask[:, b]])
            ms += list(m[toks[:, b] != hp["padding_token_id"]])
        vals.append(-np.mean(lps) + 2.0 * np.mean(ms))
    fd = (vals[0] - vals[1]) / 2e-6
    rel = abs(fd - gp[name][idx]) / max(1e-5, abs(fd))
    check(rel < 1e-5, f"carried-state gradient vs numpy finite differences: {rel:.2e}")
    # the CLI writes the same gradients for one lane
    with tempfile.TemporaryDirectory() as d:
        vocab = ["<pad>", "<eos>"] + [f"w{k}" for k in range(hp["vocab_size"] - 2)]
        ref.write_model(os.path.join(d, "m.gguf"), hp, vocab, p)
        p32 = {k: v.astype(np.float32).astype(np.float64) for k, v in p.items()}
        _, _, _, g1 = tref.gradients(hp, p32, toks[:, :1], tgts[:, :1], mask[:, :1], meta_weight=2.0)
        csv = lambda a: ",".join(str(int(x)) for x in a)  # noqa: E731
        r = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                         "mnm_torch.py"), "grads", os.path.join(d, "m.gguf"),
                            "--tokens", csv(toks[:, 0]), "--targets", csv(tgts[:, 0]),
                            "--mask", csv(mask[:, 0]), "--meta-weight", "2", "--out",
                            os.path.join(d, "g.bin")], capture_output=True, text=True)
        check(r.returncode == 0, "mnm_torch.py grads runs: " + r.stderr[-1000:])
        if r.returncode == 0:
            flat = np.fromfile(os.path.join(d, "g.bin"), dtype="<f8")
            want = np.concatenate([g1[n].reshape(-1) for n, _ in ref.tensor_list(hp)])
            check(flat.shape == want.shape and np.abs(flat - want).max() < 1e-12,
                  "CLI gradients equal the library's")


def test_file_round_trip():
    try:
        import xxhash  # noqa: F401
    except ImportError:
        print("skip: python3-xxhash missing; file round trip not run")
        return
    hp = tiny()
    p = ref.init_params(hp, np.random.default_rng(11))
    vocab = ["<pad>", "<eos>"] + [f"w{k}" for k in range(hp["vocab_size"] - 2)]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.gguf")
        ref.write_model(path, hp, vocab, p, name="tiny mnm")
        hp2, vocab2, p2 = ref.read_model(path)
    check(hp2 == {k: (np.float32(v) if k == "forget_bias" else v) for k, v in hp.items()},
          "hyperparameters read back")
    check(vocab2 == vocab, "vocabulary read back")
    err = max(np.abs(p2[k] - p[k].astype(np.float32)).max() for k in p)
    check(err == 0, "tensors read back as their F32 values")


def main():
    for t in (test_counts, test_header_matches, test_numpy_vs_torch, test_memory_evolves,
              test_depends_on_earlier_tokens_through_memory, test_objective_and_gradients,
              test_file_round_trip):
        t()
    print(f"{checks - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
