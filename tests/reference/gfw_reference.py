#!/usr/bin/python3
"""gfw_reference.py - an independent numpy reference of the Gated Fast Weights model ("gfw").

What it is for: computing, in float64, exactly what docs/MODEL.md's section "The Gated Fast Weights
model" defines: the logits after every token of a stream from the reset (zero) state or from a
given state, and the final session state; golden values for the runtime and the trainer come from
here. It also mirrors the tensor list of model_format/gfw/gfw_hparams.h (names, shapes, order),
draws the spec's initialisation, counts parameters, state floats and FLOPs per token, and reads and
writes `gfw` model files (arch_file.py, the references' plain GGUF writer and reader),
with the checksum and the FWMFP2 fingerprint of the architecture contract.

What it is not for: speed, or sharing anything with the C code. It was written from the spec alone;
keep it that way. gfw_torch.py is a second implementation of the same forward in PyTorch, for
autograd gradients; test_gfw_reference.py checks the two against each other.

CLI:
  gfw_reference.py logits MODEL --tokens 3,7,5 [--primed] --out FILE   float32 rows of V per token
  gfw_reference.py info MODEL                                          hyperparameters, tensors, counts
  gfw_reference.py counts [KEY=VALUE ...]                              parameter, state, FLOP counts
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import arch_file  # noqa: E402

ARCHITECTURE = "gfw"

# ---- hyperparameters and the tensor list (model_format/gfw/gfw_hparams.h) --------------------------

U32, F32, BOOL, STR, ARR, U64 = 4, 6, 7, 8, 9, 10
# field -> (GGUF key, GGUF type, default), in the list's order (the fingerprint's order).
HPARAMS = [
    ("vocab_size", "gfw.vocab_size", U32, 15),
    ("embedding_length", "gfw.embedding_length", U32, 15),
    ("fast_hidden", "gfw.fast.hidden_size", U32, 40),
    ("slow_hidden", "gfw.slow.hidden_size", U32, 40),
    ("slow_inner", "gfw.slow.inner_size", U32, 100),
    ("layer_norm_epsilon", "gfw.layer_norm_epsilon", F32, 1e-5),
    ("padding_token_id", "tokenizer.ggml.padding_token_id", U32, 0),
    ("eos_token_id", "tokenizer.ggml.eos_token_id", U32, 14),
]


def default_hparams(**override):
    hp = {field: default for field, _, _, default in HPARAMS}
    for k, v in override.items():
        if k not in hp:
            raise KeyError(f"unknown hyperparameter {k}")
        hp[k] = v
    # the file stores epsilon as f32; compute with the value a reader sees
    hp["layer_norm_epsilon"] = float(np.float32(hp["layer_norm_epsilon"]))
    return hp


def sizes(hp):
    """The derived sizes: columns of F1 and F2, the two update lengths, the slow net's output."""
    m, E, N = hp["fast_hidden"], hp["embedding_length"], hp["slow_hidden"]
    c1, c2 = m + E + 1, m + 1
    u1, u2 = 2 * (m + c1), 2 * (m + c2)
    return {"f1_cols": c1, "f2_cols": c2, "u1": u1, "u2": u2, "slow_out": N + u1 + u2}


def tensor_list(hp):
    """[(name, row-major shape)] in file order; vectors have shape (n,)."""
    V, E = hp["vocab_size"], hp["embedding_length"]
    m, N, P = hp["fast_hidden"], hp["slow_hidden"], hp["slow_inner"]
    O = sizes(hp)["slow_out"]
    return [
        ("token_embd.weight", (V, E)),
        ("gfw.slow.0.weight", (P, N + E)),
        ("gfw.slow.0.bias", (P,)),
        ("gfw.slow.1.weight", (O, P)),
        ("gfw.slow.1.bias", (O,)),
        ("output.weight", (V, m)),
        ("output.bias", (V,)),
    ]


