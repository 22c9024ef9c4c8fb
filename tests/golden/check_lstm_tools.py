#!/usr/bin/python3
"""check_lstm_tools.py FWM_INIT FWM_INSPECT - `lstm` files of fwm's C writer, checked from Python.

What it is for: the format side of the LSTM baseline, independent of the C code (as
tests/format/test_tools.py is for the FWM). fwm-init --arch lstm writes small models; this script
reads each with its own parsing of the GGUF layout and with tests/reference/lstm_reference.py, and
checks: the header, every key's GGUF type, alignment 64, the tensors in list order at aligned
offsets, F32, their shapes and the parameter count; the checksum (XXH64 of the tensor data in list
order) and the FWMFP2 fingerprint recomputed here (and by the reference) against the stored ones;
the contract's initialisation (ranges and spreads of each tensor); the session start key (and that
it is not part of the fingerprint); determinism in the seed; fwm-inspect accepting the file and
refusing a damaged copy. Exits 0 when all pass, 1 on a failure, 77 (skipped) without numpy or
python3-xxhash.
"""

import math
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import xxhash
except ImportError:
    print("check_lstm_tools: numpy or python3-xxhash is not available: skipped")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import lstm_reference  # noqa: E402

FWM_INIT, FWM_INSPECT = sys.argv[1], sys.argv[2]
passed, failures = 0, []


def check(cond, what):
    global passed
    if cond:
        passed += 1
    else:
        failures.append(what)
        print("FAILED:", what)


def run(*args):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=120)


