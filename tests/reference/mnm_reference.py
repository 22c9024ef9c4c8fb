#!/usr/bin/python3
"""mnm_reference.py - an independent numpy reference of the MNM baseline (architecture "mnm").

What it is for: computing, in float64, exactly what docs/MODEL.md's section "The Metalearned Neural
Memory baseline" (the plastic MNM-p) defines: the logits after every token of a stream from the
reset state, the final session state, and the meta-objective's per-step term; golden values for the
runtime and the trainer come from here. It also mirrors the tensor list of
model_format/mnm/mnm_hparams.h (names, shapes, order, which tensors are trained), draws the spec's
initialisation, counts parameters, state floats and FLOPs per token, and reads and writes `mnm`
model files (arch_file.py, the references' plain GGUF writer and reader).

What it is not for: speed, or sharing anything with the C code. It was written from the spec alone;
keep it that way. mnm_torch.py is a second implementation of the same forward in PyTorch, for
autograd gradients; test_mnm_reference.py checks the two against each other.

CLI:
  mnm_reference.py logits MODEL --tokens 3,17,5 --out FILE   little-endian float32, one row of V per token
  mnm_reference.py info MODEL                                hyperparameters, tensors, counts
  mnm_reference.py counts [KEY=VALUE ...]                    parameter, state and FLOP counts
"""

import argparse
import sys

import numpy as np

import arch_file

# ---- hyperparameters and the tensor list (model_format/mnm/mnm_hparams.h) ------------------------

# field -> (GGUF key, GGUF type id, default), in the list's order (the fingerprint's order).
U32, F32, BOOL, STR, U64 = 4, 6, 7, 8, 10
HPARAMS = [
    ("vocab_size", "mnm.vocab_size", U32, 180),
    ("embedding_length", "mnm.embedding_length", U32, 256),
    ("hidden_size", "mnm.hidden_size", U32, 256),
    ("head_count", "mnm.head_count", U32, 3),
    ("key_length", "mnm.memory.key_length", U32, 100),
    ("value_length", "mnm.memory.value_length", U32, 100),
    ("memory_hidden", "mnm.memory.hidden_size", U32, 100),
    ("memory_layers", "mnm.memory.block_count", U32, 3),
    ("output_length", "mnm.output_length", U32, 256),
    ("forget_bias", "mnm.forget_bias", F32, 0.0),
    ("padding_token_id", "tokenizer.ggml.padding_token_id", U32, 0),
    ("eos_token_id", "tokenizer.ggml.eos_token_id", U32, 1),
]

DEFAULT_META_WEIGHT = 1.0


def default_hparams(**override):
    hp = {field: default for field, _, _, default in HPARAMS}
    for k, v in override.items():
        if k not in hp:
            raise KeyError(f"unknown hyperparameter {k}")
        hp[k] = v
    return hp


def memory_shape(hp, l):
    """(rows, cols) of the memory net's weight matrix l (0-based): M^(l+1) in the spec."""
    rows = hp["value_length"] if l + 1 == hp["memory_layers"] else hp["memory_hidden"]
    cols = hp["key_length"] if l == 0 else hp["memory_hidden"]
    return rows, cols


def layer_widths(hp):
    """D_l, the output width of each memory layer (the rows of M^l), in layer order."""
    return [memory_shape(hp, l)[0] for l in range(hp["memory_layers"])]


def tensor_list(hp):
    """[(name, row-major shape)] in file order; vectors have shape (n,)."""
    V, E, H = hp["vocab_size"], hp["embedding_length"], hp["hidden_size"]
    Nh, dk, dv = hp["head_count"], hp["key_length"], hp["value_length"]
    D, Lm, do = hp["memory_hidden"], hp["memory_layers"], hp["output_length"]
    n_u = Nh * (2 * dk + dv) + dk
    n_t = (Lm - 1) * D + dv
    out = [
        ("token_embd.weight", (V, E)),
        ("lstm.weight_ih", (4 * H, E + dv)),
        ("lstm.weight_hh", (4 * H, H)),
        ("lstm.bias", (4 * H,)),
        ("mnm.interact.weight", (n_u, H)),
        ("mnm.interact.bias", (n_u,)),
        ("mnm.rate.weight", (1, dk)),
        ("mnm.rate.bias", (1,)),
        ("mnm.target.weight", (n_t, dv)),
        ("mnm.target.bias", (n_t,)),
    ]
    out += [(f"mnm.memory.{l}.init", memory_shape(hp, l)) for l in range(Lm)]
    out += [
        ("mnm.out.weight", (do, H + dv)),
        ("mnm.out.bias", (do,)),
        ("output.weight", (V, do)),
        ("output.bias", (V,)),
    ]
    return out


