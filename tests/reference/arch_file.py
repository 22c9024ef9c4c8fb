"""arch_file.py - the plain model file of an architecture described by a hyperparameter table, as
the numpy references of the `gfw`, `mnm` and `stm` architectures write and read it.

What it is for: the part of those references' file handling that does not depend on the
architecture. An architecture gives its name, its HPARAMS table (field, GGUF key, GGUF type,
default; in the fingerprint's order) and its tensor list ((name, row-major shape) in file order);
this module writes the file (keys in a fixed order, tensors in list order at 64-byte offsets, zero
padding, checksum and FWMFP2 fingerprint when python3-xxhash is present) and reads it back (the
architecture, the table's keys and types, the vocabulary's size, every tensor's presence and shape
checked; F32/F16/BF16 decoded to float64; checksum and fingerprint verified).

What it is not for: the adversarial files of tests (shuffled keys and tensors, junk padding, unknown
keys): gguf_writer.py writes those. Like the references, it shares nothing with the C code: tensors
are encoded by gguf_writer.encode_tensor, files parsed by fwm_reference.read_gguf.
"""

import struct

import numpy as np

from gguf_writer import TYPE_IDS, encode_tensor

U32, F32, BOOL, STR, ARR, U64 = 4, 6, 7, 8, 9, 10
ALIGNMENT = 64
_PACK = {U32: "<I", F32: "<f", BOOL: "<?", U64: "<Q"}


def _string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _key_value(key, vtype, value):
    out = _string(key) + struct.pack("<I", vtype)
    if vtype == STR:
        return out + _string(value)
    if vtype == ARR:  # an array of strings or of u32
        etype, items = value
        out += struct.pack("<IQ", etype, len(items))
        for item in items:
            out += _string(item) if etype == STR else struct.pack("<I", item)
        return out
    return out + struct.pack(_PACK[vtype], value)


def checksum(tensors, stored):
    """XXH64 (seed 0) of the stored tensor bytes in list order (tensors: (name, shape) pairs)."""
    import xxhash  # Debian: python3-xxhash
    h = xxhash.xxh64(seed=0)
    for name, _ in tensors:
        h.update(stored[name])
    return h.intdigest()


def fingerprint_bytes(architecture, hparams, hp, vocab, tensor_checksum):
    """What the FWMFP2 fingerprint hashes: "FWMFP2", the architecture's name (u32 length + bytes),
    every hyperparameter of the table (f32 bits or u32), the vocabulary (u32 count, then u32 length
    + bytes per token) and the u64 tensor checksum."""
    b = b"FWMFP2" + struct.pack("<I", len(architecture)) + architecture.encode("ascii")
    for field, _, vtype, _ in hparams:
        b += struct.pack("<f", hp[field]) if vtype == F32 else struct.pack("<I", int(hp[field]))
    b += struct.pack("<I", len(vocab))
    for token in vocab:
        tb = token.encode("utf-8")
        b += struct.pack("<I", len(tb)) + tb
    return b + struct.pack("<Q", tensor_checksum)


def fingerprint(architecture, hparams, hp, vocab, tensor_checksum):
    import xxhash
    return xxhash.xxh64(fingerprint_bytes(architecture, hparams, hp, vocab, tensor_checksum),
                        seed=0).intdigest()


def write(path, architecture, hparams, tensors, hp, vocab, params, name=None, prime_tokens=None,
          types="f32"):
    """Write a model file. tensors: (name, shape) pairs in file order; params: name -> array;
    types: "f32", "f16" or "bf16" for every tensor, or a dict of tensor name -> type (F32 for the
    others); prime_tokens: None leaves fwm.session.prime_tokens out, else a list of ids (possibly
    empty)."""
    if len(vocab) != hp["vocab_size"]:
        raise ValueError("vocabulary size")
    stored, type_of = {}, {}
    for tname, shape in tensors:
        a = np.asarray(params[tname])
        if a.shape != shape:
            raise ValueError(f"{tname}: shape {a.shape}, expected {shape}")
        type_of[tname] = types.get(tname, "f32") if isinstance(types, dict) else types
        stored[tname] = encode_tensor(a, type_of[tname])
    kv = [("general.architecture", STR, architecture), ("general.alignment", U32, ALIGNMENT)]
    if name is not None:
        kv.append(("general.name", STR, name))
    kv += [(key, vtype, hp[field]) for field, key, vtype, _ in hparams]
    kv += [("tokenizer.ggml.model", STR, "word"),
           ("tokenizer.ggml.tokens", ARR, (STR, list(vocab)))]
    if prime_tokens is not None:
        kv.append(("fwm.session.prime_tokens", ARR, (U32, [int(t) for t in prime_tokens])))
    try:
        cs = checksum(tensors, stored)
        kv += [("fwm.checksum", U64, cs),
               ("fwm.fingerprint", U64, fingerprint(architecture, hparams, hp, vocab, cs))]
    except ImportError:
        pass
    offsets, data = {}, bytearray()
    for tname, _ in tensors:
        data += b"\0" * (-len(data) % ALIGNMENT)
        offsets[tname] = len(data)
        data += stored[tname]
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(stored), len(kv)))
    for key, vtype, value in kv:
        out += _key_value(key, vtype, value)
    for tname, shape in tensors:
        dims = list(reversed(shape))  # fastest dimension first
        out += _string(tname) + struct.pack("<I", len(dims))
        out += b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", TYPE_IDS[type_of[tname]], offsets[tname])
    out += b"\0" * (-len(out) % ALIGNMENT)
    out += data
    with open(path, "wb") as f:
        f.write(bytes(out))


def read(path, architecture, hparams, tensor_list, verify_checksum=True):
    """(hp, vocab, params float64, meta) of a model file of `architecture`; tensor_list(hp) gives
    its (name, shape) pairs. Raises fwm_reference.FormatError naming what is wrong."""
    from fwm_reference import read_gguf, decode_tensor, FormatError
    meta, stored = read_gguf(path)

    def get(key, vtype):
        if key not in meta:
            raise FormatError(f"missing key {key}")
        if meta[key][0] != vtype:
            raise FormatError(f"key {key}: type {meta[key][0]}, expected {vtype}")
        return meta[key][1]

    if get("general.architecture", STR) != architecture:
        raise FormatError(f"general.architecture is not {architecture}")
    hp = {field: get(key, vtype) for field, key, vtype, _ in hparams}
    vocab = get("tokenizer.ggml.tokens", ARR)
    if len(vocab) != hp["vocab_size"]:
        raise FormatError(f"{len(vocab)} tokens, vocab_size {hp['vocab_size']}")
    tensors = tensor_list(hp)
    params = {}
    for tname, shape in tensors:
        if tname not in stored:
            raise FormatError(f"missing tensor {tname}")
        ttype, dims, raw = stored[tname]
        if dims != list(reversed(shape)):
            raise FormatError(f"tensor {tname}: dims {dims}, expected {list(reversed(shape))}")
        params[tname] = decode_tensor(ttype, raw).reshape(shape)
    if verify_checksum and "fwm.checksum" in meta:
        cs = checksum(tensors, {n: stored[n][2] for n, _ in tensors})
        if cs != get("fwm.checksum", U64):
            raise FormatError("checksum mismatch")
        if "fwm.fingerprint" in meta and \
                fingerprint(architecture, hparams, hp, vocab, cs) != get("fwm.fingerprint", U64):
            raise FormatError("fingerprint mismatch")
    return hp, vocab, params, meta
