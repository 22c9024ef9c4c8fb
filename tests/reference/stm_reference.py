#!/usr/bin/python3
"""stm_reference.py - an independent numpy reference of the STM (architecture "stm").

What it is for: computing, in float64, exactly what docs/MODEL.md's section "The STM
(self-attentive associative memory)" defines: a session's outputs over a token stream from the reset
state (answer logits at question ends in sentence mode, next-word logits at every word in word
mode) and its final state; golden values for the runtime and the trainer come from here. It mirrors
the tensor list of model_format/stm/stm_hparams.h, draws the spec's initialisation, counts
parameters, state and FLOPs, and reads and writes `stm` model files (arch_file.py, the references'
plain GGUF writer and reader), with the checksum and the FWMFP2 fingerprint.

What it is not for: speed, or sharing anything with the C code. stm_torch.py is a second
implementation of the same forward in PyTorch, for autograd gradients; test_stm_reference.py checks
the two against each other.

CLI:
  stm_reference.py outputs MODEL --tokens 3,17,5 --out FILE   float32 rows of V, one per output
  stm_reference.py info MODEL                                 hyperparameters, tensors, counts
  stm_reference.py counts [KEY=VALUE ...]                     parameter, state and FLOP counts
"""

import argparse
import sys

import numpy as np

import arch_file

# ---- hyperparameters and the tensor list (model_format/stm/stm_hparams.h) ------------------------

U32, F32, BOOL, STR, U64 = 4, 6, 7, 8, 10
SENTENCE, WORD = 0, 1
# field -> (GGUF key, GGUF type id, default), in the list's order (the fingerprint's order).
HPARAMS = [
    ("vocab_size", "stm.vocab_size", U32, 180),
    ("input_mode", "stm.input_mode", U32, SENTENCE),
    ("embedding_length", "stm.embedding_length", U32, 64),
    ("sentence_length", "stm.sentence.max_length", U32, 16),
    ("memory_size", "stm.memory.size", U32, 90),
    ("query_count", "stm.memory.query_count", U32, 20),
    ("relation_length", "stm.relation_length", U32, 96),
    ("answer_hidden", "stm.answer.hidden_size", U32, 80),
    ("sam_norm_eps", "stm.sam.layer_norm_epsilon", F32, 1e-5),
    ("answer_norm_eps", "stm.answer.layer_norm_epsilon", F32, 1e-12),
    ("reset_on_eos", "stm.reset_on_eos", BOOL, True),
    ("statement_end_token_id", "stm.statement_end_token_id", U32, 7),
    ("question_end_token_id", "stm.question_end_token_id", U32, 13),
    ("padding_token_id", "tokenizer.ggml.padding_token_id", U32, 0),
    ("eos_token_id", "tokenizer.ggml.eos_token_id", U32, 1),
]

# The catbAbI comparison size (word mode, about the FWM's 684k parameters at V = 180).
CATBABI_WORD = dict(input_mode=WORD, embedding_length=256, memory_size=56, query_count=12,
                    relation_length=96, reset_on_eos=False)


def default_hparams(**override):
    hp = {field: default for field, _, _, default in HPARAMS}
    for k, v in override.items():
        if k not in hp:
            raise KeyError(f"unknown hyperparameter {k}")
        hp[k] = v
    return hp


def _f32(x):
    return float(np.float32(x))