def is_trained(name):
    """Every tensor is trained except the fixed initial memory."""
    return not (name.startswith("mnm.memory.") and name.endswith(".init"))


def counts(hp):
    """Parameter and state counts (floats)."""
    tl = tensor_list(hp)
    trained = sum(int(np.prod(s)) for n, s in tl if is_trained(n))
    total = sum(int(np.prod(s)) for n, s in tl)
    memory = sum(r * c for r, c in (memory_shape(hp, l) for l in range(hp["memory_layers"])))
    state = 2 * hp["hidden_size"] + hp["value_length"] + memory
    return {"trained": trained, "fixed_memory": total - trained, "file": total,
            "memory_floats": memory, "state_floats": state}


def flops_per_token(hp):
    """Floating-point operations per token (a multiply-add counts 2), by part.

    inference: what the runtime does per step. meta: the extra pass of the write keys through the
    updated memory that only training needs. Elementwise nonlinearities count 1 each (tanh, sigmoid
    and exp are several in practice). The training estimate is 3 x (inference + meta): the backward
    pass of every matrix product costs twice its forward.
    """
    V, E, H = hp["vocab_size"], hp["embedding_length"], hp["hidden_size"]
    Nh, dk, dv = hp["head_count"], hp["key_length"], hp["value_length"]
    do = hp["output_length"]
    mem = counts(hp)["memory_floats"]
    hidden = sum(layer_widths(hp)[:-1])
    n_u = Nh * (2 * dk + dv) + dk
    n_t = (hp["memory_layers"] - 1) * hp["memory_hidden"] + dv
    part = {
        "controller": 2 * 4 * H * (E + dv + H) + 4 * H + 10 * H,
        "interaction": 2 * n_u * H + n_u + 2 * dk + 2,
        "write_forward": Nh * (2 * mem + hidden),        # the write keys through M_(t-1)
        "targets": Nh * 2 * n_t * dv,                     # W_q v + b_q
        "update": Nh * 2 * mem + 2 * mem + Nh * n_t,      # sum of outer products, scale, subtract
        "read": Nh * (2 * mem + hidden) + Nh * dv,        # the read keys through M_t, mean
        "read_out": 2 * do * (H + dv),
        "output": 2 * V * do,
    }
    inference = sum(part.values())
    meta = Nh * (2 * mem + hidden) + 3 * Nh * dv
    return {"parts": part, "inference": inference, "meta": meta,
            "training": 3 * (inference + meta)}


# ---- initialisation (docs/MODEL.md) ------------------------------------------------------------------

def init_params(hp, rng):
    """The spec's initialisation: Emb standard normal; every matrix W of a layer y = W x (+ b), and its
    bias, uniform in +-1/sqrt(cols of W) (PyTorch's default for LSTM cells and linear layers; the
    LSTM's fan-in is H); the initial memory drawn the same way, once, and never trained."""
    p = {}
    H = hp["hidden_size"]
    for name, shape in tensor_list(hp):
        if name == "token_embd.weight":
            p[name] = rng.standard_normal(shape)
            continue
        if name.startswith("lstm."):
            bound = 1.0 / np.sqrt(H)
        else:
            wname = name[:-len(".bias")] + ".weight" if name.endswith(".bias") else name
            cols = dict(tensor_list(hp))[wname][1]
            bound = 1.0 / np.sqrt(cols)
        p[name] = rng.uniform(-bound, bound, size=shape)
    return p


