#!/usr/bin/python3
"""lstm_reference.py - an independent numpy reference of the `lstm` architecture, for golden tests.

What it is for: reading `lstm` model files (GGUF v3, general.architecture = "lstm"; F32, F16 and BF16
tensors) with the GGUF reader of fwm_reference.py, checking them against the schema (every required
key with its type and range, the tokenizer, the optional keys, exactly the tensor list with its
shapes), computing the checksum (XXH64 seed 0 of the stored tensor bytes in list order) and the
FWMFP2 fingerprint, and running the model: the logits after every token of a sequence, from the zero
state or from the session start (the file's fwm.session.prime_tokens, or [eos] without the key,
stepped first), and the final state (h, c of every layer).

The model (docs/MODEL.md, "The LSTM baseline"; model_format/lstm/lstm_hparams.h):
  e = Emb[x]; in_0 = e; for each layer l:
    g = W_ih^l in_l + b^l + W_hh^l h^l           (4H pre-activations, gate order i, f, z, o)
    c^l = sigmoid(g_f + forget_bias) * c^l + sigmoid(g_i) * tanh(g_z)
    h^l = sigmoid(g_o) * tanh(c^l)
    y_l = h^l + (in_l if residual and l >= 1 else 0);  in_{l+1} = y_l
  logits = W_s y_{L-1} + b_s

A model whose fwm.matmul_type is "bf16" has the products with its BF16 matrices computed as
docs/FORMAT.md defines them (fwm_reference.Products, bf16_reference.py: the vector rounded to BF16,
float32 sums in the documented order, g = W_hh h + (W_ih in + b) and the residual sums in float32);
the rest stays float64.

It computes in float64: the golden values are meant to be the spec's exact answer, against which the
float32 runtime is judged, so the reference's own rounding (about 1e-16) must be negligible next to
the tests' tolerance (1e-5 of a row's scale). A float32 evaluation exists only for make_golden.py's
conditioning estimate. Nothing here is ported from the C code; keep it that way.

CLI:
  lstm_reference.py logits MODEL --tokens 3,17,5 --out FILE [--primed]   little-endian float32 rows of V
  lstm_reference.py info MODEL                                          keys, tensor types, hashes
"""

import argparse
import math
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fwm_reference import (FormatError, GGML_TYPE_NAMES, GGUF_TYPE_ARRAY, GGUF_TYPE_NAMES,  # noqa: E402
                           Products, bf16_products, decode_tensor, matmul_type_of, read_gguf)

ARCHITECTURE = "lstm"
MAX_VOCAB_SIZE = 1000000
MAX_DIM = 65536
MAX_LAYERS = 16
MAX_PRIME_TOKENS = 64
MAX_TOKEN_BYTES = 65535
U32, F32, BOOL, STRING, U64 = 4, 6, 7, 8, 10

# The hyperparameter list, in list (fingerprint) order: (hp name, key, GGUF type, low, high).
# A token id's range (below V) is checked after V is known.
HPARAMS = [
    ("vocab_size", "lstm.vocab_size", U32, 2, MAX_VOCAB_SIZE),
    ("embedding_length", "lstm.embedding_length", U32, 1, MAX_DIM),
    ("hidden_size", "lstm.hidden_size", U32, 1, MAX_DIM),
    ("layer_count", "lstm.block_count", U32, 1, MAX_LAYERS),
    ("residual", "lstm.residual", BOOL, None, None),
    ("forget_bias", "lstm.forget_bias", F32, None, None),
    ("padding_token_id", "tokenizer.ggml.padding_token_id", U32, None, None),
    ("eos_token_id", "tokenizer.ggml.eos_token_id", U32, None, None),
]


def tensor_list(hp):
    """[(name, row-major shape)] in list order: the embedding, each layer's W_ih, W_hh, b, then the
    output weight and bias."""
    V, E, H, L = hp["vocab_size"], hp["embedding_length"], hp["hidden_size"], hp["layer_count"]
    out = [("token_embd.weight", (V, E))]
    for layer in range(L):
        out.append((f"blk.{layer}.lstm.weight_ih", (4 * H, E if layer == 0 else H)))
        out.append((f"blk.{layer}.lstm.weight_hh", (4 * H, H)))
        out.append((f"blk.{layer}.lstm.bias", (4 * H,)))
    out += [("output.weight", (V, H)), ("output.bias", (V,))]
    return out


