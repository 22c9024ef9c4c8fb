#!/usr/bin/python3
"""gguf_writer.py - an independent GGUF v3 writer for fwm model files, for tests.

What it is for: writing model files of the `fwm`, `lstm` and `gfw` architectures (schemas in
tests/golden/README.md, docs/FORMAT.md and model_format/lstm/lstm_hparams.h) deliberately
differently from fwm's own C writer, so the loader is tested against files it did not produce:
tensors in a non-canonical order (reversed or shuffled), metadata keys shuffled and mixed
with unknown keys of many types, alignment 64 with non-zero padding bytes (and optional unused gaps)
between tensors, F32, F16 or BF16 tensors (per tensor), and either no checksum key or one computed
here (XXH64 seed 0 over the stored tensor bytes in canonical order, python3-xxhash); for `lstm`
files also the FWMFP2 fingerprint, the session start key, and decoy `fwm.*` keys an `lstm` reader
must ignore.

What it is not for: anything outside tests. It shares no code with the C writer or with
fwm_reference.py's reader.
"""

import struct

import numpy as np

GGUF_U8, GGUF_I8, GGUF_U16, GGUF_I16, GGUF_U32, GGUF_I32, GGUF_F32, GGUF_BOOL = 0, 1, 2, 3, 4, 5, 6, 7
GGUF_STRING, GGUF_ARRAY, GGUF_U64, GGUF_I64, GGUF_F64 = 8, 9, 10, 11, 12
_PACK = {GGUF_U8: "<B", GGUF_I8: "<b", GGUF_U16: "<H", GGUF_I16: "<h", GGUF_U32: "<I",
         GGUF_I32: "<i", GGUF_F32: "<f", GGUF_BOOL: "<?", GGUF_U64: "<Q", GGUF_I64: "<q",
         GGUF_F64: "<d"}

TYPE_IDS = {"f32": 0, "f16": 1, "bf16": 30}
ALIGNMENT = 64

# Canonical order: the order of the checksum's concatenation (not the order written here).
CANONICAL_ORDER = [
    "token_embd.weight", "lstm.weight_ih", "lstm.weight_hh", "lstm.bias",
    "fwm.write.weight", "fwm.write.bias", "fwm.read.weight", "fwm.read.bias",
    "fwm.out.weight", "fwm.out.bias", "output.weight",
]


def canonical_order(hp):
    """The list order; a stacked FWM (hp["L"] > 1) adds its lower layers' tensors after it."""
    L = hp.get("L", 1)
    return CANONICAL_ORDER + [f"blk.{l}.lstm.{part}" for l in range(L - 1)
                              for part in ("weight_ih", "weight_hh", "bias")]


def shapes(hp):
    """Row-major shapes from the hyperparameters (dict keys as in make_golden.py; L, the layer
    count of a stacked FWM, is optional: 1)."""
    V, E, H = hp["V"], hp["E"], hp["H"]
    S, R, T, Nr = hp["S"], hp["R"], hp["T"], hp["Nr"]
    L = hp.get("L", 1)
    lower = {}
    for l in range(L - 1):
        lower[f"blk.{l}.lstm.weight_ih"] = (4 * H, E if l == 0 else H)
        lower[f"blk.{l}.lstm.weight_hh"] = (4 * H, H)
        lower[f"blk.{l}.lstm.bias"] = (4 * H,)
    return lower | {
        "token_embd.weight": (V, E), "lstm.weight_ih": (4 * H, E if L == 1 else H),
        "lstm.weight_hh": (4 * H, H),
        "lstm.bias": (4 * H,), "fwm.write.weight": (S + R + T + 1, H),
        "fwm.write.bias": (S + R + T + 1,), "fwm.read.weight": (S + Nr * R, H),
        "fwm.read.bias": (S + Nr * R,), "fwm.out.weight": (H, T), "fwm.out.bias": (H,),
        "output.weight": (V, H),
    }


def _string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _value(vtype, value):
    if vtype == GGUF_STRING:
        return _string(value)
    if vtype == GGUF_ARRAY:
        etype, items = value
        return struct.pack("<IQ", etype, len(items)) + b"".join(_value(etype, v) for v in items)
    return struct.pack(_PACK[vtype], value)


