#!/usr/bin/python3
"""make_corpus.py [CORPUS_DIR] - write the seed corpus of the fuzz targets (tests/fuzz/README.md).

Deterministic (fixed seeds): rerun after changing it and commit the result. CORPUS_DIR defaults to
corpus/ next to this script; each target's folder there is rewritten (files named regression-*,
inputs that once found a bug, and fuzzed-*, a libFuzzer run's minimized finds, are kept):

  model_load/    small valid model files (F32 / F16 / BF16, both read policies, other layouts and
                 alignments, optional keys present or not) and damaged ones (truncated, bad header,
                 impossible counts and lengths, wrong types, shapes, checksums, bit flips); the
                 same for the LSTM baseline (`lstm-*`, docs/FORMAT.md section 7), the MNM
                 baseline (`mnm-*`) and the Gated Fast Weights model (`gfw-*`).
  state_import/  state blobs for the fixture model of fuzz_fixture.c (valid ones, whose fingerprint
                 this script recomputes from the same hyperparameters, vocabulary and weight
                 formula, and damaged ones), LSTM (version-2) blobs, valid for the LSTM
                 fixture (whose FWMFP2 fingerprint tests/reference/lstm_reference.py computes)
                 and refused by the FWM's, MNM blobs, valid for the MNM fixture (fingerprinted
                 by tests/reference/mnm_reference.py), GFW blobs, valid for the GFW fixture
                 (fingerprinted by tests/reference/gfw_reference.py), and blobs for the STM's
                 fixture (`*-stm-*`, fingerprinted by tests/reference/stm_reference.py).
  tokenize/      texts over the fixture's vocabulary, unknown words, odd bytes and white space.

GGUF and the fwm schema are written here independently of the C writer, from docs/FORMAT.md.
Needs python3-xxhash (Debian: apt-get install python3-xxhash).
"""
import os
import random
import struct
import sys

import xxhash

# ---- GGUF encoding (docs/FORMAT.md section 1) ----------------------------------------------------
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
SCALAR_FORMAT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
                 BOOL: "<B", U64: "<Q", I64: "<q", F64: "<d"}
GGML_F32, GGML_F16, GGML_BF16 = 0, 1, 30