def parameter_count(hp):
    return sum(math.prod(shape) for _, shape in tensor_list(hp))


def checksum_of(raw_in_list_order):
    """XXH64 (seed 0) of the stored tensor bytes concatenated in list order."""
    import xxhash  # Debian: python3-xxhash
    h = xxhash.xxh64(seed=0)
    for raw in raw_in_list_order:
        h.update(raw)
    return h.intdigest()


def fingerprint_bytes(hp, vocab, checksum):
    """The FWMFP2 serialisation of an `lstm` model (the contract; docs/FORMAT.md)."""
    out = bytearray(b"FWMFP2")
    arch = ARCHITECTURE.encode("ascii")
    out += struct.pack("<I", len(arch)) + arch
    for name, _, vtype, _, _ in HPARAMS:
        v = hp[name]
        if vtype == F32:
            out += struct.pack("<f", v)
        elif vtype == BOOL:
            out += struct.pack("<I", 1 if v else 0)
        else:
            out += struct.pack("<I", v)
    out += struct.pack("<I", len(vocab))
    for token in vocab:
        b = token.encode("utf-8")
        out += struct.pack("<I", len(b)) + b
    out += struct.pack("<Q", checksum)
    return bytes(out)


def fingerprint_of(hp, vocab, checksum, matmul_type="f32"):
    """FWMFP2's XXH64; for a "bf16" model, XXH64 of b"FWMBF16\\0" and that u64 (docs/FORMAT.md, 4)."""
    import xxhash
    fp = xxhash.xxh64(fingerprint_bytes(hp, vocab, checksum), seed=0).intdigest()
    if matmul_type == "bf16":
        fp = xxhash.xxh64(b"FWMBF16\0" + struct.pack("<Q", fp), seed=0).intdigest()
    return fp