def encode_tensor(array, type_name):
    """float array -> little-endian stored bytes of the given type (round to nearest even)."""
    a32 = np.ascontiguousarray(array, dtype=np.float64).astype(np.float32).reshape(-1)
    if type_name == "f32":
        return a32.astype("<f4").tobytes()
    if type_name == "f16":
        a16 = a32.astype(np.float16)
        if not np.all(np.isfinite(a16)):
            raise ValueError("value out of F16 range")
        return a16.astype("<f2").tobytes()
    if type_name == "bf16":
        bits = a32.view(np.uint32).astype(np.uint64)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
        if np.any((rounded & 0x7F80) == 0x7F80):
            raise ValueError("value out of BF16 range")
        return rounded.astype("<u2").tobytes()
    raise ValueError(f"unknown tensor type {type_name}")


def _xxh64(chunks):
    import xxhash  # Debian: python3-xxhash
    h = xxhash.xxh64(seed=0)
    for c in chunks:
        h.update(c)
    return h.intdigest()


def _stored_tensors(canonical, want, tensors, types):
    """Check shapes and encode every tensor: (name -> stored bytes, name -> type name)."""
    stored, type_of = {}, {}
    for tname in canonical:
        arr = np.asarray(tensors[tname])
        if arr.shape != want[tname]:
            raise ValueError(f"{tname}: shape {arr.shape}, expected {want[tname]}")
        type_of[tname] = types if isinstance(types, str) else types.get(tname, "f32")
        stored[tname] = encode_tensor(arr, type_of[tname])
    return stored, type_of


def _extra_keys():
    """Unknown keys of every GGUF type: a reader must skip them."""
    return [
        ("test.writer", GGUF_STRING, "tests/reference/gguf_writer.py"),
        ("test.u8", GGUF_U8, 200), ("test.i8", GGUF_I8, -7), ("test.u16", GGUF_U16, 65000),
        ("test.i16", GGUF_I16, -300), ("test.i32", GGUF_I32, -123456),
        ("test.u64", GGUF_U64, 2 ** 63 + 5), ("test.i64", GGUF_I64, -2 ** 40),
        ("test.f64", GGUF_F64, 3.25), ("test.bool", GGUF_BOOL, False),
        ("test.array.u16", GGUF_ARRAY, (GGUF_U16, [1, 2, 3, 65535])),
        ("test.array.f32", GGUF_ARRAY, (GGUF_F32, [0.5, -1.5])),
        ("test.array.string", GGUF_ARRAY, (GGUF_STRING, ["", "fwm.vocab_size", "x y"])),
        ("test.array.empty", GGUF_ARRAY, (GGUF_U64, [])),
        ("fwm.training.note", GGUF_STRING, "unknown keys must be skipped"),
    ]


def _write_file(path, kv, canonical, want, stored, type_of, order, gaps, rng):
    """Shuffle the keys (the architecture stays first), lay the tensors out in `order` with junk
    padding, and write the file."""
    # Keys in a shuffled order (the architecture first, as GGUF readers conventionally expect).
    rest = kv[1:]
    perm = rng.permutation(len(rest))
    kv = [kv[0]] + [rest[k] for k in perm]

    if order == "reversed":
        write_order = list(reversed(canonical))
    elif order == "shuffled":
        write_order = [canonical[k] for k in rng.permutation(len(canonical))]
    elif order == "canonical":
        write_order = list(canonical)
    else:
        raise ValueError(f"order {order}")

    # Data section layout: each tensor at an aligned offset, padding (and gaps) filled with junk.
    offsets = {}
    data = bytearray()
    for k, tname in enumerate(write_order):
        pad = -len(data) % ALIGNMENT
        if gaps and k % 3 == 1:
            pad += ALIGNMENT
        data += _junk(rng, pad)
        offsets[tname] = len(data)
        data += stored[tname]

    out = bytearray()
    out += b"GGUF" + struct.pack("<IQQ", 3, len(write_order), len(kv))
    for key, vtype, value in kv:
        out += _string(key) + struct.pack("<I", vtype) + _value(vtype, value)
    for tname in write_order:
        dims = list(reversed(want[tname]))  # fastest dimension first
        out += _string(tname) + struct.pack("<I", len(dims))
        out += b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", TYPE_IDS[type_of[tname]], offsets[tname])
    out += _junk(rng, -len(out) % ALIGNMENT)
    out += data
    with open(path, "wb") as f:
        f.write(bytes(out))
    return write_order