def gguf_string(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gguf_value(t, v):
    if t == STRING:
        return gguf_string(v)
    if t == ARRAY:
        element_type, elements = v
        out = struct.pack("<IQ", element_type, len(elements))
        for e in elements:
            out += gguf_value(element_type, e)
        return out
    return struct.pack(SCALAR_FORMAT[t], v)


def align(n, a):
    return (n + a - 1) // a * a


def gguf_file(kvs, tensors, alignment=32, junk=0, version=3):
    """kvs: [(key, type, value)]; tensors: [(name, gguf_dims, ggml_type, data_bytes)] in file
    order; `junk` bytes of 0xA5 before each tensor's data (then aligned)."""
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for key, t, v in kvs:
        out += gguf_string(key) + struct.pack("<I", t) + gguf_value(t, v)
    offsets, cursor = [], 0
    for _, _, _, data in tensors:
        cursor = align(cursor + junk, alignment)
        offsets.append(cursor)
        cursor += len(data)
    for (name, dims, ggml_type, _), offset in zip(tensors, offsets):
        out += gguf_string(name) + struct.pack("<I", len(dims))
        out += b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", ggml_type, offset)
    out += b"\0" * (align(len(out), alignment) - len(out))
    data_start = len(out)
    for (_, _, _, data), offset in zip(tensors, offsets):
        out += b"\xa5" * (data_start + offset - len(out)) + data
    return out


# ---- the fwm schema (docs/FORMAT.md sections 2-4) ------------------------------------------------
def tensor_list(hp):
    """(name, rows, cols or None for a vector) in FWM_TENSOR_LIST order."""
    V, E, H = hp["V"], hp["E"], hp["H"]
    S, R, T, N = hp["S"], hp["R"], hp["T"], hp["N"]
    return [("token_embd.weight", V, E), ("lstm.weight_ih", 4 * H, E),
            ("lstm.weight_hh", 4 * H, H), ("lstm.bias", 4 * H, None),
            ("fwm.write.weight", S + R + T + 1, H), ("fwm.write.bias", S + R + T + 1, None),
            ("fwm.read.weight", S + N * R, H), ("fwm.read.bias", S + N * R, None),
            ("fwm.out.weight", H, T), ("fwm.out.bias", H, None), ("output.weight", V, H)]


def encode(values, ggml_type):
    if ggml_type == GGML_F32:
        return struct.pack(f"<{len(values)}f", *values)
    if ggml_type == GGML_F16:
        return struct.pack(f"<{len(values)}e", *values)
    return b"".join(struct.pack("<I", v)[2:] for v in
                    struct.unpack(f"<{len(values)}I", struct.pack(f"<{len(values)}f", *values)))


def fingerprint(hp, tokens, checksum):
    b = bytearray(b"FWMFP1")
    for v in (hp["V"], hp["E"], hp["H"], hp["S"], hp["R"], hp["T"], hp["N"], int(hp["residual"]),
              {"always": 0, "token": 1}[hp["policy"]], hp["read_token"]):
        b += struct.pack("<I", v)
    for v in (hp["forget_bias"], hp["beta_bias"], hp["write_scale"], hp["eps"]):
        b += struct.pack("<f", v)
    b += struct.pack("<III", hp["pad"], hp["eos"], hp["V"])
    for t in tokens:
        e = t.encode()
        b += struct.pack("<I", len(e)) + e
    b += struct.pack("<Q", checksum)
    return xxhash.xxh64(bytes(b)).intdigest()


def default_hp(**changes):
    hp = dict(V=8, E=3, H=4, S=2, R=2, T=2, N=1, residual=True, policy="always", read_token=3,
              forget_bias=1.0, beta_bias=1.0, write_scale=0.5, eps=1e-5, pad=0, eos=1)
    hp.update(changes)
    return hp


def vocabulary(n):
    base = ["<pad>", "<eos>", ".", "?", "mary", "went", "kitchen", "where"]
    return (base + [f"w{i}" for i in range(len(base), n)])[:n]


def model(hp=None, tokens=None, values=None, types=None, name=None, alignment=None,
          file_alignment=None, order=None, junk=0, checksum=True, fingerprint_key=True,
          extra=(), change=None, drop=(), tensor_change=None, extra_tensors=(), drop_tensors=()):
    """A model file. values: per-tensor float lists (default: small random); types: per-tensor
    GGML types (default F32); alignment: general.alignment written (None: key absent, 32 used);
    order: tensor indices in file order; change: {key: (type, value)} replacing a key's pair;
    drop: keys left out; tensor_change: {name: (gguf_dims, ggml_type)} written instead;
    extra_tensors: [(name, gguf_dims, ggml_type, data)] added; drop_tensors: names left out."""
    hp = hp or default_hp()
    tokens = tokens if tokens is not None else vocabulary(hp["V"])
    shapes = tensor_list(hp)
    rng = random.Random(hp["V"] * 1000 + hp["H"])
    if values is None:
        values = [[round(rng.uniform(-1, 1), 3) for _ in range(r * (c or 1))] for _, r, c in shapes]
    types = types or [GGML_F32] * len(shapes)
    datas = [encode(v, t) for v, t in zip(values, types)]
    tensors = []
    for (tname, rows, cols), t, data in zip(shapes, types, datas):
        dims, ggml_type = ([cols, rows] if cols is not None else [rows]), t
        if tensor_change and tname in tensor_change:
            dims, ggml_type = tensor_change[tname]
        tensors.append((tname, dims, ggml_type, data))
    sum_ = xxhash.xxh64(b"".join(datas)).intdigest()
    kvs = [("general.architecture", STRING, "fwm")]
    if alignment is not None:
        kvs.append(("general.alignment", U32, alignment))
    if name is not None:
        kvs.append(("general.name", STRING, name))
    kvs += [("fwm.vocab_size", U32, hp["V"]), ("fwm.embedding_length", U32, hp["E"]),
            ("fwm.hidden_size", U32, hp["H"]), ("fwm.memory.s", U32, hp["S"]),
            ("fwm.memory.r", U32, hp["R"]), ("fwm.memory.t", U32, hp["T"]),
            ("fwm.read_count", U32, hp["N"]), ("fwm.residual", BOOL, int(hp["residual"])),
            ("fwm.read_policy", STRING, hp["policy"]), ("fwm.read_token_id", U32, hp["read_token"]),
            ("fwm.forget_bias", F32, hp["forget_bias"]), ("fwm.beta_bias", F32, hp["beta_bias"]),
            ("fwm.write_scale", F32, hp["write_scale"]), ("fwm.layer_norm_eps", F32, hp["eps"]),
            ("tokenizer.ggml.model", STRING, "word"),
            ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
            ("tokenizer.ggml.padding_token_id", U32, hp["pad"]),
            ("tokenizer.ggml.eos_token_id", U32, hp["eos"])]
    if checksum:
        kvs.append(("fwm.checksum", U64, sum_))
    if fingerprint_key:
        kvs.append(("fwm.fingerprint", U64, fingerprint(hp, tokens, sum_)))
    kvs += list(extra)
    if change:
        kvs = [(k, *change[k]) if k in change else (k, t, v) for k, t, v in kvs]
    kvs = [kv for kv in kvs if kv[0] not in drop]
    if order is not None:
        tensors = [tensors[i] for i in order]
    tensors = [t for t in tensors if t[0] not in drop_tensors] + list(extra_tensors)
    return gguf_file(kvs, tensors, file_alignment or alignment or 32, junk)


# ---- the lstm schema (docs/FORMAT.md section 7) -------------------------------------------------
def lstm_tensor_list(hp):
    V, E, H, L = hp["V"], hp["E"], hp["H"], hp["L"]
    out = [("token_embd.weight", V, E)]
    for l in range(L):
        out += [(f"blk.{l}.lstm.weight_ih", 4 * H, E if l == 0 else H),
                (f"blk.{l}.lstm.weight_hh", 4 * H, H), (f"blk.{l}.lstm.bias", 4 * H, None)]
    return out + [("output.weight", V, H), ("output.bias", V, None)]


def lstm_fingerprint(hp, tokens, checksum):
    b = bytearray(b"FWMFP2") + struct.pack("<I", 4) + b"lstm"
    b += struct.pack("<IIIII", hp["V"], hp["E"], hp["H"], hp["L"], int(hp["residual"]))
    b += struct.pack("<f", hp["forget_bias"]) + struct.pack("<III", hp["pad"], hp["eos"], hp["V"])
    for t in tokens:
        e = t.encode()
        b += struct.pack("<I", len(e)) + e
    b += struct.pack("<Q", checksum)
    return xxhash.xxh64(bytes(b)).intdigest()


def lstm_model(L=2, residual=True, V=8, E=3, H=4, types=None, change=None, drop=(), extra=(),
               tensor_change=None, drop_tensors=(), fingerprint_key=True):
    hp = dict(V=V, E=E, H=H, L=L, residual=residual, forget_bias=1.0, pad=0, eos=1)
    tokens = vocabulary(V)
    shapes = lstm_tensor_list(hp)
    rng = random.Random(V * 100 + H * 10 + L)
    values = [[round(rng.uniform(-1, 1), 3) for _ in range(r * (c or 1))] for _, r, c in shapes]
    types = types or [GGML_F32] * len(shapes)
    datas = [encode(v, t) for v, t in zip(values, types)]
    tensors = []
    for (tname, rows, cols), t, data in zip(shapes, types, datas):
        dims, ggml_type = ([cols, rows] if cols is not None else [rows]), t
        if tensor_change and tname in tensor_change:
            dims, ggml_type = tensor_change[tname]
        tensors.append((tname, dims, ggml_type, data))
    sum_ = xxhash.xxh64(b"".join(datas)).intdigest()
    kvs = [("general.architecture", STRING, "lstm"), ("general.alignment", U32, 64),
           ("lstm.vocab_size", U32, V), ("lstm.embedding_length", U32, E), ("lstm.hidden_size", U32, H),
           ("lstm.block_count", U32, L), ("lstm.residual", BOOL, int(residual)),
           ("lstm.forget_bias", F32, 1.0), ("tokenizer.ggml.padding_token_id", U32, 0),
           ("tokenizer.ggml.eos_token_id", U32, 1), ("tokenizer.ggml.model", STRING, "word"),
           ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)), ("fwm.checksum", U64, sum_)]
    if fingerprint_key:
        kvs.append(("fwm.fingerprint", U64, lstm_fingerprint(hp, tokens, sum_)))
    kvs += list(extra)
    if change:
        kvs = [(k, *change[k]) if k in change else (k, t, v) for k, t, v in kvs]
    kvs = [kv for kv in kvs if kv[0] not in drop]
    tensors = [t for t in tensors if t[0] not in drop_tensors]
    return gguf_file(kvs, tensors, 64)