class Model:
    """A loaded `lstm` model: hyperparameters `hp`, vocabulary `vocab`, float64 weights `w`, the
    session start `prime_tokens`, and (with python3-xxhash) the computed `checksum` and
    `fingerprint`. Refuses (FormatError) a file that breaks the schema, or whose stored checksum or
    fingerprint differs from the computed one when verify_checksum is true."""

    def __init__(self, path, verify_checksum=True):
        meta, tensors = read_gguf(path)
        self.meta = meta

        def get(key, want_type, required=True):
            if key not in meta:
                if required:
                    raise FormatError(f"missing key {key} ({GGUF_TYPE_NAMES[want_type]})")
                return None
            vtype, value = meta[key]
            if vtype != want_type:
                raise FormatError(f"key {key}: type {GGUF_TYPE_NAMES.get(vtype, vtype)}, "
                                  f"expected {GGUF_TYPE_NAMES[want_type]}")
            return value

        arch = get("general.architecture", STRING)
        if arch != ARCHITECTURE:
            raise FormatError(f"general.architecture is {arch!r}, not {ARCHITECTURE!r}")
        hp = {}
        for name, key, vtype, low, high in HPARAMS:
            v = get(key, vtype)
            if low is not None and not low <= v <= high:
                raise FormatError(f"key {key}: expected {low} to {high}, found {v}")
            if vtype == F32 and not math.isfinite(v):
                raise FormatError(f"key {key}: expected a finite number, found {v}")
            hp[name] = bool(v) if vtype == BOOL else v
        V = hp["vocab_size"]
        for name in ("padding_token_id", "eos_token_id"):
            if hp[name] >= V:
                raise FormatError(f"{name} {hp[name]} is not below vocab_size {V}")
        if get("tokenizer.ggml.model", STRING) not in ("word", "text"):
            raise FormatError("tokenizer.ggml.model is neither 'word' nor 'text' (docs/TEXT.md)")
        vtype, vocab = meta.get("tokenizer.ggml.tokens", (None, None))
        if vtype != GGUF_TYPE_ARRAY or not all(isinstance(t, str) for t in vocab):
            raise FormatError("tokenizer.ggml.tokens: missing or not an array of string")
        if len(vocab) != V:
            raise FormatError(f"{len(vocab)} tokens, vocab_size {V}")
        seen = {}
        for i, t in enumerate(vocab):
            n = len(t.encode("utf-8"))
            if not 1 <= n <= MAX_TOKEN_BYTES or "\0" in t:
                raise FormatError(f"token {i}: empty, too long or contains a NUL byte")
            if t in seen:
                raise FormatError(f"duplicate token {t!r} (ids {seen[t]} and {i})")
            seen[t] = i
        name = get("general.name", STRING, required=False)
        if name is not None and "\0" in name:
            raise FormatError("general.name contains a NUL byte")
        if "general.alignment" in meta:
            get("general.alignment", U32)
        stored_checksum = get("fwm.checksum", U64, required=False)
        stored_fingerprint = get("fwm.fingerprint", U64, required=False)
        if "fwm.session.prime_tokens" in meta:
            vtype, prime = meta["fwm.session.prime_tokens"]
            # the reader flattens arrays: the element type is checked on the raw bytes below
            if vtype != GGUF_TYPE_ARRAY or len(prime) > MAX_PRIME_TOKENS or \
                    not all(isinstance(t, int) and 0 <= t < V for t in prime):
                raise FormatError("fwm.session.prime_tokens: expected 0 to 64 token ids below V")
            if _array_element_type(path, "fwm.session.prime_tokens") != U32:
                raise FormatError("fwm.session.prime_tokens: expected an array of u32")
            self.prime_tokens = [int(t) for t in prime]
            self.has_prime_tokens = True
        else:
            self.prime_tokens = [hp["eos_token_id"]]
            self.has_prime_tokens = False

        expected = tensor_list(hp)
        names = {n for n, _ in expected}
        for tname in tensors:
            if tname not in names:
                raise FormatError(f"unexpected tensor {tname!r}: not part of the lstm schema")
        self.matmul_type = matmul_type_of(meta)
        self.hp, self.vocab, self.types, self.w, raw = hp, list(vocab), {}, {}, []
        for tname, shape in expected:
            if tname not in tensors:
                raise FormatError(f"missing tensor {tname}")
            ttype, dims, data = tensors[tname]
            if dims != list(reversed(shape)):
                raise FormatError(f"tensor {tname}: GGUF dims {dims}, expected {list(reversed(shape))}")
            self.types[tname] = ttype
            self.w[tname] = decode_tensor(ttype, data).reshape(shape)
            raw.append(data)
        self.bf16 = bf16_products(self.types, dict(expected)) if self.matmul_type == "bf16" else set()
        self.has_checksum = stored_checksum is not None
        self.stored_checksum, self.stored_fingerprint = stored_checksum, stored_fingerprint
        try:
            self.checksum = checksum_of(raw)
            self.fingerprint = fingerprint_of(hp, self.vocab, self.checksum, self.matmul_type)
        except ImportError:
            self.checksum = self.fingerprint = None
        if verify_checksum:
            if self.checksum is None and (self.has_checksum or stored_fingerprint is not None):
                raise FormatError("python3-xxhash is needed to verify the hashes")
            if self.has_checksum and stored_checksum != self.checksum:
                raise FormatError(f"checksum mismatch: stored {stored_checksum:#x}, "
                                  f"computed {self.checksum:#x}")
            if stored_fingerprint is not None and stored_fingerprint != self.fingerprint:
                raise FormatError(f"fingerprint mismatch: stored {stored_fingerprint:#x}, "
                                  f"computed {self.fingerprint:#x}")

    def state_floats(self):
        return 2 * self.hp["layer_count"] * self.hp["hidden_size"]


def _array_element_type(path, key):
    """The GGUF element type of array key `key` (fwm_reference's reader keeps only the values)."""
    with open(path, "rb") as f:
        data = f.read()
    needle = struct.pack("<Q", len(key)) + key.encode() + struct.pack("<I", GGUF_TYPE_ARRAY)
    pos = data.find(needle)
    return struct.unpack_from("<I", data, pos + len(needle))[0] if pos >= 0 else None


# ---- the model ---------------------------------------------------------------------------------

def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