def write_model(path, hp, vocab, tensors, types="f32", order="reversed", checksum=True,
                extra_keys=True, gaps=False, name=None, rng=None):
    """Write an fwm model file.

    hp: dict V, E, H, S, R, T, Nr, residual (bool), policy ("always"|"token"), read_token,
        forget_bias, beta_bias, write_scale, eps, pad, eos; optionally L (a stacked FWM's
        fwm.block_count, written only when it is not 1).
    vocab: list of V strings. tensors: dict name -> float array of the row-major shape.
    types: "f32"|"f16"|"bf16" for all tensors, or a dict name -> type.
    order: "reversed", "shuffled" (uses rng) or "canonical": the order tensors are written in.
    checksum: write fwm.checksum. extra_keys: add unknown keys of many types. gaps: leave unused
    aligned gaps (filled with junk) between some tensors. rng: numpy Generator (shuffles, padding).
    Returns the dict name -> stored bytes.
    """
    rng = rng if rng is not None else np.random.default_rng(12345)
    want = shapes(hp)
    if len(vocab) != hp["V"]:
        raise ValueError("vocab size")
    canonical = canonical_order(hp)
    stored, type_of = _stored_tensors(canonical, want, tensors, types)

    kv = [
        ("general.architecture", GGUF_STRING, "fwm"),
        ("general.alignment", GGUF_U32, ALIGNMENT),
        ("fwm.vocab_size", GGUF_U32, hp["V"]),
        ("fwm.embedding_length", GGUF_U32, hp["E"]),
        ("fwm.hidden_size", GGUF_U32, hp["H"]),
        ("fwm.memory.s", GGUF_U32, hp["S"]),
        ("fwm.memory.r", GGUF_U32, hp["R"]),
        ("fwm.memory.t", GGUF_U32, hp["T"]),
        ("fwm.read_count", GGUF_U32, hp["Nr"]),
        ("fwm.residual", GGUF_BOOL, bool(hp["residual"])),
        ("fwm.read_policy", GGUF_STRING, hp["policy"]),
        ("fwm.read_token_id", GGUF_U32, hp["read_token"]),
        ("fwm.forget_bias", GGUF_F32, hp["forget_bias"]),
        ("fwm.beta_bias", GGUF_F32, hp["beta_bias"]),
        ("fwm.write_scale", GGUF_F32, hp["write_scale"]),
        ("fwm.layer_norm_eps", GGUF_F32, hp["eps"]),
        ("tokenizer.ggml.model", GGUF_STRING, "word"),
        ("tokenizer.ggml.tokens", GGUF_ARRAY, (GGUF_STRING, list(vocab))),
        ("tokenizer.ggml.padding_token_id", GGUF_U32, hp["pad"]),
        ("tokenizer.ggml.eos_token_id", GGUF_U32, hp["eos"]),
    ]
    if hp.get("L", 1) != 1:
        kv.append(("fwm.block_count", GGUF_U32, hp["L"]))
    if name is not None:
        kv.append(("general.name", GGUF_STRING, name))
    if checksum:
        kv.append(("fwm.checksum", GGUF_U64, _xxh64(stored[t] for t in canonical)))
    if extra_keys:
        kv += _extra_keys()
    _write_file(path, kv, canonical, want, stored, type_of, order, gaps, rng)
    return stored


# ---- the `lstm` architecture (model_format/lstm/lstm_hparams.h, docs/FORMAT.md) ------------------

def lstm_tensor_names(L):
    """The LSTM's tensor list, in list (checksum) order."""
    names = ["token_embd.weight"]
    for layer in range(L):
        names += [f"blk.{layer}.lstm.weight_ih", f"blk.{layer}.lstm.weight_hh",
                  f"blk.{layer}.lstm.bias"]
    return names + ["output.weight", "output.bias"]


def lstm_shapes(hp):
    """Row-major shapes of an LSTM model's tensors (hp keys V, E, H, L)."""
    V, E, H, L = hp["V"], hp["E"], hp["H"], hp["L"]
    out = {"token_embd.weight": (V, E), "output.weight": (V, H), "output.bias": (V,)}
    for layer in range(L):
        out[f"blk.{layer}.lstm.weight_ih"] = (4 * H, E if layer == 0 else H)
        out[f"blk.{layer}.lstm.weight_hh"] = (4 * H, H)
        out[f"blk.{layer}.lstm.bias"] = (4 * H,)
    return out