def tensor_list(hp):
    """[(name, row-major shape)] in file order; vectors have shape (n,)."""
    V, E, P = hp["vocab_size"], hp["embedding_length"], hp["sentence_length"]
    d, nq, nr, Ha = hp["memory_size"], hp["query_count"], hp["relation_length"], hp["answer_hidden"]
    sentence = hp["input_mode"] == SENTENCE
    out = [("token_embd.weight", (V, E))]
    if sentence:
        out.append(("stm.position.weight", (P, E)))
    out += [
        ("stm.write.weight", (d, E)), ("stm.write.bias", (d,)),
        ("stm.value.weight", (d, E)), ("stm.value.bias", (d,)),
        ("stm.select.weight", (nq, E)), ("stm.select.bias", (nq,)),
        ("stm.gate.input", (2 * d, d)), ("stm.gate.memory", (2 * d, d)), ("stm.gate.bias", (2 * d,)),
        ("stm.sam.weight", (3 * nq, d)), ("stm.sam.bias", (3 * nq,)),
        ("stm.sam.norm.weight", (3 * nq, d)), ("stm.sam.norm.bias", (3 * nq, d)),
        ("stm.alpha", (3,)),
        ("stm.transfer.weight", (d, nq * d)), ("stm.transfer.bias", (d,)),
        ("stm.item.init", (d, d)), ("stm.relation.init", (nq * d, d)),
    ]
    if sentence:
        mlps = [("stm.answer.entity", d)] + [(f"stm.answer.role.{k}", nq) for k in range(3)]
        for prefix, o in mlps:
            out += [(prefix + ".weight1", (Ha, E)), (prefix + ".bias1", (Ha,)),
                    (prefix + ".weight2", (o, Ha)), (prefix + ".bias2", (o,))]
        out += [("stm.answer.norm", (6, d)), ("output.weight", (V, d))]
    else:
        out += [("stm.distill.weight", (nr, d * d)), ("stm.distill.bias", (nr,)),
                ("output.weight", (V, nq * nr)), ("output.bias", (V,))]
    return out


def counts(hp):
    """Parameter counts by part and the session state's size."""
    tl = dict(tensor_list(hp))
    n = {k: int(np.prod(s)) for k, s in tl.items()}
    part = {
        "embedding": n["token_embd.weight"] + n.get("stm.position.weight", 0),
        "input_maps": sum(n[k] for k in n if k.startswith(("stm.write", "stm.value", "stm.select"))),
        "gates": sum(n[k] for k in n if k.startswith("stm.gate")),
        "sam": sum(n[k] for k in n if k.startswith("stm.sam")),
        "alpha": n["stm.alpha"],
        "transfer": n["stm.transfer.weight"] + n["stm.transfer.bias"],
        "initial_memories": n["stm.item.init"] + n["stm.relation.init"],
    }
    if hp["input_mode"] == SENTENCE:
        part["answer"] = sum(n[k] for k in n if k.startswith("stm.answer")) + n["output.weight"]
    else:
        part["distill"] = n["stm.distill.weight"] + n["stm.distill.bias"]
        part["output"] = n["output.weight"] + n["output.bias"]
    d, nq = hp["memory_size"], hp["query_count"]
    state_floats = d * d * (1 + nq)
    state_words = hp["sentence_length"] + 2 if hp["input_mode"] == SENTENCE else 0
    return {"parts": part, "total": sum(n.values()), "state_floats": state_floats,
            "state_words": state_words, "state_bytes": 4 * (state_floats + state_words)}


def flops(hp):
    """FLOPs of one step (a multiply-add counts 2; tanh, sigmoid, exp count 1 each), by part, and of
    one answer (sentence mode) or one word's output (word mode)."""
    E, d, nq, nr, Ha, V = (hp[k] for k in ("embedding_length", "memory_size", "query_count",
                                           "relation_length", "answer_hidden", "vocab_size"))
    step = {
        "input_maps": 2 * E * (2 * d + nq) + 3 * nq,
        "gates": 2 * 2 * d * d + 2 * (2 * d) * d * d + 4 * d * d + 2 * d * d,  # Wg a; Ug tanh(Mi) rows
        "item_write": 6 * d * d,                       # tanh(a a^T), two products, sum
        "relational_read": 2 * nq * d * d + 2 * nq * d,
        "sam_input": 3 * d * d,
        "sam_project": 2 * 3 * nq * d * d + 8 * 3 * nq * d,  # Wqkv A^T, layer norm
        "opa": 2 * nq * nq * d + 2 * nq * nq * d * d,  # tanh(q*k), outer products summed
        "transfer": 2 * nq * d * d * d + 3 * d * d,    # G1 over d rows, scaled add
        "relational_write": 2 * nq * d * d,
    }
    if hp["input_mode"] == SENTENCE:
        out = {"encode": 2 * hp["sentence_length"] * E,
               "answer_mlps": 2 * (E * Ha + Ha * d) + 3 * 2 * (E * Ha + Ha * nq),
               "answer_reads": 3 * (2 * nq * d * d + 2 * nq * d + 8 * d),
               "answer_output": 2 * V * d}
    else:
        out = {"distill": 2 * nr * nq * d * d, "output": 2 * V * nq * nr}
    return step, out