def lstm_corpus():
    files = {}
    base = lstm_model()
    files["lstm-valid-two-layers-residual"] = base
    files["lstm-valid-one-layer"] = lstm_model(L=1, residual=False, V=5, E=2, H=3)
    files["lstm-valid-three-layers-f16-bf16"] = lstm_model(
        L=3, V=6, types=[GGML_F16, GGML_BF16, GGML_F32] * 4,
        extra=[("fwm.session.prime_tokens", ARRAY, (U32, [1, 2]))])
    files["lstm-bad-architecture-mnm"] = lstm_model(change={"general.architecture": (STRING, "mnm")})
    files["lstm-bad-architecture-ntm"] = lstm_model(change={"general.architecture": (STRING, "ntm")})
    files["lstm-bad-block-count-0"] = lstm_model(change={"lstm.block_count": (U32, 0)})
    files["lstm-bad-block-count-3"] = lstm_model(change={"lstm.block_count": (U32, 3)})
    files["lstm-bad-residual-u32"] = lstm_model(change={"lstm.residual": (U32, 1)})
    files["lstm-bad-missing-forget-bias"] = lstm_model(drop=("lstm.forget_bias",))
    files["lstm-bad-shape-layer-1"] = lstm_model(
        tensor_change={"blk.1.lstm.weight_ih": ([3, 16], GGML_F32)})
    files["lstm-bad-missing-output-bias"] = lstm_model(drop_tensors=("output.bias",))
    files["lstm-bad-fingerprint"] = lstm_model(change={"fwm.fingerprint": (U64, 99)})
    for seed in range(2):
        files[f"lstm-bad-bitflips-{seed}"] = flip_bits(base, 10 + seed, 2 + seed)
    return files


# ---- the mnm schema (docs/FORMAT.md) -------------------------------------------------------------
MNM_KEYS = [("V", "mnm.vocab_size"), ("E", "mnm.embedding_length"), ("H", "mnm.hidden_size"),
            ("Nh", "mnm.head_count"), ("dk", "mnm.memory.key_length"), ("dv", "mnm.memory.value_length"),
            ("D", "mnm.memory.hidden_size"), ("Lm", "mnm.memory.block_count"), ("do", "mnm.output_length")]


def mnm_tensor_list(hp):
    V, E, H, Nh, dk, dv, D, Lm, do = (hp[k] for k, _ in MNM_KEYS)
    nu, nt = Nh * (2 * dk + dv) + dk, (Lm - 1) * D + dv
    out = [("token_embd.weight", V, E), ("lstm.weight_ih", 4 * H, E + dv), ("lstm.weight_hh", 4 * H, H),
           ("lstm.bias", 4 * H, None), ("mnm.interact.weight", nu, H), ("mnm.interact.bias", nu, None),
           ("mnm.rate.weight", 1, dk), ("mnm.rate.bias", 1, None), ("mnm.target.weight", nt, dv),
           ("mnm.target.bias", nt, None)]
    for l in range(Lm):
        out.append((f"mnm.memory.{l}.init", dv if l + 1 == Lm else D, dk if l == 0 else D))
    return out + [("mnm.out.weight", do, H + dv), ("mnm.out.bias", do, None), ("output.weight", V, do),
                  ("output.bias", V, None)]


def mnm_fingerprint(hp, tokens, checksum):
    b = bytearray(b"FWMFP2") + struct.pack("<I", 3) + b"mnm"
    b += b"".join(struct.pack("<I", hp[k]) for k, _ in MNM_KEYS)
    b += struct.pack("<f", hp["forget_bias"]) + struct.pack("<III", hp["pad"], hp["eos"], hp["V"])
    for t in tokens:
        e = t.encode()
        b += struct.pack("<I", len(e)) + e
    b += struct.pack("<Q", checksum)
    return xxhash.xxh64(bytes(b)).intdigest()


def mnm_model(Lm=2, Nh=2, V=8, types=None, change=None, drop=(), extra=(), tensor_change=None,
              drop_tensors=()):
    hp = dict(V=V, E=3, H=4, Nh=Nh, dk=3, dv=2, D=3, Lm=Lm, do=3, forget_bias=0.0, pad=0, eos=1)
    tokens = vocabulary(V)
    shapes = mnm_tensor_list(hp)
    rng = random.Random(V * 100 + Nh * 10 + Lm)
    values = [[round(rng.uniform(-1, 1), 3) for _ in range(r * (c or 1))] for _, r, c in shapes]
    types = types or [GGML_F32] * len(shapes)
    datas = [encode(v, t) for v, t in zip(values, types)]
    tensors = []
    for (tname, rows, cols), t, data in zip(shapes, types, datas):
        dims, ggml_type = ([cols, rows] if cols is not None else [rows]), t
        if tensor_change and tname in tensor_change:
            dims, ggml_type = tensor_change[tname]
        tensors.append((tname, dims, ggml_type, data))
    sum_ = xxhash.xxh64(b"".join(datas)).intdigest()
    kvs = [("general.architecture", STRING, "mnm"), ("general.alignment", U32, 64)]
    kvs += [(key, U32, hp[k]) for k, key in MNM_KEYS]
    kvs += [("mnm.forget_bias", F32, 0.0), ("tokenizer.ggml.padding_token_id", U32, 0),
            ("tokenizer.ggml.eos_token_id", U32, 1), ("tokenizer.ggml.model", STRING, "word"),
            ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)), ("fwm.checksum", U64, sum_),
            ("fwm.fingerprint", U64, mnm_fingerprint(hp, tokens, sum_))]
    kvs += list(extra)
    if change:
        kvs = [(k, *change[k]) if k in change else (k, t, v) for k, t, v in kvs]
    kvs = [kv for kv in kvs if kv[0] not in drop]
    tensors = [t for t in tensors if t[0] not in drop_tensors]
    return gguf_file(kvs, tensors, 64)