def lstm_fingerprint(hp, vocab, checksum):
    """FWMFP2 (the contract's serialisation): "FWMFP2", u32 length + "lstm", the hyperparameters in
    list order as 4 bytes each (u32, bool as u32 0/1, f32 bits), u32 V, each token as u32 length +
    bytes, the u64 checksum; XXH64 seed 0."""
    b = bytearray(b"FWMFP2")
    b += struct.pack("<I", 4) + b"lstm"
    b += struct.pack("<IIII", hp["V"], hp["E"], hp["H"], hp["L"])
    b += struct.pack("<I", 1 if hp["residual"] else 0)
    b += struct.pack("<f", hp["forget_bias"])
    b += struct.pack("<II", hp["pad"], hp["eos"])
    b += struct.pack("<I", len(vocab))
    for word in vocab:
        w = word.encode("utf-8")
        b += struct.pack("<I", len(w)) + w
    b += struct.pack("<Q", checksum)
    return _xxh64([bytes(b)])


def write_lstm_model(path, hp, vocab, tensors, types="f32", order="reversed", checksum=True,
                     fingerprint=False, prime_tokens=None, extra_keys=True, decoy_keys=False,
                     gaps=False, name=None, rng=None, as_given=False):
    """Write an `lstm` model file.

    hp: dict V, E, H, L, residual (bool), forget_bias, pad, eos. vocab, tensors, types, order,
    checksum, extra_keys, gaps, name, rng: as write_model (tensor names of lstm_tensor_names).
    fingerprint: write fwm.fingerprint (computed here). prime_tokens: None leaves
    fwm.session.prime_tokens out, else a list of ids (possibly empty). decoy_keys: add the FWM's
    hyperparameter keys with values that do not fit this model (an `lstm` reader must ignore them).
    as_given: write the tensors of `tensors` with their own names and shapes (a reader's refusal of
    a missing, extra or misshapen tensor is tested so).
    Returns the dict name -> stored bytes.
    """
    rng = rng if rng is not None else np.random.default_rng(12345)
    want = lstm_shapes(hp)
    canonical = lstm_tensor_names(hp["L"])
    if as_given:
        canonical = [n for n in canonical if n in tensors] + [n for n in tensors if n not in canonical]
        want = {n: np.shape(tensors[n]) for n in canonical}
    if len(vocab) != hp["V"]:
        raise ValueError("vocab size")
    stored, type_of = _stored_tensors(canonical, want, tensors, types)
    computed = _xxh64(stored[t] for t in canonical) if (checksum or fingerprint) else None
    kv = [
        ("general.architecture", GGUF_STRING, "lstm"),
        ("general.alignment", GGUF_U32, ALIGNMENT),
        ("lstm.vocab_size", GGUF_U32, hp["V"]),
        ("lstm.embedding_length", GGUF_U32, hp["E"]),
        ("lstm.hidden_size", GGUF_U32, hp["H"]),
        ("lstm.block_count", GGUF_U32, hp["L"]),
        ("lstm.residual", GGUF_BOOL, bool(hp["residual"])),
        ("lstm.forget_bias", GGUF_F32, hp["forget_bias"]),
        ("tokenizer.ggml.model", GGUF_STRING, "word"),
        ("tokenizer.ggml.tokens", GGUF_ARRAY, (GGUF_STRING, list(vocab))),
        ("tokenizer.ggml.padding_token_id", GGUF_U32, hp["pad"]),
        ("tokenizer.ggml.eos_token_id", GGUF_U32, hp["eos"]),
    ]
    if name is not None:
        kv.append(("general.name", GGUF_STRING, name))
    if checksum:
        kv.append(("fwm.checksum", GGUF_U64, computed))
    if fingerprint:
        kv.append(("fwm.fingerprint", GGUF_U64, lstm_fingerprint(hp, vocab, computed)))
    if prime_tokens is not None:
        kv.append(("fwm.session.prime_tokens", GGUF_ARRAY, (GGUF_U32, list(prime_tokens))))
    if extra_keys:
        kv += _extra_keys() + [
            ("fwm.training.mode", GGUF_STRING, "lm"), ("fwm.training.steps", GGUF_U64, 1234),
            ("lstm.unknown_future_key", GGUF_F64, -0.5),
        ]
    if decoy_keys:
        kv += [("fwm.vocab_size", GGUF_U32, hp["V"] + 3), ("fwm.hidden_size", GGUF_U32, 1),
               ("fwm.residual", GGUF_BOOL, not hp["residual"]),
               ("fwm.forget_bias", GGUF_F32, 7.0), ("fwm.read_policy", GGUF_STRING, "never")]
    _write_file(path, kv, canonical, want, stored, type_of, order, gaps, rng)
    return stored


# ---- the `gfw` architecture (model_format/gfw/gfw_hparams.h, docs/MODEL.md) ----------------------

