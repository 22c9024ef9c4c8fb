#!/usr/bin/python3
"""test_tools.py FWM_INIT FWM_INSPECT - fwm-init and fwm-inspect as programs.

The architectures: `fwm`; `lstm` (fwm-init --arch lstm) and `gfw` (fwm-init --arch gfw), whose
files are checked here against their keys, tensor lists, checksum and FWMFP2 fingerprint
(docs/FORMAT.md, model_format/gfw/gfw_hparams.h) and docs/MODEL.md's initialisation, written out
independently; and `mnm` through fwm-inspect.

fwm-init writes small models; an independent GGUF reader written here checks each file against
docs/FORMAT.md (header, key types, alignment, tensor dims and offsets, checksum = XXH64 of the
tensor data in list order, fingerprint from its canonical serialisation) and the parameter count
against docs/MODEL.md's parameter table; fwm-inspect must report the same count and verify the file, and
refuse damaged files with the reason. python3-xxhash checks the hashes; without it those checks
are skipped (the rest still runs)."""
import os
import struct
import subprocess
import sys
import tempfile

try:
    import xxhash
except ImportError:
    xxhash = None

FWM_INIT, FWM_INSPECT = sys.argv[1], sys.argv[2]
LIST = ["token_embd.weight", "lstm.weight_ih", "lstm.weight_hh", "lstm.bias",
        "fwm.write.weight", "fwm.write.bias", "fwm.read.weight", "fwm.read.bias",
        "fwm.out.weight", "fwm.out.bias", "output.weight"]
failures = []
passed = 0


def check(cond, what):
    global passed
    if cond:
        passed += 1
    else:
        failures.append(what)
        print("FAILED:", what)


def run(*args):
    return subprocess.run(list(args), capture_output=True, text=True)


# ---- an independent GGUF reader ----------------------------------------------------------------
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
           11: "<q", 12: "<d"}


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v[0]

    def string(self):
        n = self.take("<Q")
        s = self.data[self.pos:self.pos + n]
        self.pos += n
        return s.decode()

    def value(self, t):
        if t == 8:
            return self.string()
        if t == 9:
            et, count = self.take("<I"), self.take("<Q")
            return [self.value(et) for _ in range(count)]
        return self.take(SCALARS[t])


def parse(data):
    r = Reader(data)
    assert data[:4] == b"GGUF"
    r.pos = 4
    version, n_tensors, n_kv = r.take("<I"), r.take("<Q"), r.take("<Q")
    kv, types = {}, {}
    for _ in range(n_kv):
        k = r.string()
        t = r.take("<I")
        types[k] = t
        kv[k] = r.value(t)
    tensors = {}
    for _ in range(n_tensors):
        name = r.string()
        n_dims = r.take("<I")
        dims = [r.take("<Q") for _ in range(n_dims)]
        ttype, offset = r.take("<I"), r.take("<Q")
        tensors[name] = (dims, ttype, offset)
    align = kv.get("general.alignment", 32)
    data_start = (r.pos + align - 1) // align * align
    return version, kv, types, tensors, data_start


def shapes(kv):
    V, E, H = kv["fwm.vocab_size"], kv["fwm.embedding_length"], kv["fwm.hidden_size"]
    S, R, T, N = kv["fwm.memory.s"], kv["fwm.memory.r"], kv["fwm.memory.t"], kv["fwm.read_count"]
    L = kv.get("fwm.block_count", 1)
    out = {"token_embd.weight": (V, E), "lstm.weight_ih": (4 * H, E if L == 1 else H),
           "lstm.weight_hh": (4 * H, H),
           "lstm.bias": (4 * H,), "fwm.write.weight": (S + R + T + 1, H),
           "fwm.write.bias": (S + R + T + 1,), "fwm.read.weight": (S + N * R, H),
           "fwm.read.bias": (S + N * R,), "fwm.out.weight": (H, T), "fwm.out.bias": (H,),
           "output.weight": (V, H)}
    for l in range(L - 1):  # the stacked FWM's lower layers (docs/FORMAT.md section 3)
        out[f"blk.{l}.lstm.weight_ih"] = (4 * H, E if l == 0 else H)
        out[f"blk.{l}.lstm.weight_hh"] = (4 * H, H)
        out[f"blk.{l}.lstm.bias"] = (4 * H,)
    return out


def fwm_list(L):
    """The list order: the eleven, then the lower layers' tensors, layer 0 first."""
    return LIST + [f"blk.{l}.lstm.{p}" for l in range(L - 1) for p in ("weight_ih", "weight_hh", "bias")]


def formula_parameters(V, E, H, S, R, T, N, L=1):
    """docs/MODEL.md: the FWM's count; a stacked FWM's LSTM reads H inputs, and each lower layer
    adds 4H (E or H) + 4H H + 4H."""
    fwm_in = E if L == 1 else H
    lower = sum(4 * H * (E if l == 0 else H) + 4 * H * H + 4 * H for l in range(L - 1))
    return (V * E + 4 * H * fwm_in + 4 * H * H + 4 * H + (S + R + T + 1) * (H + 1)
            + (S + N * R) * (H + 1) + H * T + H + V * H + lower)