def mnm_corpus():
    files = {}
    base = mnm_model()
    files["mnm-valid-two-layers-two-heads"] = base
    files["mnm-valid-one-layer-one-head"] = mnm_model(Lm=1, Nh=1, V=5)
    files["mnm-valid-three-layers-f16-bf16"] = mnm_model(
        Lm=3, Nh=3, V=6, types=[GGML_F16, GGML_BF16, GGML_F32] * 6,
        extra=[("fwm.session.prime_tokens", ARRAY, (U32, [1, 2]))])
    files["mnm-bad-block-count-0"] = mnm_model(change={"mnm.memory.block_count": (U32, 0)})
    files["mnm-bad-block-count-3"] = mnm_model(change={"mnm.memory.block_count": (U32, 3)})
    files["mnm-bad-heads-65"] = mnm_model(change={"mnm.head_count": (U32, 65)})
    files["mnm-bad-memory-too-big"] = mnm_model(change={"mnm.memory.hidden_size": (U32, 65536),
                                                        "mnm.memory.block_count": (U32, 16)})
    files["mnm-bad-forget-bias-u32"] = mnm_model(change={"mnm.forget_bias": (U32, 1)})
    files["mnm-bad-missing-key-length"] = mnm_model(drop=("mnm.memory.key_length",))
    files["mnm-bad-shape-memory-1"] = mnm_model(tensor_change={"mnm.memory.1.init": ([2, 3], GGML_F32)})
    files["mnm-bad-missing-initial-memory"] = mnm_model(drop_tensors=("mnm.memory.0.init",))
    files["mnm-bad-fingerprint"] = mnm_model(change={"fwm.fingerprint": (U64, 99)})
    for seed in range(2):
        files[f"mnm-bad-bitflips-{seed}"] = flip_bits(base, 20 + seed, 2 + seed)
    return files


# ---- the gfw schema (model_format/gfw/gfw_hparams.h) -----------------------------------------------
GFW_KEYS = [("V", "gfw.vocab_size"), ("E", "gfw.embedding_length"), ("m", "gfw.fast.hidden_size"),
            ("N", "gfw.slow.hidden_size"), ("P", "gfw.slow.inner_size")]


def gfw_tensor_list(hp):
    V, E, m, N, P = (hp[k] for k, _ in GFW_KEYS)
    out = N + 2 * (m + m + E + 1) + 2 * (m + m + 1)
    return [("token_embd.weight", V, E), ("gfw.slow.0.weight", P, N + E), ("gfw.slow.0.bias", P, None),
            ("gfw.slow.1.weight", out, P), ("gfw.slow.1.bias", out, None), ("output.weight", V, m),
            ("output.bias", V, None)]


def gfw_fingerprint(hp, tokens, checksum):
    b = bytearray(b"FWMFP2") + struct.pack("<I", 3) + b"gfw"
    b += b"".join(struct.pack("<I", hp[k]) for k, _ in GFW_KEYS)
    b += struct.pack("<f", hp["eps"]) + struct.pack("<III", hp["pad"], hp["eos"], hp["V"])
    for t in tokens:
        e = t.encode()
        b += struct.pack("<I", len(e)) + e
    b += struct.pack("<Q", checksum)
    return xxhash.xxh64(bytes(b)).intdigest()


def gfw_model(m=3, V=8, types=None, change=None, drop=(), extra=(), tensor_change=None, drop_tensors=()):
    hp = dict(V=V, E=3, m=m, N=2, P=4, eps=1 / 65536, pad=0, eos=1)
    tokens = vocabulary(V)
    shapes = gfw_tensor_list(hp)
    rng = random.Random(V * 100 + m)
    values = [[round(rng.uniform(-1, 1), 3) for _ in range(r * (c or 1))] for _, r, c in shapes]
    types = types or [GGML_F32] * len(shapes)
    datas = [encode(v, t) for v, t in zip(values, types)]
    tensors = []
    for (tname, rows, cols), t, data in zip(shapes, types, datas):
        dims, ggml_type = ([cols, rows] if cols is not None else [rows]), t
        if tensor_change and tname in tensor_change:
            dims, ggml_type = tensor_change[tname]
        tensors.append((tname, dims, ggml_type, data))
    sum_ = xxhash.xxh64(b"".join(datas)).intdigest()
    kvs = [("general.architecture", STRING, "gfw"), ("general.alignment", U32, 64)]
    kvs += [(key, U32, hp[k]) for k, key in GFW_KEYS]
    kvs += [("gfw.layer_norm_epsilon", F32, hp["eps"]), ("tokenizer.ggml.padding_token_id", U32, 0),
            ("tokenizer.ggml.eos_token_id", U32, 1), ("tokenizer.ggml.model", STRING, "word"),
            ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)), ("fwm.checksum", U64, sum_),
            ("fwm.fingerprint", U64, gfw_fingerprint(hp, tokens, sum_))]
    kvs += list(extra)
    if change:
        kvs = [(k, *change[k]) if k in change else (k, t, v) for k, t, v in kvs]
    kvs = [kv for kv in kvs if kv[0] not in drop]
    tensors = [t for t in tensors if t[0] not in drop_tensors]
    return gguf_file(kvs, tensors, 64)