GFW_TENSOR_NAMES = ["token_embd.weight", "gfw.slow.0.weight", "gfw.slow.0.bias", "gfw.slow.1.weight",
                    "gfw.slow.1.bias", "output.weight", "output.bias"]


def gfw_shapes(hp):
    """Row-major shapes of a Gated Fast Weights model's tensors (hp keys V, E, m, N, P)."""
    V, E, m, N, P = hp["V"], hp["E"], hp["m"], hp["N"], hp["P"]
    out_rows = N + 2 * (m + m + E + 1) + 2 * (m + m + 1)
    return {"token_embd.weight": (V, E), "gfw.slow.0.weight": (P, N + E), "gfw.slow.0.bias": (P,),
            "gfw.slow.1.weight": (out_rows, P), "gfw.slow.1.bias": (out_rows,),
            "output.weight": (V, m), "output.bias": (V,)}


def gfw_fingerprint(hp, vocab, checksum):
    """FWMFP2 of a `gfw` model: "FWMFP2", u32 3 + "gfw", V, E, m, N, P as u32, eps as f32 bits,
    pad, eos as u32, u32 V, each token as u32 length + bytes, the u64 checksum; XXH64 seed 0."""
    b = bytearray(b"FWMFP2") + struct.pack("<I", 3) + b"gfw"
    b += struct.pack("<IIIII", hp["V"], hp["E"], hp["m"], hp["N"], hp["P"])
    b += struct.pack("<f", hp["eps"]) + struct.pack("<II", hp["pad"], hp["eos"])
    b += struct.pack("<I", len(vocab))
    for word in vocab:
        w = word.encode("utf-8")
        b += struct.pack("<I", len(w)) + w
    b += struct.pack("<Q", checksum)
    return _xxh64([bytes(b)])


def write_gfw_model(path, hp, vocab, tensors, types="f32", order="reversed", checksum=True,
                    fingerprint=False, prime_tokens=None, extra_keys=True, gaps=False, name=None,
                    rng=None):
    """Write a `gfw` model file. hp: dict V, E, m, N, P, eps, pad, eos; the other arguments as
    write_lstm_model. Returns the dict name -> stored bytes."""
    rng = rng if rng is not None else np.random.default_rng(12345)
    want = gfw_shapes(hp)
    canonical = GFW_TENSOR_NAMES
    if len(vocab) != hp["V"]:
        raise ValueError("vocab size")
    stored, type_of = _stored_tensors(canonical, want, tensors, types)
    computed = _xxh64(stored[t] for t in canonical) if (checksum or fingerprint) else None
    kv = [
        ("general.architecture", GGUF_STRING, "gfw"),
        ("general.alignment", GGUF_U32, ALIGNMENT),
        ("gfw.vocab_size", GGUF_U32, hp["V"]),
        ("gfw.embedding_length", GGUF_U32, hp["E"]),
        ("gfw.fast.hidden_size", GGUF_U32, hp["m"]),
        ("gfw.slow.hidden_size", GGUF_U32, hp["N"]),
        ("gfw.slow.inner_size", GGUF_U32, hp["P"]),
        ("gfw.layer_norm_epsilon", GGUF_F32, hp["eps"]),
        ("tokenizer.ggml.model", GGUF_STRING, "word"),
        ("tokenizer.ggml.tokens", GGUF_ARRAY, (GGUF_STRING, list(vocab))),
        ("tokenizer.ggml.padding_token_id", GGUF_U32, hp["pad"]),
        ("tokenizer.ggml.eos_token_id", GGUF_U32, hp["eos"]),
    ]
    if name is not None:
        kv.append(("general.name", GGUF_STRING, name))
    if checksum:
        kv.append(("fwm.checksum", GGUF_U64, computed))
    if fingerprint:
        kv.append(("fwm.fingerprint", GGUF_U64, gfw_fingerprint(hp, vocab, computed)))
    if prime_tokens is not None:
        kv.append(("fwm.session.prime_tokens", GGUF_ARRAY, (GGUF_U32, list(prime_tokens))))
    if extra_keys:
        kv += _extra_keys() + [("gfw.unknown_future_key", GGUF_F64, 0.25),
                               ("fwm.vocab_size", GGUF_U32, hp["V"] + 5)]
    _write_file(path, kv, canonical, want, stored, type_of, order, gaps, rng)
    return stored


def _junk(rng, n):
    """Non-zero filler bytes: GGUF leaves the content of padding undefined."""
    return bytes(rng.integers(1, 256, size=n, dtype=np.uint8).tobytes()) if n else b""