def init_params(hp, rng):
    """The spec's initialisation (docs/MODEL.md, STM section)."""
    V, E, P = hp["vocab_size"], hp["embedding_length"], hp["sentence_length"]
    d, nq, nr, Ha = hp["memory_size"], hp["query_count"], hp["relation_length"], hp["answer_hidden"]
    u = lambda shape, b: rng.uniform(-b, b, size=shape)  # noqa: E731
    p = {}
    for name, shape in tensor_list(hp):
        if name == "token_embd.weight":
            p[name] = u(shape, 0.1)
        elif name == "stm.position.weight":
            p[name] = np.full(shape, 1.0 / P)
        elif name.startswith(("stm.write", "stm.value", "stm.select")):
            p[name] = u(shape, 1 / np.sqrt(E))
        elif name.startswith(("stm.gate", "stm.sam.weight", "stm.sam.bias")):
            p[name] = u(shape, 1 / np.sqrt(d))
        elif name == "stm.sam.norm.weight":
            p[name] = np.ones(shape)
        elif name == "stm.sam.norm.bias":
            p[name] = np.zeros(shape)
        elif name == "stm.alpha":
            # sentence mode: the authors' bAbI value alpha1 = 1; word mode: all three learned from 0
            p[name] = np.array([1.0 if hp["input_mode"] == SENTENCE else 0.0, 0.0, 0.0])
        elif name.startswith("stm.transfer"):
            p[name] = u(shape, 1 / np.sqrt(nq * d))
        elif name == "stm.item.init":
            p[name] = u(shape, 1 / np.sqrt(2 * d))
        elif name == "stm.relation.init":
            p[name] = u(shape, 1 / np.sqrt(2 * d + nq))
        elif name.startswith("stm.answer.") and "weight" in name:
            p[name] = u(shape, np.sqrt(6.0 / (shape[0] + shape[1])))  # Xavier uniform
        elif name.startswith("stm.answer.") and "bias" in name:
            p[name] = np.zeros(shape)
        elif name == "stm.answer.norm":
            p[name] = np.zeros(shape)
            p[name][0::2] = 1.0
        elif name == "output.weight" and hp["input_mode"] == SENTENCE:
            p[name] = u(shape, np.sqrt(6.0 / (d + V)))
        elif name.startswith("stm.distill"):
            p[name] = u(shape, 1 / d)
        else:  # word mode output.weight, output.bias
            p[name] = u(shape, 1 / np.sqrt(nq * nr))
    p["stm.gate.bias"][d:] += 1.0  # the forget half starts at +1
    return p


# ---- the forward ---------------------------------------------------------------------------------

def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _layer_norm(x, gain, bias, eps):
    mu = x.mean()
    var = ((x - mu) ** 2).mean()
    return (x - mu) / np.sqrt(var + eps) * gain + bias


def reset_state(hp, p):
    d, nq = hp["memory_size"], hp["query_count"]
    return {"Mi": p["stm.item.init"].copy(), "Mr": p["stm.relation.init"].reshape(nq, d, d).copy(),
            "buffer": [], "answer_slot": False}


def encode(hp, p, words):
    """The sentence vector: sum over the first P words of Emb[w_k] * Pos[k] (elementwise)."""
    s = np.zeros(hp["embedding_length"])
    for k, w in enumerate(words[: hp["sentence_length"]]):
        s += p["token_embd.weight"][w] * p["stm.position.weight"][k]
    return s