def gfw_corpus():
    files = {}
    base = gfw_model()
    files["gfw-valid-m3"] = base
    files["gfw-valid-m2-f16-bf16-primed"] = gfw_model(
        m=2, V=5, types=[GGML_F16, GGML_BF16, GGML_F32, GGML_BF16, GGML_F16, GGML_F32, GGML_F16],
        extra=[("fwm.session.prime_tokens", ARRAY, (U32, [1, 2]))])
    files["gfw-bad-fast-hidden-1"] = gfw_model(change={"gfw.fast.hidden_size": (U32, 1)})
    files["gfw-bad-fast-too-big"] = gfw_model(change={"gfw.fast.hidden_size": (U32, 65536)})
    files["gfw-bad-epsilon-0"] = gfw_model(change={"gfw.layer_norm_epsilon": (F32, 0.0)})
    files["gfw-bad-epsilon-u32"] = gfw_model(change={"gfw.layer_norm_epsilon": (U32, 1)})
    files["gfw-bad-missing-slow-inner"] = gfw_model(drop=("gfw.slow.inner_size",))
    files["gfw-bad-shape-slow-1"] = gfw_model(tensor_change={"gfw.slow.1.weight": ([4, 40], GGML_F32)})
    files["gfw-bad-missing-output-bias"] = gfw_model(drop_tensors=("output.bias",))
    files["gfw-bad-fingerprint"] = gfw_model(change={"fwm.fingerprint": (U64, 99)})
    for seed in range(2):
        files[f"gfw-bad-bitflips-{seed}"] = flip_bits(base, 40 + seed, 2 + seed)
    return files


def flip_bits(data, seed, count):
    rng = random.Random(seed)
    b = bytearray(data)
    for _ in range(count):
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def patch(data, offset, fmt, value):
    b = bytearray(data)
    struct.pack_into(fmt, b, offset, value)
    return bytes(b)


def model_load_corpus():
    files = {}
    base = model(name="seed", alignment=64)
    files["valid-f32-align64-checksum"] = base
    files["valid-f16-token-policy-reads3"] = model(
        default_hp(V=6, E=2, H=3, S=3, R=2, T=3, N=3, residual=False, policy="token",
                   write_scale=1 / 3), types=[GGML_F16] * 11, checksum=False,
        fingerprint_key=False)
    files["valid-bf16-reversed-gaps-align8"] = model(
        default_hp(V=5, E=2, H=2, S=1, R=3, T=2), types=[GGML_BF16] * 11, alignment=8,
        order=list(range(10, -1, -1)), junk=13,
        extra=[("general.author", STRING, "fuzz"), ("x.u8", U8, 7), ("x.i8", I8, -7),
               ("x.u16", U16, 7), ("x.i16", I16, -7), ("x.i32", I32, -7), ("x.i64", I64, -7),
               ("x.f64", F64, 0.5), ("x.bools", ARRAY, (BOOL, [0, 1, 1])),
               ("x.strings", ARRAY, (STRING, ["a", ""])), ("x.empty", ARRAY, (U32, []))])
    files["valid-minimal-v2"] = model(default_hp(V=2, E=1, H=1, S=1, R=1, T=1, read_token=1))
    files["valid-mixed-types"] = model(
        types=[GGML_F32, GGML_F16, GGML_BF16] * 3 + [GGML_F16, GGML_F32], name="mixed")
    hp = default_hp()
    inf_values = [[float("nan") if i % 5 == 0 else float("inf") if i % 7 == 0 else 0.5
                   for i in range(r * (c or 1))] for _, r, c in tensor_list(hp)]
    files["valid-nonfinite-weights"] = model(hp, values=inf_values)
    files["valid-prime-three"] = model(extra=[("fwm.session.prime_tokens", ARRAY, (U32, [1, 3, 0]))])
    files["valid-prime-empty"] = model(extra=[("fwm.session.prime_tokens", ARRAY, (U32, []))])
    files["bad-prime-out-of-range"] = model(extra=[("fwm.session.prime_tokens", ARRAY, (U32, [1, 4000]))])
    files["bad-prime-i32"] = model(extra=[("fwm.session.prime_tokens", ARRAY, (I32, [1]))])
    files["valid-read-token-policy-unicode"] = model(
        default_hp(V=4, policy="token", read_token=2),
        tokens=["<pad>", "<eos>", "caf\u00e9", "N,W"])

    # Damaged: container.
    files["bad-empty"] = b""
    files["bad-truncated-3"] = base[:3]
    files["bad-truncated-header"] = base[:20]
    files["bad-truncated-kv"] = base[:200]
    files["bad-truncated-last-byte"] = base[:-1]
    files["bad-magic"] = b"GGML" + base[4:]
    files["bad-version-2"] = patch(base, 4, "<I", 2)
    files["bad-version-big-endian"] = patch(base, 4, ">I", 3)
    files["bad-n-tensors-huge"] = patch(base, 8, "<Q", 1 << 60)
    files["bad-n-kv-huge"] = patch(base, 16, "<Q", 1 << 60)
    files["bad-string-length-huge"] = patch(base, 24 + 8 + len("general.architecture") + 4,
                                            "<Q", 1 << 62)
    files["bad-nested-array"] = model(extra=[("x.nested", ARRAY, (ARRAY, []))])
    files["bad-duplicate-key"] = model(extra=[("fwm.hidden_size", U32, 4)])
    files["bad-alignment-48"] = model(alignment=48, file_alignment=16)
    files["bad-dims-overflow"] = model(tensor_change={"output.weight": ([1 << 32, 1 << 32],
                                                                        GGML_F32)})
    files["bad-tensor-type-q8"] = model(tensor_change={"lstm.bias": ([16], 8)})
    files["bad-bool-2"] = model(change={"fwm.residual": (BOOL, 2)})
    # Damaged: schema.
    files["bad-architecture"] = model(change={"general.architecture": (STRING, "llama")})
    files["bad-missing-hidden-size"] = model(drop=("fwm.hidden_size",))
    files["bad-hidden-size-as-i32"] = model(change={"fwm.hidden_size": (I32, 4)})
    files["bad-vocab-count"] = model(change={"fwm.vocab_size": (U32, 9)})
    files["bad-duplicate-token"] = model(tokens=["<pad>", "<eos>", ".", "?", "a", "b", "a", "c"])
    files["bad-reads-need-s-eq-t"] = model(default_hp(S=2, T=3, N=2))
    files["bad-eps-zero"] = model(change={"fwm.layer_norm_eps": (F32, 0.0)})
    files["bad-read-token-out-of-range"] = model(change={"fwm.read_token_id": (U32, 8)})
    files["bad-memory-too-big"] = model(change={"fwm.memory.s": (U32, 65536),
                                                "fwm.memory.r": (U32, 65536)})
    files["bad-shape"] = model(tensor_change={"fwm.out.weight": ([4, 2], GGML_F32)})
    files["bad-empty-token"] = model(tokens=["<pad>", "<eos>", ".", "?", "", "b", "c", "d"])
    files["bad-tokens-not-array"] = model(change={"tokenizer.ggml.tokens": (STRING, "mary")})
    files["bad-extra-tensor"] = model(extra_tensors=[("extra", [4], GGML_F32, bytes(16))])
    files["bad-missing-tensor"] = model(drop_tensors=("fwm.read.bias",))
    files["bad-tensor-type-f64"] = model(tensor_change={"lstm.bias": ([8], 28)})
    files["bad-checksum"] = model(change={"fwm.checksum": (U64, 12345)})
    files["bad-fingerprint"] = model(change={"fwm.fingerprint": (U64, 12345)})
    for seed in range(4):
        files[f"bad-bitflips-{seed}"] = flip_bits(base, seed, 1 + seed)
    files.update(lstm_corpus())
    files.update(mnm_corpus())
    files.update(gfw_corpus())
    return files