class Runner:
    """One session of `model`, from the zero state. dtype float64 is the reference; float32 only
    estimates how sensitive the golden values are to float32 rounding. hp_override and weights
    replace hyperparameters and weights (make_golden.py's checks that each one matters)."""

    def __init__(self, model, dtype=np.float64, hp_override=None, weights=None):
        self.hp = dict(model.hp, **(hp_override or {}))
        self.dt = dtype
        self.w = {k: v.astype(dtype) for k, v in (weights or model.w).items()}
        self.mv = Products(self.w, model.bf16, dtype)
        L, H = self.hp["layer_count"], self.hp["hidden_size"]
        self.h = [np.zeros(H, dtype) for _ in range(L)]
        self.c = [np.zeros(H, dtype) for _ in range(L)]
        self.trace = []  # per step: the gate activations of every layer

    def step(self, x):
        hp, w, dt, mv = self.hp, self.w, self.dt, self.mv
        V, H, L = hp["vocab_size"], hp["hidden_size"], hp["layer_count"]
        if not 0 <= x < V:
            raise ValueError(f"token {x} out of range [0, {V})")
        mv.new_step()
        inp = mv.exact(w["token_embd.weight"][x])
        gates = []
        for layer in range(L):
            g = mv(f"blk.{layer}.lstm.weight_hh", self.h[layer],
                   mv(f"blk.{layer}.lstm.weight_ih", inp, w[f"blk.{layer}.lstm.bias"]))
            i = _sigmoid(g[0:H])
            f = _sigmoid(g[H:2 * H] + dt(hp["forget_bias"]))
            z = np.tanh(g[2 * H:3 * H])
            o = _sigmoid(g[3 * H:4 * H])
            self.c[layer] = f * self.c[layer] + i * z
            self.h[layer] = o * np.tanh(self.c[layer])
            # (hp_override "residual_first_layer" = 0 is a deliberate misreading, for make_golden.py)
            adds = hp["residual"] and layer >= hp.get("residual_first_layer", 1)
            y = self.h[layer] + inp if adds else self.h[layer]
            if adds and mv.bf16:  # the runtime's y is a float32 sum of float32 values
                y = mv.sum32(self.h[layer], inp)
            gates.append(dict(i=i, f=f, z=z, o=o, c=self.c[layer]))
            inp = y
        self.trace.append(gates)
        return mv("output.weight", inp, w["output.bias"])

    def state(self):
        """(h, c): lists of the layers' vectors (copies)."""
        return [h.copy() for h in self.h], [c.copy() for c in self.c]


def compute_logits(model, tokens, dtype=np.float64, hp_override=None, weights=None, primed=False):
    """The logits after every token, [len(tokens), V], from the zero state (or, primed, after the
    model's prime tokens); returns (logits, runner): runner.state() is the final (h, c) and
    runner.trace the gates of every step (the prime tokens' steps included)."""
    run = Runner(model, dtype, hp_override, weights)
    if primed:
        for x in model.prime_tokens:
            run.step(int(x))
    rows = [run.step(int(x)) for x in tokens]
    V = model.hp["vocab_size"]
    return (np.stack(rows) if rows else np.zeros((0, V), dtype)), run


def start_logits(model, dtype=np.float64):
    """The logits after the last prime token (the session start's prediction), or None."""
    if not model.prime_tokens:
        return None
    return compute_logits(model, model.prime_tokens, dtype)[0][-1]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    lg = sub.add_parser("logits", help="write the logits after every token")
    lg.add_argument("model")
    lg.add_argument("--tokens", required=True, help="comma-separated token ids")
    lg.add_argument("--out", required=True, help="output file: little-endian float32 rows of V")
    lg.add_argument("--primed", action="store_true", help="step the prime tokens first")
    inf = sub.add_parser("info", help="print hyperparameters, tensor types and hashes")
    inf.add_argument("model")
    args = ap.parse_args(argv)
    try:
        model = Model(args.model)
    except (FormatError, OSError) as exc:
        print(f"lstm_reference: {args.model}: {exc}", file=sys.stderr)
        return 1
    if args.cmd == "info":
        for k, v in model.hp.items():
            print(f"{k} = {v}")
        print(f"matmul_type = {model.matmul_type}")
        print(f"prime_tokens = {model.prime_tokens}{'' if model.has_prime_tokens else ' (default)'}")
        print(f"parameters = {parameter_count(model.hp)}")
        print(f"state floats = {model.state_floats()}")
        for tname, shape in tensor_list(model.hp):
            print(f"{tname}: {GGML_TYPE_NAMES[model.types[tname]]} {list(shape)}")
        if model.checksum is not None:
            print(f"checksum = {model.checksum:#018x} ({'stored' if model.has_checksum else 'not stored'})")
            print(f"fingerprint = {model.fingerprint:#018x} "
                  f"({'stored' if model.stored_fingerprint is not None else 'not stored'})")
        return 0
    try:
        tokens = [int(t) for t in args.tokens.split(",") if t.strip()]
        logits, _ = compute_logits(model, tokens, primed=args.primed)
    except ValueError as exc:
        print(f"lstm_reference: {exc}", file=sys.stderr)
        return 1
    logits.astype("<f4").tofile(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