def core_step(hp, p, Mi, Mr, x, trace=None):
    """One STM step on input x (E): returns the new (Mi, Mr)."""
    d, nq = hp["memory_size"], hp["query_count"]
    a1, a2, a3 = p["stm.alpha"]
    a = p["stm.write.weight"] @ x + p["stm.write.bias"]
    c = p["stm.value.weight"] @ x + p["stm.value.bias"]
    zl = p["stm.select.weight"] @ x + p["stm.select.bias"]
    z = np.exp(zl - zl.max())
    z /= z.sum()
    # item write with gates (one gate pair per entry; the input part is shared by every row)
    G = (p["stm.gate.input"] @ a)[None, :] + np.tanh(Mi) @ p["stm.gate.memory"].T + p["stm.gate.bias"]
    gi, gf = _sigmoid(G[:, :d]), _sigmoid(G[:, d:])
    Mi1 = gi * np.tanh(np.outer(a, a)) + gf * Mi
    # relational read from the previous Mr
    vr = np.einsum("s,e,sef->f", z, c, Mr)
    # SAM
    A = Mi1 + a2 * np.outer(vr, c)
    Pm = p["stm.sam.weight"] @ A.T + p["stm.sam.bias"][:, None]           # [3 nq, d]
    Pm = _layer_norm(Pm, p["stm.sam.norm.weight"], p["stm.sam.norm.bias"], hp["sam_norm_eps"])
    q, k, v = Pm[:nq], Pm[nq:2 * nq], Pm[2 * nq:]
    S = np.einsum("sjf,jg->sfg", np.tanh(q[:, None, :] * k[None, :, :]), v)  # [nq, d, d]
    # relational transfer into the item memory, then the relational write
    T = S.reshape(nq * d, d).T @ p["stm.transfer.weight"].T + p["stm.transfer.bias"]
    Mi_new = Mi1 + a3 * T
    Mr_new = a1 * Mr + S
    if trace is not None:
        trace.append({"a": a, "c": c, "z": z, "vr": vr, "S": S})
    return Mi_new, Mr_new


def answer(hp, p, qvec, Mr):
    """The answer module (sentence mode): V logits for a question vector qvec (E)."""
    def mlp(prefix):
        h = np.tanh(p[prefix + ".weight1"] @ qvec + p[prefix + ".bias1"])
        return np.tanh(p[prefix + ".weight2"] @ h + p[prefix + ".bias2"])
    e = mlp("stm.answer.entity")
    nrm = p["stm.answer.norm"]
    total = np.zeros(hp["memory_size"])
    for k in range(3):
        r = mlp(f"stm.answer.role.{k}")
        e = _layer_norm(np.einsum("e,r,ref->f", e, r, Mr), nrm[2 * k], nrm[2 * k + 1],
                        hp["answer_norm_eps"])
        total += e
    return p["output.weight"] @ total


def distill(hp, p, Mr):
    """The word-mode output: V logits from the relational memory (the paper's eq. 14)."""
    nq = hp["query_count"]
    r = Mr.reshape(nq, -1) @ p["stm.distill.weight"].T + p["stm.distill.bias"]   # [nq, nr]
    return p["output.weight"] @ r.reshape(-1) + p["output.bias"]