# ---- the fixture of fuzz_fixture.c and its state blobs (runtime/fwm/fwm_state.c) --------------------
FIXTURE_TOKENS = ["<pad>", "<eos>", ".", "?", "mary", "john", "went", "to", "the", "kitchen",
                  "garden", "where", "is", "n,w", "s,e", "mr.", "...", "a", "a.", "?.",
                  "caf\u00e9", "x", "yes", "no"]
FIXTURE_HP = dict(V=len(FIXTURE_TOKENS), E=5, H=6, S=4, R=3, T=4, N=2, residual=True,
                  policy="always", read_token=3, forget_bias=1.0, beta_bias=1.0, write_scale=0.25,
                  eps=1 / 65536, pad=0, eos=1)


def fixture_fingerprint():
    data = bytearray()
    for t, (_, rows, cols) in enumerate(tensor_list(FIXTURE_HP)):
        n = rows * (cols or 1)
        data += encode([((7 * i + 3 * t) % 13 - 6) / 32 for i in range(n)], GGML_F32)
    return fingerprint(FIXTURE_HP, FIXTURE_TOKENS, xxhash.xxh64(bytes(data)).intdigest())


def blob(floats, position=0, fp=None, dims=None, version=1, magic=b"FWMS", checksum_delta=0):
    hp = FIXTURE_HP
    H, S, R, T = dims or (hp["H"], hp["S"], hp["R"], hp["T"])
    body = magic + struct.pack("<IQIIIIQ", version, fixture_fingerprint() if fp is None else fp,
                               H, S, R, T, position)
    body += struct.pack(f"<{len(floats)}f", *floats)
    return body + struct.pack("<Q", (xxhash.xxh64(body).intdigest() + checksum_delta) % 2**64)