def layout(data):
    """(key -> GGUF type, key -> value, [(tensor name, dims, type, offset)] in file order,
    data_start), parsed here without the reference's reader."""
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, data, pos)[0]
        pos += struct.calcsize(fmt)
        return v

    def string():
        nonlocal pos
        n = take("<Q")
        pos += n
        return data[pos - n:pos].decode()

    scalars = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
               11: "<q", 12: "<d"}

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, count = take("<I"), take("<Q")
            return (et, [value(et) for _ in range(count)])
        return take(scalars[t])

    check(data[:4] == b"GGUF", "magic")
    pos = 4
    version, n_tensors, n_kv = take("<I"), take("<Q"), take("<Q")
    check(version == 3, "GGUF version 3")
    types, kv = {}, {}
    for _ in range(n_kv):
        k = string()
        types[k] = take("<I")
        kv[k] = value(types[k])
    infos = []
    for _ in range(n_tensors):
        name = string()
        dims = [take("<Q") for _ in range(take("<I"))]
        infos.append((name, dims, take("<I"), take("<Q")))
    align = kv.get("general.alignment", 32)
    return types, kv, infos, -(-pos // align) * align


def fingerprint_here(kv, checksum):
    """FWMFP2, assembled from the keys as read (contract order: V, E, H, L, residual,
    forget_bias, pad, eos)."""
    b = b"FWMFP2" + struct.pack("<I", 4) + b"lstm"
    for k in ("lstm.vocab_size", "lstm.embedding_length", "lstm.hidden_size", "lstm.block_count"):
        b += struct.pack("<I", kv[k])
    b += struct.pack("<I", 1 if kv["lstm.residual"] else 0) + struct.pack("<f", kv["lstm.forget_bias"])
    b += struct.pack("<II", kv["tokenizer.ggml.padding_token_id"], kv["tokenizer.ggml.eos_token_id"])
    tokens = kv["tokenizer.ggml.tokens"][1]
    b += struct.pack("<I", len(tokens))
    for t in tokens:
        b += struct.pack("<I", len(t.encode())) + t.encode()
    return xxhash.xxh64(b + struct.pack("<Q", checksum), seed=0).intdigest()


def verify(path, V, E, H, L, what):
    data = open(path, "rb").read()
    types, kv, infos, data_start = layout(data)
    check(kv.get("general.architecture") == "lstm", f"{what}: architecture lstm")
    check(kv.get("general.alignment") == 64 and types.get("general.alignment") == 4,
          f"{what}: general.alignment u32 64")
    want_types = {"lstm.vocab_size": 4, "lstm.embedding_length": 4, "lstm.hidden_size": 4,
                  "lstm.block_count": 4, "lstm.residual": 7, "lstm.forget_bias": 6,
                  "tokenizer.ggml.padding_token_id": 4, "tokenizer.ggml.eos_token_id": 4,
                  "tokenizer.ggml.model": 8, "tokenizer.ggml.tokens": 9, "fwm.checksum": 10,
                  "fwm.fingerprint": 10}
    for k, t in want_types.items():
        check(types.get(k) == t, f"{what}: {k} has GGUF type {t} (found {types.get(k)})")
    check((kv["lstm.vocab_size"], kv["lstm.embedding_length"], kv["lstm.hidden_size"],
           kv["lstm.block_count"]) == (V, E, H, L), f"{what}: sizes V E H L")
    check(kv["tokenizer.ggml.tokens"][0] == 8 and len(kv["tokenizer.ggml.tokens"][1]) == V,
          f"{what}: V tokens as strings")
    check(not any(k.startswith("fwm.") and k.split(".")[1] in ("vocab_size", "hidden_size",
                                                               "memory", "read_count")
                  for k in kv), f"{what}: no fwm hyperparameter keys")
    hp = dict(vocab_size=V, embedding_length=E, hidden_size=H, layer_count=L)
    expected = lstm_reference.tensor_list(hp)
    check([n for n, *_ in infos] == [n for n, _ in expected], f"{what}: tensors in list order")
    blob = bytearray()
    for (name, dims, ttype, offset), (_, shape) in zip(infos, expected):
        check(dims == list(reversed(shape)), f"{what}: {name} GGUF dims {dims}")
        check(ttype == 0 and offset % 64 == 0, f"{what}: {name} F32 at an aligned offset")
        n = 4 * math.prod(dims)
        blob += data[data_start + offset:data_start + offset + n]
    check(len(blob) // 4 == lstm_reference.parameter_count(hp) ==
          V * E + sum(4 * H * ((E if l == 0 else H) + H + 1) for l in range(L)) + V * H + V,
          f"{what}: parameter count")
    checksum = xxhash.xxh64(bytes(blob), seed=0).intdigest()
    check(kv.get("fwm.checksum") == checksum, f"{what}: fwm.checksum is XXH64 of the data")
    check(kv.get("fwm.fingerprint") == fingerprint_here(kv, checksum), f"{what}: FWMFP2 fingerprint")
    model = lstm_reference.Model(path)  # the reference's own checks (raises on a mismatch)
    check(model.fingerprint == kv.get("fwm.fingerprint"), f"{what}: the reference's fingerprint")
    return kv, model, data


def check_init(model, what):
    """The contract's initialisation: Emb U(-0.1, 0.1), LSTM U(-1/sqrt(H), 1/sqrt(H)) (bias too),
    output.weight U(-0.1, 0.1), output.bias 0."""
    H = model.hp["hidden_size"]
    k = 1 / math.sqrt(H)
    bounds = {"token_embd.weight": 0.1, "output.weight": 0.1}
    for name, _ in lstm_reference.tensor_list(model.hp):
        w = model.w[name]
        if name == "output.bias":
            check(not w.any(), f"{what}: output.bias is 0")
            continue
        a = bounds.get(name, k)
        check(np.abs(w).max() <= a * (1 + 1e-6), f"{what}: {name} within U(-{a:.4g}, {a:.4g})")
        if w.size >= 200:  # the spread of a uniform: a / sqrt(3), mean 0
            check(abs(w.std() / (a / math.sqrt(3)) - 1) < 0.15 and abs(w.mean()) < 0.2 * a,
                  f"{what}: {name} spread {w.std():.4g} for U(-{a:.4g}, {a:.4g})")


def main():
    tmp = tempfile.mkdtemp(prefix="fwm-lstm-tools-")
    try:
        a = os.path.join(tmp, "a.gguf")
        args = ["--arch", "lstm", "--vocab-size", "20", "--embedding", "8", "--hidden", "12",
                "--layers", "3", "--residual", "--forget-bias", "0.5", "--name", "tiny-lstm"]
        r = run(FWM_INIT, "--out", a, "--seed", "7", *args)
        check(r.returncode == 0, f"fwm-init --arch lstm: exit 0 ({r.stderr})")
        if r.returncode != 0:
            return
        kv, model, data = verify(a, 20, 8, 12, 3, "small")
        check(kv["lstm.residual"] is True and abs(kv["lstm.forget_bias"] - 0.5) < 1e-9,
              "--residual and --forget-bias recorded")
        check(kv.get("general.name") == "tiny-lstm", "general.name")
        check("fwm.session.prime_tokens" not in kv and model.prime_tokens == [1],
              "no --prime: no key, the start is [eos]")
        check_init(model, "small")

        r = run(FWM_INIT, "--out", a, "--seed", "7", *args)
        check(open(a, "rb").read() == data, "same seed: identical file")
        b = os.path.join(tmp, "b.gguf")
        run(FWM_INIT, "--out", b, "--seed", "8", *args)
        check(open(b, "rb").read() != data, "another seed: another file")
        run(FWM_INIT, "--out", b, "--seed", "7", "--prime", "<eos> .", *args)
        kv_b, model_b, _ = verify(b, 20, 8, 12, 3, "primed")
        check(model_b.prime_tokens == [1, 2] and model_b.has_prime_tokens, "--prime: the ids, in order")
        check(kv_b["fwm.fingerprint"] == kv["fwm.fingerprint"],
              "the session start is not part of the fingerprint")
        run(FWM_INIT, "--out", b, "--seed", "7", *[x if x != "0.5" else "0.25" for x in args])
        check(lstm_reference.Model(b).fingerprint != kv["fwm.fingerprint"],
              "another forget_bias: another fingerprint")

        # one layer, no residual; and the paper's sizes (the list's defaults)
        c = os.path.join(tmp, "c.gguf")
        r = run(FWM_INIT, "--out", c, "--arch", "lstm", "--vocab-size", "9", "--embedding", "3",
                "--hidden", "5", "--layers", "1", "--no-residual")
        check(r.returncode == 0, f"fwm-init one layer: exit 0 ({r.stderr})")
        if r.returncode == 0:
            kv_c, _, _ = verify(c, 9, 3, 5, 1, "one layer")
            check(kv_c["lstm.residual"] is False, "--no-residual recorded")
        r = run(FWM_INIT, "--out", c, "--arch", "lstm", "--vocab-size", "180")
        check(r.returncode == 0, f"fwm-init paper sizes: exit 0 ({r.stderr})")
        if r.returncode == 0:
            kv_c, model_c, _ = verify(c, 180, 256, 512, 4, "paper sizes")
            check(kv_c["lstm.residual"] is True and kv_c["lstm.forget_bias"] == 1.0,
                  "paper defaults: residual, forget_bias 1")
            check_init(model_c, "paper sizes")

        # fwm-inspect: accepts the file, names its parameter count; refuses a damaged copy
        r = run(FWM_INSPECT, a)
        n = lstm_reference.parameter_count(model.hp)
        check(r.returncode == 0 and "lstm" in r.stdout and str(n) in r.stdout.replace(",", ""),
              f"fwm-inspect: exit 0, names lstm and {n} parameters ({r.returncode}: {r.stderr})")
        damaged = bytearray(data)
        damaged[-3] ^= 0x10
        open(b, "wb").write(damaged)
        r = run(FWM_INSPECT, b)
        check(r.returncode == 1 and "checksum" in r.stderr,
              f"fwm-inspect: a flipped data byte is a checksum mismatch ({r.returncode}, {r.stderr})")
        try:
            lstm_reference.Model(b)
            check(False, "the reference refuses the damaged copy")
        except lstm_reference.FormatError as exc:
            check("checksum mismatch" in str(exc), f"the reference refuses the damaged copy ({exc})")
    finally:
        for name in os.listdir(tmp):
            os.unlink(os.path.join(tmp, name))
        os.rmdir(tmp)


main()
print(f"check_lstm_tools: {passed} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