def counts(hp):
    """Parameter and state counts (floats)."""
    m, N = hp["fast_hidden"], hp["slow_hidden"]
    s = sizes(hp)
    fast = m * (s["f1_cols"] + s["f2_cols"])
    return {"parameters": sum(int(np.prod(sh)) for _, sh in tensor_list(hp)),
            "fast_floats": fast, "state_floats": m + N + fast}


def flops_per_token(hp):
    """Floating-point operations per token (a multiply-add counts 2), by part. Elementwise
    nonlinearities count 1 each; layer norm counts 5 per element. The training estimate is
    3 x inference (the backward pass of every product costs about twice its forward)."""
    V, E = hp["vocab_size"], hp["embedding_length"]
    m, N, P = hp["fast_hidden"], hp["slow_hidden"], hp["slow_inner"]
    s = sizes(hp)
    fast = m * (s["f1_cols"] + s["f2_cols"])
    part = {
        "fast_net": 2 * fast + 2 * m + 2 * 5 * m,
        "slow_net": 2 * P * (N + E) + 2 * P + 2 * s["slow_out"] * P + s["slow_out"],
        "update": s["u1"] + s["u2"] + 6 * fast,  # tanh/sigmoid of the vectors; H, T, T*(H-F)+F
        "output": 2 * V * m + V,
    }
    inference = sum(part.values())
    return {"parts": part, "inference": inference, "training": 3 * inference}


# ---- initialisation (docs/MODEL.md) ---------------------------------------------------------------------

def init_params(hp, rng):
    """The spec's initialisation: every matrix (the embedding included) Glorot-uniform,
    U(+-sqrt(6 / (rows + cols))); every bias zero."""
    p = {}
    for name, shape in tensor_list(hp):
        if len(shape) == 1:
            p[name] = np.zeros(shape)
        else:
            bound = np.sqrt(6.0 / (shape[0] + shape[1]))
            p[name] = rng.uniform(-bound, bound, size=shape)
    return p


# ---- the model ----------------------------------------------------------------------------------------------

def _sigmoid(x):
    return np.exp(-np.logaddexp(0.0, -x))


def layer_norm(v, eps):
    mu = v.mean()
    var = ((v - mu) ** 2).mean()
    return (v - mu) / np.sqrt(var + eps)


def reset_state(hp):
    m, N = hp["fast_hidden"], hp["slow_hidden"]
    s = sizes(hp)
    return {"hF": np.zeros(m), "hS": np.zeros(N),
            "F1": np.zeros((m, s["f1_cols"])), "F2": np.zeros((m, s["f2_cols"]))}


def _gate(F, upd, rows, cols):
    """F <- T * H + (1 - T) * F with H = tanh(alpha) tanh(beta)^T, T = sig(gamma) sig(delta)^T."""
    alpha, beta = upd[:rows], upd[rows:rows + cols]
    gamma, delta = upd[rows + cols:2 * rows + cols], upd[2 * rows + cols:]
    Hm = np.outer(np.tanh(alpha), np.tanh(beta))
    Tm = np.outer(_sigmoid(gamma), _sigmoid(delta))
    return Tm * Hm + (1.0 - Tm) * F


def step(hp, P, state, token):
    """One token: (logits [V], new state, aux with the step's intermediate values)."""
    m, N = hp["fast_hidden"], hp["slow_hidden"]
    eps = hp["layer_norm_epsilon"]
    s = sizes(hp)
    e = P["token_embd.weight"][token]
    # fast net, with the fast matrices generated at the previous step
    a = layer_norm(np.tanh(state["F1"] @ np.concatenate([state["hF"], e, [1.0]])), eps)
    hF = layer_norm(np.tanh(state["F2"] @ np.concatenate([a, [1.0]])), eps)
    logits = P["output.weight"] @ hF + P["output.bias"]
    # slow net
    sv = np.tanh(P["gfw.slow.0.weight"] @ np.concatenate([state["hS"], e]) + P["gfw.slow.0.bias"])
    o = P["gfw.slow.1.weight"] @ sv + P["gfw.slow.1.bias"]
    hS = np.tanh(o[:N])
    d1 = o[N:N + s["u1"]]
    d2 = o[N + s["u1"]:]
    # the fast matrices for the next step
    F1 = _gate(state["F1"], d1, m, s["f1_cols"])
    F2 = _gate(state["F2"], d2, m, s["f2_cols"])
    return logits, {"hF": hF, "hS": hS, "F1": F1, "F2": F2}, {"a": a, "o": o}