def state_import_corpus():
    hp = FIXTURE_HP
    n = 2 * hp["H"] + hp["S"] * hp["R"] * hp["T"]
    rng = random.Random(5)
    state = [round(rng.uniform(-2, 2), 4) for _ in range(n)]
    extreme = [3.4028234e38, -3.4028234e38, 1e-45, -0.0, 1e-38] * (n // 5) + [0.0] * (n % 5)
    files = {
        "valid-zero": blob([0.0] * n),
        "valid-random-position-17": blob(state, position=17),
        "valid-position-max": blob(state, position=2**64 - 1),
        "valid-extreme-floats": blob(extreme, position=3),
        "bad-empty": b"",
        "bad-47-bytes": blob([0.0] * n)[:47],
        "bad-truncated": blob(state)[:-1],
        "bad-magic": blob(state, magic=b"FWMT"),
        "bad-version-2": blob(state, version=2),
        "bad-checksum": blob(state, checksum_delta=1),
        "bad-other-model": blob(state, fp=0x0123456789ABCDEF),
        "bad-dims-swapped": blob(state, dims=(hp["H"], hp["R"], hp["S"], hp["T"])),
        "bad-dims-size-mismatch": blob(state, dims=(hp["H"] + 1, hp["S"], hp["R"], hp["T"])),
        "bad-dims-overflow": blob(state, dims=(0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF)),
    }
    nan_h = list(state)
    nan_h[1] = float("nan")
    files["bad-nan-in-h"] = blob(nan_h)
    inf_f = list(state)
    inf_f[-1] = float("-inf")
    files["bad-inf-in-F"] = blob(inf_f)
    # an LSTM session's blob (version 2, runtime/state_blob_common.h): another architecture's
    lstm = b"FWMS" + struct.pack("<IQ", 2, fixture_fingerprint()) + b"lstm\0\0\0\0" + struct.pack("<QII", 5, 2, 4)
    lstm += struct.pack("<16f", *[0.25] * 16)
    files["bad-lstm-blob"] = lstm + struct.pack("<Q", xxhash.xxh64(lstm).intdigest())
    files["bad-lstm-blob-checksum"] = lstm + struct.pack("<Q", 7)
    # blobs of the LSTM fixture (fuzz_fixture_lstm_model): accepted there, refused by the FWM's
    rng = random.Random(7)
    for name, position, values in (("valid-lstm-zero", 0, [0.0] * 16),
                                   ("valid-lstm-random", 9, [round(rng.uniform(-2, 2), 4) for _ in range(16)])):
        body = (b"FWMS" + struct.pack("<IQ", 2, lstm_fixture_fingerprint()) + b"lstm\0\0\0\0"
                + struct.pack("<QII", position, 2, 4) + struct.pack("<16f", *values))
        files[name] = body + struct.pack("<Q", xxhash.xxh64(body).intdigest())
    # an MNM session's blob (version 2, runtime/mnm/mnm_state.c): H 2, d_k 2, d_v 1, D 2, one layer
    mnm = b"FWMS" + struct.pack("<IQ", 2, fixture_fingerprint()) + b"mnm\0\0\0\0\0"
    mnm += struct.pack("<Q6I", 5, 2, 2, 1, 2, 1, 0) + struct.pack("<7f", *[0.25] * 7)
    files["bad-mnm-blob"] = mnm + struct.pack("<Q", xxhash.xxh64(mnm).intdigest())
    # blobs of the MNM fixture (fuzz_fixture_mnm_model): accepted there, refused by the others
    for name, position, values in (("valid-mnm-random", 4, [0.5, -0.25, 1.5, -2.0, 0.125, 0.75, -0.5]),):
        body = (b"FWMS" + struct.pack("<IQ", 2, mnm_fixture_fingerprint()) + b"mnm\0\0\0\0\0"
                + struct.pack("<Q6I", position, 2, 2, 1, 2, 1, 0) + struct.pack("<7f", *values))
        files[name] = body + struct.pack("<Q", xxhash.xxh64(body).intdigest())
    # a GFW session's blob (version 2, runtime/gfw/gfw_state.c): dims m 2, N 2, E 5, then h_F, h_S,
    # F1 [2, 8], F2 [2, 3]: 26 floats; with the FWM fixture's fingerprint, refused by every fixture
    gfw = b"FWMS" + struct.pack("<IQ", 2, fixture_fingerprint()) + b"gfw\0\0\0\0\0"
    gfw += struct.pack("<Q4I", 5, 2, 2, 5, 0) + struct.pack("<26f", *[0.25] * 26)
    files["bad-gfw-blob"] = gfw + struct.pack("<Q", xxhash.xxh64(gfw).intdigest())
    # blobs of the GFW fixture (fuzz_fixture_gfw_model): accepted there, refused by the others
    rng = random.Random(11)
    for name, position, values in (("valid-gfw-zero", 0, [0.0] * 26),
                                   ("valid-gfw-random", 6, [round(rng.uniform(-1, 1), 4) for _ in range(26)])):
        body = (b"FWMS" + struct.pack("<IQ", 2, gfw_fixture_fingerprint()) + b"gfw\0\0\0\0\0"
                + struct.pack("<Q4I", position, 2, 2, 5, 0) + struct.pack("<26f", *values))
        files[name] = body + struct.pack("<Q", xxhash.xxh64(body).intdigest())
    # blobs of the STM fixture (fuzz_fixture_stm_model, sentence mode): d 2, n_q 2, P 3; Mi, Mr, then
    # the buffered word ids, the buffer's length and the answer slot
    fp = stm_fixture_fingerprint()
    for name, position, words, ok in (("valid-stm-buffer", 6, [4, 6, 0, 2, 0], True),
                                      ("valid-stm-answer-slot", 9, [0, 0, 0, 0, 1], True),
                                      ("bad-stm-slot-with-words", 9, [4, 0, 0, 1, 1], False),
                                      ("bad-stm-word-beyond-length", 9, [4, 6, 7, 2, 0], False),
                                      ("bad-stm-long-buffer", 9, [4, 6, 7, 4, 0], False)):
        body = (b"FWMS" + struct.pack("<IQ", 2, fp) + b"stm\0\0\0\0\0"
                + struct.pack("<Q6I", position, 2, 2, 0, 3, 0, 0)
                + struct.pack("<12f", *[((5 * i) % 7 - 3) / 4 for i in range(12)])
                + struct.pack("<5I", *words))
        files[name] = body + struct.pack("<Q", xxhash.xxh64(body).intdigest())
    return files


def gfw_fixture_fingerprint():
    """FWMFP2 of fuzz_fixture.c's GFW (E 5, m 2, N 2, P 3, epsilon 2^-16), by the independent
    reference."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
    import gfw_reference
    hp = gfw_reference.default_hparams(vocab_size=len(FIXTURE_TOKENS), embedding_length=5, fast_hidden=2,
                                       slow_hidden=2, slow_inner=3, layer_norm_epsilon=1 / 65536,
                                       padding_token_id=0, eos_token_id=1)
    stored = {}
    for t, (name, shape) in enumerate(gfw_reference.tensor_list(hp)):
        n = shape[0] * (shape[1] if len(shape) > 1 else 1)
        stored[name] = struct.pack(f"<{n}f", *[((7 * i + 3 * t) % 13 - 6) / 32 for i in range(n)])
    return gfw_reference.fingerprint(hp, FIXTURE_TOKENS, gfw_reference.checksum(hp, stored))


def stm_fixture_fingerprint():
    """FWMFP2 of fuzz_fixture.c's STM (sentence mode, E 5, P 3, d 2, n_q 2, n_r 2, H_a 2, epsilons
    2^-16), by the independent reference."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
    import stm_reference
    hp = stm_reference.default_hparams(vocab_size=len(FIXTURE_TOKENS), input_mode=0, embedding_length=5,
                                       sentence_length=3, memory_size=2, query_count=2, relation_length=2,
                                       answer_hidden=2, sam_norm_eps=2.0 ** -16, answer_norm_eps=2.0 ** -16,
                                       reset_on_eos=True, statement_end_token_id=2, question_end_token_id=3,
                                       padding_token_id=0, eos_token_id=1)
    stored = {}
    for t, (name, shape) in enumerate(stm_reference.tensor_list(hp)):
        n = shape[0] * (shape[1] if len(shape) > 1 else 1)
        stored[name] = struct.pack(f"<{n}f", *[((7 * i + 3 * t) % 13 - 6) / 32 for i in range(n)])
    return stm_reference.fingerprint(hp, FIXTURE_TOKENS, stm_reference.checksum(hp, stored))


