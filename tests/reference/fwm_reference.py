#!/usr/bin/python3
"""fwm_reference.py - an independent numpy reference of the FWM model, for golden-value tests.

What it is for: reading fwm model files (GGUF v3, architecture "fwm"; F32, F16 and BF16 tensors) with
its own minimal GGUF reader, and computing the logits after every token of a sequence from zero state,
in float64, exactly as docs/MODEL.md defines the model (the stacked FWM's lower LSTM layers when
fwm.block_count > 1, the read policy, residual,
N_r chained reads with affine-free layer norm, the delta-rule write with v_old and the Frobenius-norm
clamp, and forget_bias, beta_bias, write_scale, layer_norm_eps taken from the file). A model whose
fwm.matmul_type is "bf16" has its BF16 matrices' products computed as docs/FORMAT.md defines them
(bf16_reference.py: the vector rounded to BF16, float32 sums in the documented order, the bias added
in float32); everything else stays float64.

What it is not for: speed, or sharing anything with the C code. It was written from the spec alone so
that it can catch a misreading of the spec in the runtime; keep it that way (do not port C code here).

CLI:
  fwm_reference.py logits MODEL --tokens 3,17,5 --out FILE   little-endian float32, one row of V per token
  fwm_reference.py info MODEL                                hyperparameters and tensor types
"""

import argparse
import struct
import sys

import numpy as np

import bf16_reference

# ---- a minimal GGUF v3 reader ----------------------------------------------------------------------

GGUF_MAGIC = b"GGUF"
# GGUF metadata value types: id -> (name, struct format or None for the variable-size ones)
_SCALAR_FORMATS = {
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
    10: "<Q", 11: "<q", 12: "<d",
}
GGUF_TYPE_STRING = 8
GGUF_TYPE_ARRAY = 9
GGUF_TYPE_NAMES = {0: "u8", 1: "i8", 2: "u16", 3: "i16", 4: "u32", 5: "i32", 6: "f32", 7: "bool",
                   8: "string", 9: "array", 10: "u64", 11: "i64", 12: "f64"}

GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 = 0, 1, 30
GGML_TYPE_SIZES = {GGML_TYPE_F32: 4, GGML_TYPE_F16: 2, GGML_TYPE_BF16: 2}
GGML_TYPE_NAMES = {GGML_TYPE_F32: "F32", GGML_TYPE_F16: "F16", GGML_TYPE_BF16: "BF16"}


class FormatError(Exception):
    pass


class _Cursor:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def take(self, n, what):
        if n < 0 or self.pos + n > len(self.data):
            raise FormatError(f"{what}: needs {n} bytes at offset {self.pos}, file has {len(self.data)}")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, fmt, what):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]

    def string(self, what):
        n = self.unpack("<Q", what + " length")
        return self.take(n, what).decode("utf-8")

    def value(self, vtype, what):
        if vtype in _SCALAR_FORMATS:
            return self.unpack(_SCALAR_FORMATS[vtype], what)
        if vtype == GGUF_TYPE_STRING:
            return self.string(what)
        if vtype == GGUF_TYPE_ARRAY:
            etype = self.unpack("<I", what + " element type")
            count = self.unpack("<Q", what + " element count")
            return [self.value(etype, f"{what}[{k}]") for k in range(count)]
        raise FormatError(f"{what}: unknown GGUF value type {vtype}")