def fingerprint(kv, checksum):
    """docs/FORMAT.md: XXH64 of "FWMFP1", the hyperparameters (u32 / f32 LE in fwm_hparams order),
    V, each token as u32 length + bytes, and the checksum as u64."""
    b = bytearray(b"FWMFP1")
    u32 = lambda v: b.extend(struct.pack("<I", v))
    f32 = lambda v: b.extend(struct.pack("<f", v))
    for k in ["fwm.vocab_size", "fwm.embedding_length", "fwm.hidden_size", "fwm.memory.s",
              "fwm.memory.r", "fwm.memory.t", "fwm.read_count"]:
        u32(kv[k])
    u32(1 if kv["fwm.residual"] else 0)
    u32({"always": 0, "token": 1}[kv["fwm.read_policy"]])
    u32(kv["fwm.read_token_id"])
    for k in ["fwm.forget_bias", "fwm.beta_bias", "fwm.write_scale", "fwm.layer_norm_eps"]:
        f32(kv[k])
    u32(kv["tokenizer.ggml.padding_token_id"])
    u32(kv["tokenizer.ggml.eos_token_id"])
    if kv.get("fwm.block_count", 1) > 1:  # a stacked FWM only
        u32(kv["fwm.block_count"])
    u32(kv["fwm.vocab_size"])
    for t in kv["tokenizer.ggml.tokens"]:
        e = t.encode()
        u32(len(e))
        b.extend(e)
    b.extend(struct.pack("<Q", checksum))
    return xxhash.xxh64(bytes(b)).intdigest()


def verify_file(path, sizes, what):
    data = open(path, "rb").read()
    version, kv, types, tensors, data_start = parse(data)
    check(version == 3, f"{what}: version 3")
    check(kv["general.architecture"] == "fwm", f"{what}: architecture")
    check(kv["general.alignment"] == 64 and types["general.alignment"] == 4, f"{what}: alignment 64")
    for k in ["fwm.vocab_size", "fwm.hidden_size", "fwm.read_token_id",
              "tokenizer.ggml.eos_token_id"]:
        check(types[k] == 4, f"{what}: {k} is u32")
    for k in ["fwm.forget_bias", "fwm.write_scale", "fwm.layer_norm_eps"]:
        check(types[k] == 6, f"{what}: {k} is f32")
    check(types["fwm.residual"] == 7, f"{what}: fwm.residual is bool")
    check(types["fwm.checksum"] == 10 and types["fwm.fingerprint"] == 10, f"{what}: u64 hashes")
    check(kv["tokenizer.ggml.model"] == "word", f"{what}: tokenizer model")
    check(len(kv["tokenizer.ggml.tokens"]) == kv["fwm.vocab_size"], f"{what}: token count")
    L = kv.get("fwm.block_count", 1)
    check(L == 1 or types["fwm.block_count"] == 4, f"{what}: fwm.block_count is u32")
    check(kv.get("fwm.block_count", 0) != 1, f"{what}: fwm.block_count left out when it is 1")
    check(sorted(tensors) == sorted(fwm_list(L)), f"{what}: tensor names")
    expected = shapes(kv)
    blob = bytearray()
    for name in fwm_list(L):
        dims, ttype, offset = tensors[name]
        check(dims == list(reversed(expected[name])), f"{what}: {name} dims {dims}")
        check(ttype == 0 and offset % 64 == 0, f"{what}: {name} F32 at an aligned offset")
        n = 4
        for d in dims:
            n *= d
        start = data_start + offset
        check(start + n <= len(data), f"{what}: {name} inside the file")
        blob.extend(data[start:start + n])
    params = len(blob) // 4
    check(params == formula_parameters(*sizes), f"{what}: parameters {params} == formula")
    if xxhash:
        checksum = xxhash.xxh64(bytes(blob)).intdigest()
        check(kv["fwm.checksum"] == checksum, f"{what}: checksum is XXH64 of the data")
        check(kv["fwm.fingerprint"] == fingerprint(kv, checksum), f"{what}: fingerprint")
    return kv, data


def lstm_list(L):
    names = ["token_embd.weight"]
    for l in range(L):
        names += [f"blk.{l}.lstm.weight_ih", f"blk.{l}.lstm.weight_hh", f"blk.{l}.lstm.bias"]
    return names + ["output.weight", "output.bias"]


def lstm_shapes(V, E, H, L):
    shapes = {"token_embd.weight": (V, E), "output.weight": (V, H), "output.bias": (V,)}
    for l in range(L):
        shapes[f"blk.{l}.lstm.weight_ih"] = (4 * H, E if l == 0 else H)
        shapes[f"blk.{l}.lstm.weight_hh"] = (4 * H, H)
        shapes[f"blk.{l}.lstm.bias"] = (4 * H,)
    return shapes


def lstm_fingerprint(kv, checksum):
    """docs/FORMAT.md, FWMFP2: "FWMFP2", u32 length + the architecture name, the LSTM's hparams
    in list order (4 bytes each), V, each token as u32 length + bytes, the checksum as u64."""
    b = bytearray(b"FWMFP2")
    u32 = lambda v: b.extend(struct.pack("<I", v))
    u32(4)
    b.extend(b"lstm")
    for k in ["lstm.vocab_size", "lstm.embedding_length", "lstm.hidden_size", "lstm.block_count"]:
        u32(kv[k])
    u32(1 if kv["lstm.residual"] else 0)
    b.extend(struct.pack("<f", kv["lstm.forget_bias"]))
    u32(kv["tokenizer.ggml.padding_token_id"])
    u32(kv["tokenizer.ggml.eos_token_id"])
    u32(kv["lstm.vocab_size"])
    for t in kv["tokenizer.ggml.tokens"]:
        e = t.encode()
        u32(len(e))
        b.extend(e)
    b.extend(struct.pack("<Q", checksum))
    return xxhash.xxh64(bytes(b)).intdigest()