def mnm_fixture_fingerprint():
    """FWMFP2 of fuzz_fixture.c's MNM (E 5, H 2, one head, d_k 2, d_v 1, one memory layer, output 3),
    by the independent reference."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
    import mnm_reference
    hp = mnm_reference.default_hparams(vocab_size=len(FIXTURE_TOKENS), embedding_length=5, hidden_size=2,
                                       head_count=1, key_length=2, value_length=1, memory_hidden=2,
                                       memory_layers=1, output_length=3, padding_token_id=0, eos_token_id=1)
    stored = {}
    for t, (name, shape) in enumerate(mnm_reference.tensor_list(hp)):
        n = shape[0] * (shape[1] if len(shape) > 1 else 1)
        stored[name] = struct.pack(f"<{n}f", *[((7 * i + 3 * t) % 13 - 6) / 32 for i in range(n)])
    return mnm_reference.fingerprint(hp, FIXTURE_TOKENS, mnm_reference.checksum(hp, stored))


def lstm_fixture_fingerprint():
    """FWMFP2 of fuzz_fixture.c's LSTM (E 5, H 4, two residual layers), by the independent reference."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
    import lstm_reference
    hp = dict(vocab_size=len(FIXTURE_TOKENS), embedding_length=5, hidden_size=4, layer_count=2, residual=True,
              forget_bias=1.0, padding_token_id=0, eos_token_id=1)
    raw = []
    for t, (_, shape) in enumerate(lstm_reference.tensor_list(hp)):
        n = shape[0] * (shape[1] if len(shape) > 1 else 1)
        raw.append(struct.pack(f"<{n}f", *[((7 * i + 3 * t) % 13 - 6) / 32 for i in range(n)]))
    return lstm_reference.fingerprint_of(hp, FIXTURE_TOKENS, lstm_reference.checksum_of(raw))


def tokenize_corpus():
    texts = {
        "story": "Mary went to the kitchen. John went to the garden.\nWhere is Mary? kitchen\n",
        "directions": "where is the garden ? n,w s,e N,W",
        "punctuation": "mr. ... a. a.. ?. ?? x? .?. . ? a.? Mr.",
        "unicode": "caf\u00e9 CAF\u00c9 Caf\u00e9.",
        "white-space": " \t\n\r\v\fmary\t\tjohn\r\n",
        "long": "mary went to the kitchen . " * 12,
        "unknown-word": "mary went to Paris.",
        "unknown-after-split": "kitchen. garden? bedroom.",
        "empty": "",
    }
    files = {k: v.encode() for k, v in texts.items()}
    files["nul-bytes"] = b"mary\0went x\0"
    files["high-bytes"] = bytes(range(0x80, 0x100))
    return files


def protocol_corpus():
    """msgpack-RPC streams as a client would send them (docs/PROTOCOL.md), written with
    python3-msgpack, and broken ones."""
    import msgpack

    def pack(m):
        return msgpack.packb(m, use_bin_type=True)

    sid = "0123456789abcdef0123456789abcdef"
    requests = [
        [0, 1, "hello", []],
        [0, 2, "open", [{"model": "m", "topk": 3}]],
        [0, 3, "feed", [{"session": sid, "text": "Mary moved to the bathroom."}]],
        [0, 4, "feed", [{"session": sid, "tokens": [1, 17, 2 ** 31, 0], "notify": False}]],
        [0, 5, "ask", [{"session": sid, "question": "Where is Mary?", "commit": True}]],
        [0, 6, "restore", [{"state": bytes(range(200))}]],
        [0, 7, "sessions", [{"after": sid, "limit": 10}]],
        [2, "close", [{"session": sid}]],
        [0, 2 ** 32 - 1, "stats", []],
    ]
    files = {}
    for i, m in enumerate(requests):
        files["request-%d" % i] = pack(m)
    files["pipelined"] = b"".join(pack(m) for m in requests)
    files["truncated"] = pack(requests[2])[:-3]
    files["not-an-array"] = pack({"hello": 1}) + pack(requests[0])
    files["invalid-byte"] = pack(requests[0]) + b"\xc1" + pack(requests[0])
    files["too-deep"] = pack([0, 1, "hello", [[[[[[[[[[1]]]]]]]]]]])
    files["long-string"] = pack([0, 1, "feed", [{"text": "x" * 2000}]])
    files["long-binary"] = pack([0, 1, "restore", [{"state": b"\0" * 3000}]])
    files["huge-count"] = b"\x94\x00\x01\xa5hello\xdd\xff\xff\xff\xff"
    files["huge-string-header"] = b"\x94\x00\x01\xdb\xff\xff\xff\xff"
    files["ext-and-floats"] = pack([0, 1.5, "hello", [msgpack.ExtType(5, b"abc"), 2.5, -1, None, True]])
    files["bad-utf8"] = b"\x94\x00\x01\xa4\xff\xfe\xc3\x28\x90"
    files["empty-array"] = b"\x90" + pack(requests[0])
    files["many-objects"] = pack([0, 1, "feed", [{"tokens": list(range(600))}]])
    return files


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "corpus")
    total = 0
    for target, files in (("model_load", model_load_corpus()),
                          ("state_import", state_import_corpus()),
                          ("tokenize", tokenize_corpus()),
                          ("protocol", protocol_corpus())):
        folder = os.path.join(root, target)
        os.makedirs(folder, exist_ok=True)
        for old in os.listdir(folder):
            if not old.startswith(("regression-", "fuzzed-")):  # crashers and fuzzer finds stay
                os.remove(os.path.join(folder, old))
        for name, data in files.items():
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)
            total += len(data)
        print(f"{folder}: {len(files)} files")
    print(f"{total} bytes in all")


if __name__ == "__main__":
    main()