def forward(hp, p, tokens, state=None):
    """Read tokens from state (the reset state by default). Returns (outputs, state): outputs[i] is
    the V logits after token i, or None where the token produces none (sentence mode: every token
    but a question's end)."""
    st = reset_state(hp, p) if state is None else {
        "Mi": state["Mi"].copy(), "Mr": state["Mr"].copy(), "buffer": list(state["buffer"]),
        "answer_slot": state["answer_slot"]}
    outs = []
    for t in tokens:
        t = int(t)
        if not 0 <= t < hp["vocab_size"]:
            raise ValueError(f"token {t} out of range")
        if hp["reset_on_eos"] and t == hp["eos_token_id"]:
            st = reset_state(hp, p)
            if hp["input_mode"] == SENTENCE:
                outs.append(None)
                continue
        if hp["input_mode"] == WORD:
            st["Mi"], st["Mr"] = core_step(hp, p, st["Mi"], st["Mr"], p["token_embd.weight"][t])
            outs.append(distill(hp, p, st["Mr"]))
            continue
        if st["answer_slot"]:
            st["answer_slot"] = False
            outs.append(None)
            continue
        if len(st["buffer"]) < hp["sentence_length"]:
            st["buffer"].append(t)
        if t == hp["statement_end_token_id"]:
            st["Mi"], st["Mr"] = core_step(hp, p, st["Mi"], st["Mr"], encode(hp, p, st["buffer"]))
            st["buffer"] = []
            outs.append(None)
        elif t == hp["question_end_token_id"]:
            outs.append(answer(hp, p, encode(hp, p, st["buffer"]), st["Mr"]))
            st["buffer"] = []
            st["answer_slot"] = True
        else:
            outs.append(None)
    return outs, st


def state_vector(hp, st):
    """The state's floats in blob order: Mi row-major, then Mr (query, row, column)."""
    return np.concatenate([st["Mi"].reshape(-1), st["Mr"].reshape(-1)])


# ---- files (arch_file.py) ------------------------------------------------------------------------

def checksum(hp, stored):
    """XXH64 (seed 0) of the stored tensor bytes in file order."""
    return arch_file.checksum(tensor_list(hp), stored)


def fingerprint_bytes(hp, vocab, tensor_checksum):
    """What the FWMFP2 fingerprint of a `stm` model hashes (the architecture contract)."""
    return arch_file.fingerprint_bytes("stm", HPARAMS, hp, vocab, tensor_checksum)


def fingerprint(hp, vocab, tensor_checksum):
    return arch_file.fingerprint("stm", HPARAMS, hp, vocab, tensor_checksum)


def write_model(path, hp, vocab, params, name=None, prime_tokens=None, types="f32"):
    """Write an `stm` model file (tensors in file order, checksum and fingerprint included when
    python3-xxhash is present). types: "f32", "f16" or "bf16" for every tensor, or a dict of tensor
    name to type (others F32)."""
    arch_file.write(path, "stm", HPARAMS, tensor_list(hp), hp, vocab, params, name=name,
                    prime_tokens=prime_tokens, types=types)


def read_model(path, verify_checksum=True):
    """(hp, vocab, params float64) of an `stm` model file; F32, F16 and BF16 tensors."""
    return arch_file.read(path, "stm", HPARAMS, tensor_list, verify_checksum)[:3]


# ---- CLI -----------------------------------------------------------------------------------------

def _parse_set(items):
    hp = {}
    for s in items:
        k, v = s.split("=", 1)
        hp[k] = float(v) if k.endswith("_eps") else (v.lower() in ("1", "true") if k == "reset_on_eos" else int(v))
    return hp


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("outputs")
    a.add_argument("model")
    a.add_argument("--tokens", required=True)
    a.add_argument("--out", required=True)
    a = sub.add_parser("info")
    a.add_argument("model")
    a = sub.add_parser("counts")
    a.add_argument("set", nargs="*", help="KEY=VALUE overrides of the defaults")
    args = ap.parse_args(argv)
    if args.cmd == "outputs":
        hp, _, params = read_model(args.model)
        toks = [int(t) for t in args.tokens.split(",") if t != ""]
        outs, _ = forward(hp, params, toks)
        rows = [o for o in outs if o is not None]
        np.asarray(rows, dtype="<f4").reshape(len(rows), hp["vocab_size"]).tofile(args.out)
    elif args.cmd == "info":
        hp, vocab, params = read_model(args.model)
        print(hp)
        for tname, shape in tensor_list(hp):
            print(f"{tname:28s} {shape}")
        print(counts(hp))
    else:
        hp = default_hparams(**_parse_set(args.set))
        print(counts(hp))
        step, out = flops(hp)
        print("step", sum(step.values()), step)
        print("output", sum(out.values()), out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