def verify_lstm(path, V, E, H, L, what):
    data = open(path, "rb").read()
    version, kv, types, tensors, data_start = parse(data)
    check(kv["general.architecture"] == "lstm", f"{what}: architecture lstm")
    for k in ["lstm.vocab_size", "lstm.embedding_length", "lstm.hidden_size", "lstm.block_count"]:
        check(types[k] == 4, f"{what}: {k} is u32")
    check(types["lstm.residual"] == 7 and types["lstm.forget_bias"] == 6, f"{what}: bool and f32 keys")
    check([kv["lstm.vocab_size"], kv["lstm.embedding_length"], kv["lstm.hidden_size"],
           kv["lstm.block_count"]] == [V, E, H, L], f"{what}: sizes")
    names = lstm_list(L)
    check(sorted(tensors) == sorted(names), f"{what}: tensor names")
    shapes = lstm_shapes(V, E, H, L)
    blob, values = bytearray(), {}
    for name in names:
        dims, ttype, offset = tensors[name]
        check(dims == list(reversed(shapes[name])), f"{what}: {name} dims {dims}")
        check(ttype == 0 and offset % 64 == 0, f"{what}: {name} F32 at an aligned offset")
        n = 4
        for d in dims:
            n *= d
        raw = data[data_start + offset:data_start + offset + n]
        values[name] = struct.unpack(f"<{n // 4}f", raw)
        blob.extend(raw)
    params = V * E + 4 * H * E + 4 * H * H + 4 * H + (L - 1) * (8 * H * H + 4 * H) + V * H + V
    check(len(blob) // 4 == params, f"{what}: parameters {len(blob) // 4} == formula {params}")
    # docs/MODEL.md: Emb, output.weight U(-0.1, 0.1); W_ih, W_hh, b U(-1/sqrt(H), 1/sqrt(H)); output.bias 0
    k = 1 / H ** 0.5
    check(max(abs(x) for x in values["token_embd.weight"]) <= 0.1, f"{what}: Emb within 0.1")
    check(max(abs(x) for x in values["output.weight"]) <= 0.1, f"{what}: W_s within 0.1")
    check(all(x == 0 for x in values["output.bias"]), f"{what}: output bias 0")
    w = values["blk.0.lstm.weight_hh"]
    check(max(abs(x) for x in w) <= k and max(abs(x) for x in w) > 0.8 * k, f"{what}: W_hh U(-1/sqrt(H), 1/sqrt(H))")
    check(any(x != 0 for x in values["blk.0.lstm.bias"]), f"{what}: LSTM biases drawn")
    if xxhash:
        checksum = xxhash.xxh64(bytes(blob)).intdigest()
        check(kv["fwm.checksum"] == checksum, f"{what}: checksum is XXH64 of the data")
        check(kv["fwm.fingerprint"] == lstm_fingerprint(kv, checksum), f"{what}: FWMFP2 fingerprint")
    return kv, data, params


def gfw_shapes(V, E, m, N, P):
    """docs/MODEL.md's Gated Fast Weights tensors: F1 [m, m+E+1] and F2 [m, m+1] are state, the slow
    net writes z (N) and two updates of 2 (rows + cols) each."""
    out = N + 2 * (m + m + E + 1) + 2 * (m + m + 1)
    return [("token_embd.weight", (V, E)), ("gfw.slow.0.weight", (P, N + E)), ("gfw.slow.0.bias", (P,)),
            ("gfw.slow.1.weight", (out, P)), ("gfw.slow.1.bias", (out,)), ("output.weight", (V, m)),
            ("output.bias", (V,))]


def gfw_fingerprint(kv, checksum):
    """FWMFP2 of a gfw file: the eight keys of the list in order (eps as f32 bits), the vocabulary,
    the checksum."""
    b = b"FWMFP2" + struct.pack("<I", 3) + b"gfw"
    for key in ["gfw.vocab_size", "gfw.embedding_length", "gfw.fast.hidden_size", "gfw.slow.hidden_size",
                "gfw.slow.inner_size"]:
        b += struct.pack("<I", kv[key])
    b += struct.pack("<f", kv["gfw.layer_norm_epsilon"])
    b += struct.pack("<II", kv["tokenizer.ggml.padding_token_id"], kv["tokenizer.ggml.eos_token_id"])
    tokens = kv["tokenizer.ggml.tokens"]
    b += struct.pack("<I", len(tokens))
    for t in tokens:
        tb = t.encode("utf-8")
        b += struct.pack("<I", len(tb)) + tb
    b += struct.pack("<Q", checksum)
    return xxhash.xxh64(b).intdigest()


def verify_gfw(path, V, E, m, N, P, what):
    data = open(path, "rb").read()
    version, kv, types, tensors, data_start = parse(data)
    check(kv["general.architecture"] == "gfw", f"{what}: architecture gfw")
    keys = ["gfw.vocab_size", "gfw.embedding_length", "gfw.fast.hidden_size", "gfw.slow.hidden_size",
            "gfw.slow.inner_size"]
    for k in keys:
        check(types[k] == 4, f"{what}: {k} is u32")
    check(types["gfw.layer_norm_epsilon"] == 6, f"{what}: gfw.layer_norm_epsilon is f32")
    check([kv[k] for k in keys] == [V, E, m, N, P], f"{what}: sizes {[kv[k] for k in keys]}")
    listed = gfw_shapes(V, E, m, N, P)
    check(sorted(tensors) == sorted(n for n, _ in listed), f"{what}: tensor names")
    check(sorted(tensors, key=lambda n: tensors[n][2]) == [n for n, _ in listed],
          f"{what}: tensors stored in list order")
    blob, values = bytearray(), {}
    for name, shape in listed:
        dims, ttype, offset = tensors[name]
        check(dims == list(reversed(shape)), f"{what}: {name} dims {dims}")
        check(ttype == 0 and offset % 64 == 0, f"{what}: {name} F32 at an aligned offset")
        n = 4
        for d in dims:
            n *= d
        raw = data[data_start + offset:data_start + offset + n]
        values[name] = struct.unpack(f"<{n // 4}f", raw)
        blob.extend(raw)
    # docs/MODEL.md: at the paper's sizes 46,234 parameters
    params = sum(r * (c[0] if c else 1) for _, (r, *c) in listed)
    check(len(blob) // 4 == params, f"{what}: parameters {len(blob) // 4} == formula {params}")
    # docs/MODEL.md: matrices Glorot-uniform, U(+-sqrt(6 / (rows + cols))); biases 0
    for name, shape in listed:
        w = values[name]
        if len(shape) == 1:
            check(all(x == 0 for x in w), f"{what}: {name} starts at zero")
        else:
            bound = (6 / (shape[0] + shape[1])) ** 0.5
            largest = max(abs(x) for x in w)
            check(largest <= bound and (largest > 0.7 * bound or len(w) < 8),
                  f"{what}: {name} Glorot-uniform within {bound:.4f} (largest {largest:.4f})")
    if xxhash:
        checksum = xxhash.xxh64(bytes(blob)).intdigest()
        check(kv["fwm.checksum"] == checksum, f"{what}: checksum is XXH64 of the data")
        check(kv["fwm.fingerprint"] == gfw_fingerprint(kv, checksum), f"{what}: FWMFP2 fingerprint")
    return kv, data, params


def inspect_ok(path, parameters, state_floats, what):
    r = run(FWM_INSPECT, path)
    check(r.returncode == 0, f"{what}: fwm-inspect exits 0 (got {r.returncode}: {r.stderr})")
    check(f"\nparameters: {parameters}\n" in r.stdout, f"{what}: fwm-inspect prints parameters: {parameters}")
    check(f"session state: {state_floats} floats, {4 * state_floats} bytes" in r.stdout,
          f"{what}: state size {state_floats} floats")
    return r


def main():
    tmp = tempfile.mkdtemp(prefix="fwm-test-tools-")
    try:
        # ---- a generated vocabulary, small sizes ----
        a = os.path.join(tmp, "a.gguf")
        sizes = dict(V=20, E=8, H=12, S=4, R=3, T=4, N=2)
        r = run(FWM_INIT, "--out", a, "--vocab-size", "20", "--embedding", "8", "--hidden", "12",
                "--memory-s", "4", "--memory-r", "3", "--memory-t", "4", "--reads", "2",
                "--seed", "7", "--name", "tiny", "--residual", "--read-policy", "token")
        check(r.returncode == 0, f"fwm-init small: exit 0 ({r.stderr})")
        kv, data = verify_file(a, list(sizes.values()), "small")
        check(kv["tokenizer.ggml.tokens"][:5] == ["<pad>", "<eos>", ".", "?", "w4"], "generated vocabulary")
        check(kv["fwm.read_token_id"] == 3 and kv["fwm.read_policy"] == "token", "read token '?'")
        check(kv["fwm.residual"] is True and kv["general.name"] == "tiny", "flags recorded")
        check(abs(kv["fwm.write_scale"] - 0.25) < 1e-9, "write_scale defaults to 1/T")
        p = formula_parameters(*sizes.values())
        r = inspect_ok(a, p, 2 * 12 + 4 * 3 * 4, "small")
        check("checksum: verified" in r.stdout, "small: checksum verified")
        check("(stored, matches)" in r.stdout, "small: fingerprint matches")
        check('tokenizer.ggml.tokens' in r.stdout and 'array of string [20]' in r.stdout,
              "metadata lists the token array")

        # determinism: same seed, same bytes; another seed, other weights
        b = os.path.join(tmp, "b.gguf")
        args = ["--vocab-size", "20", "--embedding", "8", "--hidden", "12", "--memory-s", "4",
                "--memory-r", "3", "--memory-t", "4", "--reads", "2", "--name", "tiny",
                "--residual", "--read-policy", "token"]
        run(FWM_INIT, "--out", b, "--seed", "7", *args)
        check(open(b, "rb").read() == data, "same seed: identical file")
        run(FWM_INIT, "--out", b, "--seed", "8", *args)
        check(open(b, "rb").read() != data, "another seed: another file")

        # ---- the stacked FWM: --layers 3 (two LSTM layers below the FWM's) ----
        st = os.path.join(tmp, "stacked.gguf")
        rs = run(FWM_INIT, "--out", st, "--seed", "7", "--layers", "3", *args)
        check(rs.returncode == 0 and " L=3 " in rs.stdout, f"fwm-init --layers 3: exit 0 ({rs.stderr})")
        kv_s, data_s = verify_file(st, list(sizes.values()) + [3], "stacked")
        check(kv_s["fwm.block_count"] == 3, "--layers 3: fwm.block_count 3")
        check(kv_s["fwm.fingerprint"] != kv["fwm.fingerprint"], "stacked: another fingerprint")
        inspect_ok(st, formula_parameters(*sizes.values(), 3), 2 * 3 * 12 + 4 * 3 * 4, "stacked")
        _, _, _, tensors_s, start_s = parse(data_s)
        bound = 1 / 12 ** 0.5
        for name in fwm_list(3)[len(LIST):]:
            dims, _, offset = tensors_s[name]
            n = dims[0] * (dims[1] if len(dims) > 1 else 1)
            values = struct.unpack(f"<{n}f", data_s[start_s + offset:start_s + offset + 4 * n])
            check(max(abs(v) for v in values) <= bound and max(abs(v) for v in values) > bound / 2,
                  f"stacked: {name} is U(-1/sqrt(H), 1/sqrt(H)) as the LSTM baseline's")
        run(FWM_INIT, "--out", b, "--seed", "7", "--layers", "1", *args)
        check(open(b, "rb").read() == data, "--layers 1: the one-layer file, byte for byte")

        # the session start: left out by default (readers prime with <eos>), or the --prime words
        check("fwm.session.prime_tokens" not in kv, "no --prime: no prime key")
        check('session start: 1 prime token ["<eos>"] (the default' in r.stdout, "inspect: the default start")
        run(FWM_INIT, "--out", b, "--seed", "7", "--prime", "<eos> w4 .", *args)
        kv_b, _ = verify_file(b, list(sizes.values()), "primed")
        check(kv_b["fwm.session.prime_tokens"] == [1, 4, 2], "--prime: the words' ids, in order")
        check(kv_b["fwm.fingerprint"] == kv["fwm.fingerprint"], "the start is not part of the fingerprint")
        r = inspect_ok(b, p, 2 * 12 + 4 * 3 * 4, "primed")
        check('session start: 3 prime tokens ["<eos>", "w4", "."]\n' in r.stdout, "inspect: the start words")
        run(FWM_INIT, "--out", b, "--seed", "7", "--prime", "", *args)
        check(verify_file(b, list(sizes.values()), "unprimed")[0]["fwm.session.prime_tokens"] == [],
              "--prime '': an empty key")
        r = run(FWM_INIT, "--out", b, "--prime", "<eos> zebra", *args)
        check(r.returncode == 2 and "--prime: 'zebra' is not in the vocabulary" in r.stderr,
              f"--prime with an unknown word: exit 2 naming it ({r.returncode}, {r.stderr})")
        r = run(FWM_INIT, "--out", b, "--prime", " ".join(["w4"] * 65), *args)
        check(r.returncode == 2 and "more than 64 words" in r.stderr, f"--prime too long ({r.stderr})")

        # ---- paper sizes with a vocabulary file ----
        vocab = os.path.join(tmp, "vocab.txt")
        words = ["<pad>", "<eos>"] + [f"word{i}" for i in range(176)] + [".", "?"]
        with open(vocab, "w") as f:
            f.write("\r\n".join(words) + "\n")
        c = os.path.join(tmp, "paper.gguf")
        r = run(FWM_INIT, "--out", c, "--vocab", vocab)
        check(r.returncode == 0, f"fwm-init paper sizes: exit 0 ({r.stderr})")
        kv, _ = verify_file(c, [180, 256, 256, 32, 32, 32, 3], "paper")
        check(kv["tokenizer.ggml.tokens"] == words, "vocabulary file read in order (CRLF)")
        check(kv["fwm.read_token_id"] == 179, "read token id of '?'")
        inspect_ok(c, 683745, 2 * 256 + 32 ** 3, "paper")

        # ---- the LSTM baseline (--arch lstm) ----
        d = os.path.join(tmp, "lstm.gguf")
        r = run(FWM_INIT, "--arch", "lstm", "--out", d, "--vocab-size", "20", "--embedding", "8",
                "--hidden", "12", "--layers", "3", "--seed", "5", "--prime", "<eos> .")
        check(r.returncode == 0, f"fwm-init --arch lstm: exit 0 ({r.stderr})")
        kv, lstm_data, p = verify_lstm(d, 20, 8, 12, 3, "lstm")
        check(kv["lstm.residual"] is True and kv["lstm.forget_bias"] == 1.0, "lstm: the paper's defaults")
        check(kv["fwm.session.prime_tokens"] == [1, 2], "lstm: --prime")
        r = inspect_ok(d, p, 2 * 3 * 12, "lstm")
        check("architecture: lstm (LSTM baseline: 3 layers of 12, embedding 8, residual on" in r.stdout,
              f"inspect: the architecture and sizes ({r.stdout[-600:]})")
        check("blk.2.lstm.weight_hh" in r.stdout and "checksum: verified" in r.stdout
              and "(stored, matches)" in r.stdout, "inspect: LSTM tensors listed, file verified")
        run(FWM_INIT, "--arch", "lstm", "--out", b, "--vocab-size", "20", "--embedding", "8",
            "--hidden", "12", "--layers", "3", "--seed", "5", "--prime", "<eos> .")
        check(open(b, "rb").read() == lstm_data, "lstm: same seed, identical file")
        run(FWM_INIT, "--arch", "lstm", "--out", b, "--vocab-size", "20", "--embedding", "8",
            "--hidden", "12", "--layers", "1", "--no-residual", "--forget-bias", "0.5")
        kv, _, p = verify_lstm(b, 20, 8, 12, 1, "lstm one layer")
        check(kv["lstm.residual"] is False and kv["lstm.forget_bias"] == 0.5, "lstm: flags recorded")
        damaged = bytearray(lstm_data)
        damaged[-5] ^= 0x01
        open(b, "wb").write(damaged)
        r = run(FWM_INSPECT, b)
        check(r.returncode == 1 and "checksum mismatch" in r.stderr, f"lstm: damaged data refused ({r.stderr})")
        changed = bytearray(lstm_data)
        at = changed.find(b"general.architecture") + len("general.architecture") + 4 + 8
        changed[at:at + 4] = b"mnmx"
        open(b, "wb").write(changed)
        r = run(FWM_INSPECT, b)
        check(r.returncode == 1 and 'unknown architecture "mnmx" (known: fwm, lstm, mnm, gfw, stm)' in r.stderr,
              f"unknown architecture named with the known ones ({r.stderr})")

        # ---- the Metalearned Neural Memory baseline (--arch mnm) ----
        m = os.path.join(tmp, "mnm.gguf")
        mnm_args = ["--arch", "mnm", "--vocab-size", "20", "--embedding", "8", "--hidden", "12",
                    "--heads", "2", "--key-length", "5", "--value-length", "4", "--memory-hidden", "6",
                    "--memory-layers", "3", "--output-length", "7", "--seed", "5"]
        r = run(FWM_INIT, "--out", m, *mnm_args, "--prime", "<eos> .")
        check(r.returncode == 0, f"fwm-init --arch mnm: exit 0 ({r.stderr})")
        # the sizes: Emb, W_ih [48, 12], W_hh, b, W_u [2 (10 + 4) + 5 = 33, 12] and b_u, the rate
        # [1, 5] and [1], the targets [2 x 6 + 4 = 16, 4] and b_q, the memory [6, 5], [6, 6], [4, 6],
        # W_o [7, 16] and b_o, W_s [20, 7] and b_s
        trained = (20 * 8 + 48 * 12 + 48 * 12 + 48 + 33 * 12 + 33 + 5 + 1 + 16 * 4 + 16
                   + 7 * 16 + 7 + 20 * 7 + 20)
        memory = 6 * 5 + 6 * 6 + 4 * 6
        r = inspect_ok(m, trained + memory, 2 * 12 + 4 + memory, "mnm")
        check("architecture: mnm (Metalearned Neural Memory baseline: controller 12, embedding 8, 2 heads, "
              "keys 5, values 4, memory 3 layers of 6, output 7" in r.stdout,
              f"inspect: the mnm architecture and sizes ({r.stdout[-700:]})")
        check(f"trained: {trained} (the rest, {memory}, is the fixed initial memory)" in r.stdout,
              "inspect: the trained count")
        check("mnm.memory.2.init" in r.stdout and "checksum: verified" in r.stdout
              and "(stored, matches)" in r.stdout, "inspect: mnm tensors listed, file verified")
        check('session start: 2 prime tokens ["<eos>", "."]' in r.stdout, "mnm: --prime")
        mnm_data = open(m, "rb").read()
        run(FWM_INIT, "--out", b, *mnm_args, "--prime", "<eos> .")
        check(open(b, "rb").read() == mnm_data, "mnm: same seed, identical file")
        r = run(FWM_INIT, "--out", b, "--arch", "mnm", "--vocab-size", "20")
        check(r.returncode == 0 and "(30000 in the fixed initial memory)" in r.stdout,
              f"mnm: default sizes ({r.stdout})")
        # docs/MODEL.md's 1,128,845 floats at V = 180, less 160 rows of Emb and W_s and of b_s
        r = inspect_ok(b, 1128845 - 2 * 160 * 256 - 160, 30612, "mnm defaults")
        damaged = bytearray(mnm_data)
        damaged[-5] ^= 0x01
        open(b, "wb").write(damaged)
        r = run(FWM_INSPECT, b)
        check(r.returncode == 1 and "checksum mismatch" in r.stderr, f"mnm: damaged data refused ({r.stderr})")

        # ---- the Gated Fast Weights model (--arch gfw) ----
        g = os.path.join(tmp, "gfw.gguf")
        r = run(FWM_INIT, "--arch", "gfw", "--out", g)
        check(r.returncode == 0 and "46234 parameters, 3960 state floats" in r.stdout,
              f"fwm-init --arch gfw: the paper's sizes by default ({r.returncode}: {r.stdout} {r.stderr})")
        kv, _, params = verify_gfw(g, 15, 15, 40, 40, 100, "gfw defaults")
        check(params == 46234, "gfw: docs/MODEL.md's 46,234 parameters")
        check(kv["tokenizer.ggml.tokens"] == [" ", "a", "b", "c", "d", "e", "f", "g", "h", "S", "Q", "(",
                                              ")", ",", "."],
              "gfw: the associative retrieval task's 15 symbols by default")
        check(kv["tokenizer.ggml.padding_token_id"] == 0 and kv["tokenizer.ggml.eos_token_id"] == 14,
              "gfw: padding the space, end of sequence '.'")
        r = inspect_ok(g, 46234, 3960, "gfw defaults")
        check("architecture: gfw (Gated Fast Weights: fast net 40, slow net 40 with transition layer 100, "
              "embedding 15" in r.stdout, f"inspect: the gfw architecture and sizes ({r.stdout[-600:]})")
        check("F1: 40 x 56; F2: 40 x 41" in r.stdout and "gfw.slow.1.weight" in r.stdout
              and "checksum: verified" in r.stdout and "(stored, matches)" in r.stdout,
              "inspect: gfw tensors listed, fast matrices sized, file verified")
        gfw_args = ["--arch", "gfw", "--vocab-size", "20", "--embedding", "6", "--hidden", "5",
                    "--slow-hidden", "7", "--slow-inner", "9", "--layer-norm-eps", "1e-3", "--seed", "4"]
        r = run(FWM_INIT, "--out", g, *gfw_args, "--prime", "<eos> .")
        check(r.returncode == 0, f"fwm-init --arch gfw with sizes: exit 0 ({r.stderr})")
        kv, gfw_data, params = verify_gfw(g, 20, 6, 5, 7, 9, "gfw small")
        check(abs(kv["gfw.layer_norm_epsilon"] - 1e-3) < 1e-9 and kv["fwm.session.prime_tokens"] == [1, 2],
              "gfw: --layer-norm-eps and --prime recorded")
        check(kv["tokenizer.ggml.padding_token_id"] == 0 and kv["tokenizer.ggml.eos_token_id"] == 1,
              "gfw: a generated vocabulary's <pad> and <eos>")
        inspect_ok(g, params, 5 + 7 + 5 * 12 + 5 * 6, "gfw small")
        run(FWM_INIT, "--out", b, *gfw_args, "--prime", "<eos> .")
        check(open(b, "rb").read() == gfw_data, "gfw: same seed, identical file")
        damaged = bytearray(gfw_data)
        damaged[-5] ^= 0x01
        open(b, "wb").write(damaged)
        r = run(FWM_INSPECT, b)
        check(r.returncode == 1 and "checksum mismatch" in r.stderr, f"gfw: damaged data refused ({r.stderr})")
        # ---- the STM (--arch stm), both input modes ----
        st = os.path.join(tmp, "stm.gguf")
        stm_args = ["--arch", "stm", "--vocab-size", "20", "--embedding", "6", "--memory-size", "5",
                    "--queries", "3", "--sentence-length", "4", "--answer-hidden", "7"]
        r = run(FWM_INIT, "--out", st, *stm_args)
        check(r.returncode == 0 and "stm sentence mode V=20 E=6 P=4 d=5 n_q=3" in r.stdout,
              f"fwm-init --arch stm: exit 0 ({r.stderr}{r.stdout})")
        r = run(FWM_INSPECT, st)
        check(r.returncode == 0 and "architecture: stm (self-attentive associative memory: sentence mode" in r.stdout
              and "end words '.' and '?'" in r.stdout and "session state: 100 floats, 424 bytes" in r.stdout
              and "stm.answer.role.2.weight2" in r.stdout and "checksum: verified" in r.stdout,
              f"inspect: stm sentence mode ({r.stdout[-800:]}{r.stderr})")
        r = run(FWM_INIT, "--out", st, *stm_args, "--input", "word", "--relation-length", "2",
                "--reset-on-eos", "off")
        check(r.returncode == 0 and "reset_on_eos=off" in r.stdout, f"fwm-init --arch stm --input word ({r.stderr})")
        # V 20, E 6, d 5, n_q 3, n_r 2: Emb 120, maps 13 * 7, gates 2 * 50 + 10, SAM 9 * 6 + 2 * 45,
        # alpha 3, transfer 75 + 5, memories 100, G2 2 * 26, G3 20 * 7
        r = inspect_ok(st, 120 + 91 + 110 + 144 + 3 + 80 + 100 + 52 + 140, 100, "stm word mode")
        check("stm.distill.weight" in r.stdout and "stm.position.weight" not in r.stdout,
              "inspect: the word-mode tensor list")
        r = run(FWM_INIT, "--out", st, "--arch", "stm", "--vocab-size", "20", "--hidden", "4")
        check(r.returncode == 2 and "--hidden does not apply to --arch stm" in r.stderr, "stm: --hidden refused")
        r = run(FWM_INIT, "--out", st, "--queries", "4")
        check(r.returncode == 2 and "--queries applies to --arch stm only" in r.stderr, "fwm: --queries refused")
        r = run(FWM_INIT, "--out", st, "--arch", "stm", "--vocab-size", "20", "--question-end", "w7", "--statement-end", "w7")
        check(r.returncode == 2 and "stm.question_end_token_id" in r.stderr, f"stm: one end word twice refused ({r.stderr})")

        # ---- damaged files ----
        bad = os.path.join(tmp, "bad.gguf")
        damaged = bytearray(data)
        damaged[-3] ^= 0x10
        open(bad, "wb").write(damaged)
        r = run(FWM_INSPECT, bad)
        check(r.returncode == 1 and "checksum mismatch" in r.stderr and "MISMATCH" in r.stdout,
              f"flipped data byte: checksum mismatch, exit 1 ({r.returncode}, {r.stderr})")
        open(bad, "wb").write(data[:len(data) - 10])
        r = run(FWM_INSPECT, bad)
        check(r.returncode == 1 and "extends past the end of the file" in r.stderr,
              f"truncated: refused with the reason ({r.stderr})")
        open(bad, "wb").write(b"GGML" + data[4:])
        r = run(FWM_INSPECT, bad)
        check(r.returncode == 1 and "bad magic" in r.stderr, f"bad magic ({r.stderr})")
        pos = data.find(b"fwm.hidden_size") + len("fwm.hidden_size") + 4
        changed = bytearray(data)
        changed[pos:pos + 4] = struct.pack("<I", 13)
        open(bad, "wb").write(changed)
        r = run(FWM_INSPECT, bad)
        check(r.returncode == 1 and "not a valid fwm model" in r.stderr
              and "tensor 'lstm.weight_ih': expected shape [52, 8], found [48, 8]" in r.stderr,
              f"hidden size changed: shape named ({r.stderr})")
        r = run(FWM_INSPECT, os.path.join(tmp, "missing.gguf"))
        check(r.returncode == 1 and "cannot open" in r.stderr, "missing file")

        # ---- damaged stacked files (fwm.block_count 3; E = 8, H = 12) ----
        def stacked_refused(changed, needle, what):
            open(bad, "wb").write(changed)
            r = run(FWM_INSPECT, bad)
            check(r.returncode == 1 and needle in r.stderr, f"stacked, {what}: '{needle}' ({r.stderr})")
        at = data_s.find(b"fwm.block_count") + len("fwm.block_count")
        check(struct.unpack("<I", data_s[at:at + 4])[0] == 4, "fwm.block_count is stored as u32")
        for value, needle in ((9, "key 'fwm.block_count': expected 1 to 8, found 9"),
                              (0, "key 'fwm.block_count': expected 1 to 8, found 0"),
                              (2, "unexpected tensor 'blk.1.lstm.weight_ih': not part of the fwm schema"),
                              (1, "tensor 'lstm.weight_ih': expected shape [48, 8], found [48, 12]")):
            changed = bytearray(data_s)
            changed[at + 4:at + 8] = struct.pack("<I", value)
            stacked_refused(changed, needle, f"block_count {value}")
        changed = bytearray(data_s)
        changed[at:at + 4] = struct.pack("<I", 5)  # an i32 key
        stacked_refused(changed, "key 'fwm.block_count': expected type u32, found i32", "i32 key")
        name = data_s.find(b"blk.1.lstm.bias")
        changed = bytearray(data_s)
        changed[name:name + len(b"blk.1.lstm.bias")] = b"blk.1.lstm.biaz"
        stacked_refused(changed, "missing tensor 'blk.1.lstm.bias'", "a lower layer's tensor renamed")

        # ---- fwm-init usage errors ----
        def init_refused(args, needle):
            r = run(FWM_INIT, *args)
            check(r.returncode == 2 and needle in r.stderr,
                  f"fwm-init {' '.join(args)}: exit 2 with '{needle}' (got {r.returncode}: {r.stderr})")
        out = os.path.join(tmp, "x.gguf")
        init_refused([], "--out PATH is required")
        init_refused(["--out", out, "--hidden", "0"], "--hidden: expected an integer from 1 to 65536, found '0'")
        init_refused(["--out", out, "--hidden", "12x"], "found '12x'")
        init_refused(["--out", out, "--reads", "2", "--memory-t", "16"],
                     "2 chained reads require fwm.memory.s == fwm.memory.t, found 32 and 16")
        init_refused(["--out", out, "--read-policy", "never"], "expected 'always' or 'token'")
        init_refused(["--out", out, "--frobnicate", "1"], "unknown flag '--frobnicate'")
        init_refused(["--out", out, "--vocab-size", "1"], "--vocab-size: expected an integer from 2")
        init_refused(["--out", out, "--vocab", vocab, "--vocab-size", "9"], "not both")
        init_refused(["--out", out, "--forget-bias", "nan"], "--forget-bias: expected a finite number")
        init_refused(["--out", out, "--vocab-size", "3", "--read-policy", "token"],
                     "--read-token: '?' is not in the vocabulary")
        dup = os.path.join(tmp, "dup.txt")
        open(dup, "w").write("<pad>\n<eos>\nmary\njohn\nmary\n")
        init_refused(["--out", out, "--vocab", dup], "duplicate token 'mary' (ids 2 and 4)")
        open(dup, "w").write("<pad>\n<eos>\n\nmary\n")
        init_refused(["--out", out, "--vocab", dup], "line 3: empty token")
        init_refused(["--out", out, "--vocab", os.path.join(tmp, "none.txt")], "cannot open")
        init_refused(["--out", out, "--arch", "ntm"],
                     "--arch: expected 'fwm', 'lstm', 'mnm', 'gfw' or 'stm', found 'ntm'")
        init_refused(["--out", out, "--arch", "gfw", "--memory-s", "4"], "--memory-s applies to --arch fwm only")
        init_refused(["--out", out, "--arch", "gfw", "--forget-bias", "1"], "--forget-bias does not apply to --arch gfw")
        init_refused(["--out", out, "--arch", "gfw", "--residual"], "--residual or --no-residual does not apply")
        init_refused(["--out", out, "--arch", "gfw", "--heads", "2"], "--heads applies to --arch mnm only")
        init_refused(["--out", out, "--slow-inner", "4"], "--slow-inner applies to --arch gfw only")
        init_refused(["--out", out, "--arch", "lstm", "--layer-norm-eps", "1e-3"],
                     "--layer-norm-eps applies to --arch fwm and gfw only")
        init_refused(["--out", out, "--arch", "gfw", "--hidden", "1"],
                     "key 'gfw.fast.hidden_size': expected 2 to 65536, found 1")
        init_refused(["--out", out, "--arch", "gfw", "--layer-norm-eps", "0"],
                     "key 'gfw.layer_norm_epsilon': expected > 0, found 0")
        init_refused(["--out", out, "--arch", "stm", "--slow-hidden", "4"],
                     "--slow-hidden does not apply to --arch stm")
        init_refused(["--out", out, "--arch", "stm", "--layer-norm-eps", "1e-3"],
                     "--layer-norm-eps does not apply to --arch stm")
        init_refused(["--out", out, "--arch", "gfw", "--queries", "2"], "--queries applies to --arch stm only")
        init_refused(["--out", out, "--arch", "mnm", "--memory-s", "4"], "--memory-s applies to --arch fwm only")
        init_refused(["--out", out, "--arch", "mnm", "--layers", "2"], "--layers applies to --arch fwm and lstm only")
        init_refused(["--out", out, "--arch", "mnm", "--residual"],
                     "--residual and --no-residual do not apply to --arch mnm")
        init_refused(["--out", out, "--heads", "2"], "--heads applies to --arch mnm only")
        init_refused(["--out", out, "--arch", "lstm", "--memory-layers", "2"],
                     "--memory-layers applies to --arch mnm only")
        init_refused(["--out", out, "--arch", "mnm", "--memory-layers", "17"],
                     "--memory-layers: expected an integer from 1 to 16")
        init_refused(["--out", out, "--arch", "mnm", "--heads", "0"], "--heads: expected an integer from 1 to 64")
        init_refused(["--out", out, "--arch", "lstm", "--memory-s", "4"], "--memory-s applies to --arch fwm only")
        init_refused(["--out", out, "--arch", "lstm", "--layers", "17"], "--layers: expected an integer from 1 to 16")
        init_refused(["--out", out, "--layers", "0"], "--layers: expected an integer from 1 to 16, found '0'")
        init_refused(["--out", out, "--layers", "9"], "--layers: expected 1 to 8 for --arch fwm, found 9")
        check(not os.path.exists(out), "no file written by a refused fwm-init")
        r = run(FWM_INIT, "--help")
        check(r.returncode == 0 and "usage: fwm-init" in r.stdout, "fwm-init --help")
        r = run(FWM_INSPECT)
        check(r.returncode == 2 and "usage: fwm-inspect" in r.stderr, "fwm-inspect without a file")
        r = run(FWM_INIT, "--out", os.path.join(tmp, "no-such-dir", "m.gguf"), "--vocab-size", "5",
                "--hidden", "4", "--embedding", "4", "--memory-s", "2", "--memory-r", "2",
                "--memory-t", "2")
        check(r.returncode == 1 and "cannot write" in r.stderr, f"unwritable path: exit 1 ({r.stderr})")
    finally:
        for name in os.listdir(tmp):
            os.unlink(os.path.join(tmp, name))
        os.rmdir(tmp)
    print(f"test_tools: {passed} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)


main()