def forward(hp, params, tokens, state=None):
    """Logits [T, V] after every token and the final state; from the reset state unless given."""
    P = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    if state is None:
        state = reset_state(hp)
    out = []
    for tok in tokens:
        logits, state, _ = step(hp, P, state, int(tok))
        out.append(logits)
    return np.array(out).reshape(len(out), hp["vocab_size"]), state


def primed_state(hp, params, prime_tokens=None):
    """The session start: the prime tokens (default: the eos token) read from the zero state."""
    if prime_tokens is None:
        prime_tokens = [hp["eos_token_id"]]
    _, st = forward(hp, params, prime_tokens)
    return st


def state_vector(hp, state):
    """A session's state as one flat vector: h_F, h_S, F1, F2 (row-major)."""
    return np.concatenate([state["hF"], state["hS"], state["F1"].reshape(-1),
                           state["F2"].reshape(-1)])


# ---- files (arch_file.py) -------------------------------------------------------------------------------

def checksum(hp, stored):
    """XXH64 (seed 0) of the stored tensor bytes in file order."""
    return arch_file.checksum(tensor_list(hp), stored)


def fingerprint_bytes(hp, vocab, tensor_checksum):
    """What the FWMFP2 fingerprint of a `gfw` model hashes (the architecture contract)."""
    return arch_file.fingerprint_bytes(ARCHITECTURE, HPARAMS, hp, vocab, tensor_checksum)


def fingerprint(hp, vocab, tensor_checksum):
    return arch_file.fingerprint(ARCHITECTURE, HPARAMS, hp, vocab, tensor_checksum)


def write_model(path, hp, vocab, params, name=None, prime_tokens=None):
    """Write an F32 `gfw` model file (checksum and fingerprint included when python3-xxhash is
    present; fwm.session.prime_tokens only when given)."""
    arch_file.write(path, ARCHITECTURE, HPARAMS, tensor_list(hp), hp, vocab, params, name=name,
                    prime_tokens=prime_tokens)


def read_model(path, verify_checksum=True):
    """(hp, vocab, params float64, meta) of a `gfw` model file; F32, F16 and BF16 tensors."""
    return arch_file.read(path, ARCHITECTURE, HPARAMS, tensor_list, verify_checksum)


# ---- CLI ------------------------------------------------------------------------------------------------

def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("logits")
    a.add_argument("model")
    a.add_argument("--tokens", required=True)
    a.add_argument("--primed", action="store_true", help="start from the session start (prime tokens)")
    a.add_argument("--out", required=True)
    a = sub.add_parser("info")
    a.add_argument("model")
    a = sub.add_parser("counts")
    a.add_argument("set", nargs="*", help="KEY=VALUE overrides of the defaults")
    args = ap.parse_args(argv)
    if args.cmd == "logits":
        hp, _, params, meta = read_model(args.model)
        toks = [int(t) for t in args.tokens.split(",") if t != ""]
        st = None
        if args.primed:
            prime = meta["fwm.session.prime_tokens"][1] if "fwm.session.prime_tokens" in meta else None
            st = primed_state(hp, params, prime)
        logits, _ = forward(hp, params, toks, st)
        logits.astype("<f4").tofile(args.out)
    elif args.cmd == "info":
        hp, vocab, params, _ = read_model(args.model)
        print(hp)
        for tname, shape in tensor_list(hp):
            print(f"{tname:20s} {shape}")
        print(counts(hp))
    else:
        hp = default_hparams(**{k: (float(v) if k == "layer_norm_epsilon" else int(v))
                                for k, v in (s.split("=", 1) for s in args.set)})
        print(counts(hp))
        print(flops_per_token(hp))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