def read_gguf(path):
    """Returns (metadata dict key -> (type id, value), tensors dict name -> (ggml type, dims, raw bytes))."""
    with open(path, "rb") as f:
        data = f.read()
    cur = _Cursor(data)
    if cur.take(4, "magic") != GGUF_MAGIC:
        raise FormatError("not a GGUF file (bad magic)")
    version = cur.unpack("<I", "version")
    if version != 3:
        raise FormatError(f"GGUF version {version}, expected 3")
    n_tensors = cur.unpack("<Q", "tensor count")
    n_kv = cur.unpack("<Q", "metadata count")
    meta = {}
    for _ in range(n_kv):
        key = cur.string("metadata key")
        vtype = cur.unpack("<I", f"type of {key}")
        meta[key] = (vtype, cur.value(vtype, key))
    infos = []
    for _ in range(n_tensors):
        name = cur.string("tensor name")
        n_dims = cur.unpack("<I", f"{name} n_dims")
        dims = [cur.unpack("<Q", f"{name} dim") for _ in range(n_dims)]
        ttype = cur.unpack("<I", f"{name} type")
        offset = cur.unpack("<Q", f"{name} offset")
        infos.append((name, dims, ttype, offset))
    alignment = 32
    if "general.alignment" in meta:
        alignment = meta["general.alignment"][1]
    data_start = -(-cur.pos // alignment) * alignment
    tensors = {}
    for name, dims, ttype, offset in infos:
        if ttype not in GGML_TYPE_SIZES:
            raise FormatError(f"tensor {name}: type {ttype} is not F32, F16 or BF16")
        if offset % alignment:
            raise FormatError(f"tensor {name}: offset {offset} not a multiple of {alignment}")
        n = int(np.prod(dims, dtype=np.int64)) if dims else 1
        start = data_start + offset
        end = start + n * GGML_TYPE_SIZES[ttype]
        if end > len(data):
            raise FormatError(f"tensor {name}: data [{start}, {end}) beyond end of file {len(data)}")
        tensors[name] = (ttype, dims, data[start:end])
    return meta, tensors


def decode_tensor(ttype, raw):
    """Raw little-endian tensor bytes -> float64 vector."""
    if ttype == GGML_TYPE_F32:
        return np.frombuffer(raw, dtype="<f4").astype(np.float64)
    if ttype == GGML_TYPE_F16:
        return np.frombuffer(raw, dtype="<f2").astype(np.float64)
    if ttype == GGML_TYPE_BF16:
        bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return bits.view(np.float32).astype(np.float64)
    raise FormatError(f"tensor type {ttype} unsupported")


# ---- the fwm schema ---------------------------------------------------------------------------------

# Canonical tensor order (also the order of the checksum's concatenation).
TENSOR_NAMES = [
    "token_embd.weight", "lstm.weight_ih", "lstm.weight_hh", "lstm.bias",
    "fwm.write.weight", "fwm.write.bias", "fwm.read.weight", "fwm.read.bias",
    "fwm.out.weight", "fwm.out.bias", "output.weight",
]


def block_names(L):
    """A stacked FWM's lower layers' tensors (L - 1 layers), after TENSOR_NAMES in canonical order."""
    return [f"blk.{l}.lstm.{part}" for l in range(L - 1) for part in ("weight_ih", "weight_hh", "bias")]


def tensor_names(hp):
    """Every tensor of a model, in canonical order."""
    return TENSOR_NAMES + block_names(hp.get("block_count", 1))


def tensor_shapes(hp):
    """name -> row-major shape: (rows, cols) for matrices, (n,) for vectors."""
    V, E, H = hp["vocab_size"], hp["embedding_length"], hp["hidden_size"]
    S, R, T, Nr = hp["s"], hp["r"], hp["t"], hp["read_count"]
    L = hp.get("block_count", 1)
    shapes = {
        "token_embd.weight": (V, E),
        "lstm.weight_ih": (4 * H, E if L == 1 else H),
        "lstm.weight_hh": (4 * H, H),
        "lstm.bias": (4 * H,),
        "fwm.write.weight": (S + R + T + 1, H),
        "fwm.write.bias": (S + R + T + 1,),
        "fwm.read.weight": (S + Nr * R, H),
        "fwm.read.bias": (S + Nr * R,),
        "fwm.out.weight": (H, T),
        "fwm.out.bias": (H,),
        "output.weight": (V, H),
    }
    for l in range(L - 1):
        shapes[f"blk.{l}.lstm.weight_ih"] = (4 * H, E if l == 0 else H)
        shapes[f"blk.{l}.lstm.weight_hh"] = (4 * H, H)
        shapes[f"blk.{l}.lstm.bias"] = (4 * H,)
    return shapes


def checksum_of(tensors, hp=None):
    """XXH64 (seed 0) of the stored tensor bytes, concatenated in canonical order."""
    import xxhash  # Debian: python3-xxhash
    h = xxhash.xxh64(seed=0)
    for name in tensor_names(hp or {}):
        h.update(tensors[name][2])
    return h.intdigest()


def matmul_type_of(meta):
    """The file's fwm.matmul_type: "f32" (also when absent) or "bf16"; anything else is refused."""
    vtype, value = meta.get("fwm.matmul_type", (GGUF_TYPE_STRING, "f32"))
    if vtype != GGUF_TYPE_STRING or value not in ("f32", "bf16"):
        raise FormatError(f"fwm.matmul_type: expected the string \"f32\" or \"bf16\", found {value!r}")
    return value


def bf16_products(types, shapes):
    """The tensors a "bf16" model multiplies in BF16: the matrices stored as BF16 but the looked-up
    token_embd.weight, with at most bf16_reference.MAX_COLS columns (wider ones are widened)."""
    return {name for name, shape in shapes.items()
            if name != "token_embd.weight" and len(shape) == 2 and types[name] == GGML_TYPE_BF16
            and shape[1] <= bf16_reference.MAX_COLS}


class Products:
    """The step's matrix-vector products with the stored matrices: in float64 (dtype), or for the
    tensors in `bf16` (a "bf16" model's, bf16_products) as docs/FORMAT.md's BF16 product, whose
    float32 result (bias added in float32) is returned widened to dtype.

    The reference's float64 vectors and the runtime's float32 ones differ by a few float32 ulps, so
    an element that lies that close to a BF16 rounding boundary may round differently in the two:
    `fragile[step]` names the BF16 products of each step with such an input (nearer than
    FRAGILE_ULPS ulps of the element's scale: |x|; for a float32 sum made by sum32 its summands'
    magnitudes; 0 for what both compute exactly: an embedding row marked by `exact`, and a BF16
    product's result, exact as long as its inputs were not fragile)."""

    FRAGILE_ULPS = 16

    def __init__(self, w, bf16, dtype):
        self.w, self.dt = w, dtype
        self.bf16 = {name: bf16_reference.Matrix(w[name]) for name in bf16}
        self.fragile = []
        self._scale = {}

    def new_step(self):
        self.fragile.append([])
        self._scale = {}

    def exact(self, x):
        """x, noted as holding the same float32 values in the runtime (its scale is 0)."""
        self._scale[id(x)] = (x, np.zeros(np.shape(x)))
        return x

    def sum32(self, a, b):
        """a + b as the runtime forms it for a BF16 product's input: a float32 sum of float32s."""
        y = (np.asarray(a, np.float32) + np.asarray(b, np.float32)).astype(self.dt)
        self._scale[id(y)] = (y, self._scale_of(a) + self._scale_of(b))
        return y

    def _scale_of(self, x):
        kept = self._scale.get(id(x))
        return kept[1] if kept is not None and kept[0] is x else np.abs(np.asarray(x, np.float64))

    def _note_fragile(self, name, x):
        x32 = np.abs(np.asarray(x, np.float32))
        low = (x32.view(np.uint32) & 0xFFFF).astype(np.int64)
        distance = np.abs(low - 0x8000) * np.spacing(x32).astype(np.float64)
        if np.any(distance < self.FRAGILE_ULPS * 2.0 ** -24 * self._scale_of(x)) and self.fragile:
            self.fragile[-1].append(name)

    def __call__(self, name, x, bias=None):
        if name in self.bf16:
            self._note_fragile(name, x)
            b = None if bias is None else np.asarray(bias, dtype=np.float32)
            return self.exact(self.bf16[name].product(x, b).astype(self.dt))
        y = self.w[name] @ x
        return y if bias is None else y + bias


class Model:
    """A loaded fwm model: hyperparameters `hp` (dict), float64 weights `w` (dict name -> array),
    `matmul_type` and the tensors multiplied in BF16 (`bf16`, empty unless it is "bf16")."""

    def __init__(self, path, verify_checksum=True):
        meta, tensors = read_gguf(path)

        def get(key, want_type, default=None):
            if key not in meta:
                if default is not None:
                    return default
                raise FormatError(f"missing key {key}")
            vtype, value = meta[key]
            if vtype != want_type:
                raise FormatError(f"key {key}: type {GGUF_TYPE_NAMES.get(vtype, vtype)}, "
                                  f"expected {GGUF_TYPE_NAMES[want_type]}")
            return value

        U32, F32, BOOL, STR = 4, 6, 7, 8
        if get("general.architecture", STR) != "fwm":
            raise FormatError("general.architecture is not fwm")
        hp = {
            "vocab_size": get("fwm.vocab_size", U32),
            "embedding_length": get("fwm.embedding_length", U32),
            "hidden_size": get("fwm.hidden_size", U32),
            "block_count": get("fwm.block_count", U32, default=1),  # optional: absent is 1
            "s": get("fwm.memory.s", U32),
            "r": get("fwm.memory.r", U32),
            "t": get("fwm.memory.t", U32),
            "read_count": get("fwm.read_count", U32),
            "residual": bool(get("fwm.residual", BOOL)),
            "read_policy": get("fwm.read_policy", STR),
            "read_token_id": get("fwm.read_token_id", U32),
            "forget_bias": get("fwm.forget_bias", F32),
            "beta_bias": get("fwm.beta_bias", F32),
            "write_scale": get("fwm.write_scale", F32),
            "layer_norm_eps": get("fwm.layer_norm_eps", F32),
        }
        if not 1 <= hp["block_count"] <= 8:
            raise FormatError(f"fwm.block_count {hp['block_count']} outside 1 .. 8")
        if hp["read_policy"] not in ("always", "token"):
            raise FormatError(f"fwm.read_policy {hp['read_policy']!r}")
        if hp["read_count"] > 1 and hp["s"] != hp["t"]:
            raise FormatError("read_count > 1 requires S == T")
        self.vocab = get("tokenizer.ggml.tokens", GGUF_TYPE_ARRAY)
        if len(self.vocab) != hp["vocab_size"]:
            raise FormatError(f"{len(self.vocab)} tokens, vocab_size {hp['vocab_size']}")
        self.has_checksum = "fwm.checksum" in meta
        if self.has_checksum and verify_checksum:
            stored = get("fwm.checksum", 10)
            computed = checksum_of(tensors, hp)
            if stored != computed:
                raise FormatError(f"checksum mismatch: stored {stored:#x}, computed {computed:#x}")
        self.hp = hp
        self.matmul_type = matmul_type_of(meta)
        self.types = {}
        self.w = {}
        for name, shape in tensor_shapes(hp).items():
            if name not in tensors:
                raise FormatError(f"missing tensor {name}")
            ttype, dims, raw = tensors[name]
            want_dims = list(reversed(shape))  # GGUF lists the fastest dimension first
            if dims != want_dims:
                raise FormatError(f"tensor {name}: dims {dims}, expected {want_dims}")
            self.types[name] = ttype
            self.w[name] = decode_tensor(ttype, raw).reshape(shape)
        self.bf16 = bf16_products(self.types, tensor_shapes(hp)) if self.matmul_type == "bf16" else set()


# ---- the model ---------------------------------------------------------------------------------------

def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _layer_norm(x, eps):
    mean = x.mean()
    var = ((x - mean) ** 2).mean()  # biased variance
    return (x - mean) / np.sqrt(var + eps)


class Runner:
    """Steps one session of `model` from zero state. dtype float64 is the reference; float32 is only
    used by make_golden.py to estimate how sensitive the golden values are to float32 rounding."""

    def __init__(self, model, dtype=np.float64, hp_override=None, weights=None):
        self.m = model
        self.dt = dtype
        self.hp = dict(model.hp, **(hp_override or {}))
        hp = self.hp
        self.w = {k: v.astype(dtype) for k, v in (weights or model.w).items()}
        self.mv = Products(self.w, model.bf16, dtype)
        H, S, R, T = hp["hidden_size"], hp["s"], hp["r"], hp["t"]
        self.h = np.zeros(H, dtype)
        self.c = np.zeros(H, dtype)
        # a stacked FWM's lower LSTM layers (block_count - 1 of them), layer 0 first
        self.lower_h = [np.zeros(H, dtype) for _ in range(hp.get("block_count", 1) - 1)]
        self.lower_c = [np.zeros(H, dtype) for _ in range(hp.get("block_count", 1) - 1)]
        self.F = np.zeros((S * R, T), dtype)  # F[S][R][T] viewed as (S*R) x T
        self.trace = []  # per step: dict with the Frobenius norm before the clamp and read statistics

    def step(self, x):
        hp, w, dt, mv = self.hp, self.w, self.dt, self.mv
        V, H = hp["vocab_size"], hp["hidden_size"]
        S, R, T, Nr = hp["s"], hp["r"], hp["t"], hp["read_count"]
        if not 0 <= x < V:
            raise ValueError(f"token {x} out of range [0, {V})")
        info = {}
        mv.new_step()
        # 1. embedding
        e = mv.exact(w["token_embd.weight"][x])

        def cell(g, c):  # gate order i, f, z, o; returns the new (h, c)
            gi, gf, gz, go = g[0:H], g[H:2 * H], g[2 * H:3 * H], g[3 * H:4 * H]
            c = _sigmoid(gf + dt(hp["forget_bias"])) * c + _sigmoid(gi) * np.tanh(gz)
            return _sigmoid(go) * np.tanh(c), c

        # 1b. a stacked FWM's lower LSTM layers: layer 0 reads e, layer l the new h of layer l - 1
        # (g = W_hh h + (W_ih in + b): the grouping docs/FORMAT.md gives BF16 products)
        inp = e
        for l in range(len(self.lower_h)):
            g = mv(f"blk.{l}.lstm.weight_hh", self.lower_h[l],
                   mv(f"blk.{l}.lstm.weight_ih", inp, w[f"blk.{l}.lstm.bias"]))
            self.lower_h[l], self.lower_c[l] = cell(g, self.lower_c[l])
            inp = self.lower_h[l]
        # 2. the FWM's LSTM (reads e, or the last lower layer's h)
        g = mv("lstm.weight_hh", self.h, mv("lstm.weight_ih", inp, w["lstm.bias"]))
        self.h, self.c = cell(g, self.c)
        h = self.h
        # 3. write
        a = mv("fwm.write.weight", h, w["fwm.write.bias"])
        k1 = np.tanh(a[0:S])
        k2 = np.tanh(a[S:S + R])
        v = np.tanh(a[S + R:S + R + T])
        beta = _sigmoid(a[S + R + T] + dt(hp["beta_bias"]))
        K = np.outer(k1, k2).reshape(S * R)  # index i*R + j
        v_old = self.F.T @ K
        # Along K the write moves F^T K from v_old towards v by this factor (> 2 overshoots):
        info["delta_factor"] = float(K @ K * beta * dt(hp["write_scale"]))
        self.F = self.F + np.outer(K, beta * (v - v_old) * dt(hp["write_scale"]))
        norm = np.sqrt((self.F ** 2).sum())
        info["norm"] = float(norm)
        self.F = self.F / max(dt(1), norm)
        # what this step wrote, and what each chained read retrieves from the memory after it: the
        # figure-3 view that fwm-serve's `trace` reports, computed at every token whatever the policy
        info["write"] = (k1, k2, v, beta)
        u_all = mv("fwm.read.weight", h, w["fwm.read.bias"])
        q_all = u_all[0:S]
        info["reads_trace"] = []
        for r in range(Nr):
            e_r = np.tanh(u_all[S + r * R:S + (r + 1) * R])
            query = q_all
            q_all = _layer_norm(self.F.T @ np.outer(query, e_r).reshape(-1), dt(hp["layer_norm_eps"]))
            info["reads_trace"].append((query, e_r, q_all))
        info["memory"] = self.F
        # 4. read (changes no state); under policy "token" only where the input is read_token_id
        reads = hp["read_policy"] == "always" or x == hp["read_token_id"]
        info["read"] = reads
        if reads:
            u = mv("fwm.read.weight", h, w["fwm.read.bias"])
            q = u[0:S]  # no tanh on q0 (the released code's form)
            info["pre_ln_std"] = []
            info["pre_ln_mean"] = []
            for r in range(Nr):
                e_r = np.tanh(u[S + r * R:S + (r + 1) * R])
                pre = self.F.T @ np.outer(q, e_r).reshape(-1)
                info["pre_ln_std"].append(float(pre.std()))
                info["pre_ln_mean"].append(float(abs(pre.mean())))
                q = _layer_norm(pre, dt(hp["layer_norm_eps"]))
            info["q_std"] = float(q.std())
            m = mv("fwm.out.weight", q, w["fwm.out.bias"])
        else:
            m = np.zeros(H, dt)
        # 5. output
        y = m + h if hp["residual"] else m
        if mv.bf16 and hp["residual"]:  # the runtime's y = m + h: a float32 sum of float32s
            y = mv.sum32(m, h)
        logits = mv("output.weight", y)
        self.trace.append(info)
        return logits


def compute_logits(model, tokens, dtype=np.float64, hp_override=None, weights=None):
    """Logits after every token, [len(tokens), V], from zero state; returns (logits, trace).
    hp_override / weights replace hyperparameters / weights (make_golden.py's sensitivity checks)."""
    run = Runner(model, dtype, hp_override, weights)
    rows = [run.step(int(x)) for x in tokens]
    V = model.hp["vocab_size"]
    out = np.stack(rows) if rows else np.zeros((0, V), dtype)
    return out, run.trace


def parse_tokens(text):
    return [int(t) for t in text.split(",") if t.strip() != ""]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    lg = sub.add_parser("logits", help="write the logits after every token")
    lg.add_argument("model")
    lg.add_argument("--tokens", required=True, help="comma-separated token ids")
    lg.add_argument("--out", required=True, help="output file: little-endian float32 rows of V")
    inf = sub.add_parser("info", help="print hyperparameters and tensor types")
    inf.add_argument("model")
    args = ap.parse_args(argv)
    try:
        model = Model(args.model)
    except (FormatError, OSError) as exc:
        print(f"fwm_reference: {args.model}: {exc}", file=sys.stderr)
        return 1
    if args.cmd == "info":
        for k, v in model.hp.items():
            print(f"{k} = {v}")
        print(f"has_checksum = {model.has_checksum}")
        print(f"matmul_type = {model.matmul_type}")
        for name in tensor_names(model.hp):
            print(f"{name}: {GGML_TYPE_NAMES[model.types[name]]} {list(model.w[name].shape)}")
        return 0
    try:
        logits, _ = compute_logits(model, parse_tokens(args.tokens))
    except ValueError as exc:
        print(f"fwm_reference: {exc}", file=sys.stderr)
        return 1
    logits.astype("<f4").tofile(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