# ---- the model -----------------------------------------------------------------------------------------

def _sigmoid(x):
    return np.exp(-np.logaddexp(0.0, -x))  # 1 / (1 + e^-x) without overflow


def reset_state(hp, params):
    """The state of a new session: h, c and r zero, the memory at its fixed initial value."""
    H, dv = hp["hidden_size"], hp["value_length"]
    return {
        "h": np.zeros(H), "c": np.zeros(H), "r": np.zeros(dv),
        "M": [np.array(params[f"mnm.memory.{l}.init"], dtype=np.float64)
              for l in range(hp["memory_layers"])],
    }


def memory_forward(M, keys):
    """Push keys [n, d_k] through the memory net; returns [z^0, ..., z^Lm], each [n, D_l]."""
    z = [keys]
    for l, Ml in enumerate(M):
        a = z[-1] @ Ml.T
        z.append(a if l + 1 == len(M) else np.tanh(a))
    return z


def step(hp, params, state, token):
    """One token. Returns (logits [V], new state, aux) where aux holds the step's intermediate values
    (interaction vectors, beta) and `meta`, the meta-objective's term for this step."""
    H, Nh = hp["hidden_size"], hp["head_count"]
    dk, dv, Lm = hp["key_length"], hp["value_length"], hp["memory_layers"]
    P = params
    # controller
    e = P["token_embd.weight"][token]
    g = P["lstm.weight_ih"] @ np.concatenate([e, state["r"]]) + P["lstm.weight_hh"] @ state["h"] \
        + P["lstm.bias"]
    gi, gf, gz, go = g[:H], g[H:2 * H], g[2 * H:3 * H], g[3 * H:]
    c = _sigmoid(gf + hp["forget_bias"]) * state["c"] + _sigmoid(gi) * np.tanh(gz)
    h = _sigmoid(go) * np.tanh(c)
    # interaction vectors: Nh read keys, Nh write keys, Nh target values, the rate vector
    u = np.tanh(P["mnm.interact.weight"] @ h + P["mnm.interact.bias"])
    kr = u[:Nh * dk].reshape(Nh, dk)
    kw = u[Nh * dk:2 * Nh * dk].reshape(Nh, dk)
    vw = u[2 * Nh * dk:2 * Nh * dk + Nh * dv].reshape(Nh, dv)
    bprime = u[2 * Nh * dk + Nh * dv:]
    beta = _sigmoid(P["mnm.rate.weight"][0] @ bprime + P["mnm.rate.bias"][0])
    # write: the learned local update, every layer from the same forward pass through M_(t-1)
    M = state["M"]
    z = memory_forward(M, kw)
    targets = vw @ P["mnm.target.weight"].T + P["mnm.target.bias"]  # [Nh, (Lm-1) D + dv]
    widths = layer_widths(hp)
    M_new = []
    off = 0
    for l in range(Lm):
        t = targets[:, off:off + widths[l]]
        off += widths[l]
        delta = (z[l + 1] - t).T @ z[l]  # sum over heads of outer products, [D_l, D_(l-1)]
        M_new.append(M[l] - beta * (2.0 / (Nh * widths[l])) * delta)
    # read from the updated memory
    r = memory_forward(M_new, kr)[-1].mean(axis=0)
    # output
    y = P["mnm.out.weight"] @ np.concatenate([h, r]) + P["mnm.out.bias"]
    logits = P["output.weight"] @ y + P["output.bias"]
    # the meta-objective's term (training only): the write keys through the updated memory
    meta = float(np.mean((memory_forward(M_new, kw)[-1] - vw) ** 2))
    aux = {"kr": kr, "kw": kw, "vw": vw, "beta": beta, "meta": meta, "y": y}
    return logits, {"h": h, "c": c, "r": r, "M": M_new}, aux


def forward(hp, params, tokens, state=None):
    """Logits [T, V] after every token, the final state, and the meta terms [T]; from the reset
    state unless `state` is given."""
    params = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    if state is None:
        state = reset_state(hp, params)
    out, metas = [], []
    for tok in tokens:
        logits, state, aux = step(hp, params, state, int(tok))
        out.append(logits)
        metas.append(aux["meta"])
    return np.array(out).reshape(len(out), hp["vocab_size"]), state, np.array(metas)


def state_vector(hp, state):
    """A session's state as one flat vector in the order h, c, r, M^1..M^Lm (row-major)."""
    return np.concatenate([state["h"], state["c"], state["r"]] + [m.reshape(-1) for m in state["M"]])


def loss(hp, params, tokens, targets, loss_mask, meta_weight=DEFAULT_META_WEIGHT, state=None):
    """The training objective of one lane's window: mean cross entropy over the positions where
    loss_mask is true, plus meta_weight times the mean meta term over the positions whose input is
    not padding. Returns (total, task, meta)."""
    logits, _, metas = forward(hp, params, tokens, state)
    m = logits.max(axis=1, keepdims=True)
    logp = logits - m - np.log(np.exp(logits - m).sum(axis=1, keepdims=True))
    mask = np.asarray(loss_mask, dtype=bool)
    task = -np.mean(logp[np.arange(len(tokens)), np.asarray(targets)][mask]) if mask.any() else 0.0
    real = np.asarray(tokens) != hp["padding_token_id"]
    meta = float(np.mean(metas[real])) if real.any() else 0.0
    return task + meta_weight * meta, task, meta


# ---- files (arch_file.py) ------------------------------------------------------------------------------

def checksum(hp, stored):
    """XXH64 (seed 0) of the stored tensor bytes in file order."""
    return arch_file.checksum(tensor_list(hp), stored)


def fingerprint_bytes(hp, vocab, tensor_checksum):
    """What the FWMFP2 fingerprint of an `mnm` model hashes (the architecture contract)."""
    return arch_file.fingerprint_bytes("mnm", HPARAMS, hp, vocab, tensor_checksum)


def fingerprint(hp, vocab, tensor_checksum):
    return arch_file.fingerprint("mnm", HPARAMS, hp, vocab, tensor_checksum)


def write_model(path, hp, vocab, params, name=None, types="f32", prime_tokens=None):
    """Write an `mnm` model file (tensors in file order, checksum and fingerprint included when
    python3-xxhash is present). types: "f32", "f16" or "bf16" for every tensor, or a dict of tensor
    name -> type (F32 for the others). prime_tokens: None leaves fwm.session.prime_tokens out, else a
    list of ids (possibly empty)."""
    arch_file.write(path, "mnm", HPARAMS, tensor_list(hp), hp, vocab, params, name=name,
                    prime_tokens=prime_tokens, types=types)


def read_model(path, verify_checksum=True):
    """(hp, vocab, params float64) of an `mnm` model file; F32, F16 and BF16 tensors."""
    return arch_file.read(path, "mnm", HPARAMS, tensor_list, verify_checksum)[:3]


# ---- CLI -----------------------------------------------------------------------------------------------

def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("logits")
    a.add_argument("model")
    a.add_argument("--tokens", required=True)
    a.add_argument("--out", required=True)
    a = sub.add_parser("info")
    a.add_argument("model")
    a = sub.add_parser("counts")
    a.add_argument("set", nargs="*", help="KEY=VALUE overrides of the defaults")
    args = ap.parse_args(argv)
    if args.cmd == "logits":
        hp, _, params = read_model(args.model)
        toks = [int(t) for t in args.tokens.split(",") if t != ""]
        logits, _, _ = forward(hp, params, toks)
        logits.astype("<f4").tofile(args.out)
    elif args.cmd == "info":
        hp, vocab, params = read_model(args.model)
        print(hp)
        for tname, shape in tensor_list(hp):
            print(f"{tname:24s} {shape} {'trained' if is_trained(tname) else 'fixed'}")
        print(counts(hp))
    else:
        hp = default_hparams(**{k: (float(v) if k == "forget_bias" else int(v))
                                for k, v in (s.split("=", 1) for s in args.set)})
        print(counts(hp))
        print(flops_per_token(hp))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
