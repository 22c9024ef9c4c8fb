#!/usr/bin/python3
"""test_lstm_reference.py [DATA_DIR] - the LSTM reference checked on its own, without the C code.

What it is for: trusting lstm_reference.py before the runtime is compared with it.
  - PyTorch cross-check: every committed lstm_*.gguf and a few random models are run through
    torch.nn.LSTM (one single-layer module per layer, float64, gate order i, f, g, o as ours, the
    forget bias added to the f rows of bias_ih, the residual added between the modules); logits
    after every token and the final h and c of every layer must agree to 1e-10. Skipped (the rest
    still runs) when torch is not installed.
  - Hand check: a one-layer, one-unit model whose logits are computed with math, not numpy.
  - The session start: primed logits are those of the prime tokens followed by the tokens.
  - The hashes: the writer's FWMFP2 fingerprint (gguf_writer.py) and the reference's agree, and a
    hand-assembled byte string of a tiny model hashes to the same value; a flipped tensor bit, a
    wrong stored fingerprint, a key of the wrong type, a missing or extra tensor, a prime token
    out of range are refused; decoy fwm.* keys are ignored.
  - The committed expected logits equal the reference's, recomputed now.
Exits 0 when all pass, 1 on a failure, 77 (skipped) without numpy or python3-xxhash.
"""

import math
import os
import struct
import sys
import tempfile

try:
    import numpy as np
    import xxhash
except ImportError:
    print("test_lstm_reference: numpy or python3-xxhash is not available: skipped")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gguf_writer  # noqa: E402
import lstm_reference  # noqa: E402
import make_golden  # noqa: E402
from fwm_reference import FormatError  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

passed, failed = 0, 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAILED:", what)


def torch_run(model, tokens):
    """Logits and final (h, c) of `model` over `tokens` from zero, computed by torch.nn.LSTM."""
    hp, w = model.hp, model.w
    H, L = hp["hidden_size"], hp["layer_count"]
    layers = []
    for layer in range(L):
        m = torch.nn.LSTM(w[f"blk.{layer}.lstm.weight_ih"].shape[1], H, num_layers=1,
                          dtype=torch.float64)
        b_ih = w[f"blk.{layer}.lstm.bias"].copy()
        b_ih[H:2 * H] += hp["forget_bias"]
        with torch.no_grad():
            m.weight_ih_l0.copy_(torch.from_numpy(w[f"blk.{layer}.lstm.weight_ih"]))
            m.weight_hh_l0.copy_(torch.from_numpy(w[f"blk.{layer}.lstm.weight_hh"]))
            m.bias_ih_l0.copy_(torch.from_numpy(b_ih))
            m.bias_hh_l0.zero_()
        layers.append(m)
    with torch.no_grad():
        x = torch.from_numpy(w["token_embd.weight"][tokens]).unsqueeze(1)  # [n, batch 1, E]
        hs, cs = [], []
        for layer, m in enumerate(layers):
            y, (h, c) = m(x)
            hs.append(h.reshape(-1).numpy())
            cs.append(c.reshape(-1).numpy())
            x = y + x if hp["residual"] and layer >= 1 else y
        logits = x.squeeze(1) @ torch.from_numpy(w["output.weight"]).T + torch.from_numpy(w["output.bias"])
    return logits.numpy(), hs, cs


def cross_check_torch(model, tokens, label):
    want, run = lstm_reference.compute_logits(model, tokens)
    got, hs, cs = torch_run(model, tokens)
    h, c = run.state()
    err = float(np.abs(got - want).max())
    check(err <= 1e-10, f"{label}: torch.nn.LSTM logits differ by {err:.3g}")
    for layer in range(model.hp["layer_count"]):
        check(np.abs(hs[layer] - h[layer]).max() <= 1e-12 and np.abs(cs[layer] - c[layer]).max() <= 1e-12,
              f"{label}: final state of layer {layer} differs from torch's")
    return err


def hand_check(tmp):
    """V 2, E 1, H 1, L 1: the recurrence with math.exp / math.tanh."""
    hp = dict(V=2, E=1, H=1, L=1, residual=False, forget_bias=0.25, pad=0, eos=1)
    w = {"token_embd.weight": np.array([[0.5], [-1.0]]),
         "blk.0.lstm.weight_ih": np.array([[0.25], [-0.5], [1.0], [0.75]]),
         "blk.0.lstm.weight_hh": np.array([[0.5], [0.25], [-0.75], [1.0]]),
         "blk.0.lstm.bias": np.array([0.125, -0.25, 0.5, -0.125]),
         "output.weight": np.array([[1.5], [-2.0]]), "output.bias": np.array([0.25, -0.5])}
    path = os.path.join(tmp, "hand.gguf")
    gguf_writer.write_lstm_model(path, hp, ["a", "b"], w, rng=np.random.default_rng(1))
    model = lstm_reference.Model(path)
    sig = lambda v: 1 / (1 + math.exp(-v))
    h = c = 0.0
    want = []
    for x in [1, 0, 0, 1]:
        e = w["token_embd.weight"][x][0]
        g = [w["blk.0.lstm.weight_ih"][k][0] * e + w["blk.0.lstm.bias"][k]
             + w["blk.0.lstm.weight_hh"][k][0] * h for k in range(4)]
        c = sig(g[1] + 0.25) * c + sig(g[0]) * math.tanh(g[2])
        h = sig(g[3]) * math.tanh(c)
        want.append([1.5 * h + 0.25, -2.0 * h - 0.5])
    got, run = lstm_reference.compute_logits(model, [1, 0, 0, 1])
    check(np.abs(got - np.array(want)).max() < 1e-15, "hand-computed one-unit LSTM")
    check(abs(run.state()[1][0][0] - c) < 1e-15, "hand-computed final cell")
    # the fingerprint's byte string, assembled by hand for this model (checksum of F32 bytes)
    data = b"".join(np.asarray(w[n], dtype="<f4").tobytes() for n in gguf_writer.lstm_tensor_names(1))
    checksum = xxhash.xxh64(data, seed=0).intdigest()
    blob = (b"FWMFP2" + struct.pack("<I", 4) + b"lstm" + struct.pack("<IIIII", 2, 1, 1, 1, 0)
            + struct.pack("<f", 0.25) + struct.pack("<II", 0, 1) + struct.pack("<I", 2)
            + struct.pack("<I", 1) + b"a" + struct.pack("<I", 1) + b"b" + struct.pack("<Q", checksum))
    check(model.checksum == checksum, "checksum: XXH64 of the F32 bytes in list order")
    check(model.fingerprint == xxhash.xxh64(blob, seed=0).intdigest(), "FWMFP2 by hand")
    check(model.prime_tokens == [1] and not model.has_prime_tokens, "default session start [eos]")


def refusals(tmp):
    spec = make_golden.LSTM_GOLDEN[1]  # L 2, H 8, prime [1, 5, 3], checksum, no fingerprint
    path = os.path.join(tmp, "r.gguf")

    def refused(what, needle, weights=None, patches=(), **changes):
        s = dict(spec, **changes)
        hp, vocab = make_golden.lstm_writer_hp(s)
        w = make_golden.make_lstm_weights(hp, np.random.default_rng(5))
        for k, v in (weights or {}).items():
            if v is None:
                del w[k]
            else:
                w[k] = v
        gguf_writer.write_lstm_model(path, hp, vocab, w, checksum=s["checksum"],
                                     fingerprint=s["fingerprint"], prime_tokens=s["prime"],
                                     decoy_keys=s.get("decoys", False), rng=np.random.default_rng(6),
                                     as_given=weights is not None)
        if patches:
            data = bytearray(open(path, "rb").read())
            for patch in patches:
                patch(data)
            open(path, "wb").write(data)
        try:
            lstm_reference.Model(path)
            check(needle is None, f"{what}: accepted")
        except FormatError as exc:
            check(needle is not None and needle in str(exc), f"{what}: refused with {exc!r}")

    def flip_last(data):
        data[-1] ^= 1

    def retype(key, new_type, skip=0):
        """Change the value type of `key` (skip > 0: the element type of an array key)."""
        def patch(data):
            needle = struct.pack("<Q", len(key)) + key.encode()
            pos = data.find(needle) + len(needle) + skip
            data[pos:pos + 4] = struct.pack("<I", new_type)
        return patch

    refused("a valid file", None)
    refused("decoy fwm.* keys", None, decoys=True)
    refused("a flipped tensor bit", "checksum mismatch", patches=[flip_last])
    refused("a flipped tensor bit, fingerprint only", "fingerprint mismatch", checksum=False,
            fingerprint=True, patches=[flip_last])
    refused("prime token out of range", "prime_tokens", prime=[1, 13])
    refused("missing tensor", "missing tensor blk.1.lstm.bias", weights={"blk.1.lstm.bias": None})
    refused("extra tensor", "unexpected tensor", weights={"blk.2.lstm.bias": np.zeros(32)})
    refused("a tensor of the wrong shape", "tensor blk.0.lstm.weight_hh",
            weights={"blk.0.lstm.weight_hh": np.zeros((32, 7))})
    refused("block_count as i32", "key lstm.block_count: type i32",
            patches=[retype("lstm.block_count", 5)])
    refused("prime tokens as an array of i32", "array of u32",
            patches=[retype("fwm.session.prime_tokens", 5, skip=4)])
    refused("forget_bias nan", "finite", forget_bias=float("nan"))
    refused("eos out of range", "eos_token_id", patches=[
        lambda d: d.__setitem__(slice(d.find(b"tokenizer.ggml.eos_token_id") + 31,
                                      d.find(b"tokenizer.ggml.eos_token_id") + 35),
                                struct.pack("<I", 13))])


def main():
    data_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "golden", "data")
    tmp = tempfile.mkdtemp(prefix="fwm-lstm-ref-")
    try:
        hand_check(tmp)
        refusals(tmp)
        # the committed models and their manifest lines
        with open(os.path.join(data_dir, "manifest.txt")) as f:
            lines = [ln.split() for ln in f if ln.strip() and not ln.startswith("#")]
        lstm_lines = [ln for ln in lines if "arch=lstm" in ln]
        check(len(lstm_lines) >= 5, f"{len(lstm_lines)} lstm models in the manifest")
        worst = 0.0
        for fields in lstm_lines:
            opts = dict(f.split("=", 1) for f in fields[2:])
            path = os.path.join(data_dir, fields[0])
            model = lstm_reference.Model(path)
            tokens = [int(t) for t in opts["tokens"].split(",")]
            V = model.hp["vocab_size"]
            want, _ = lstm_reference.compute_logits(model, tokens)
            committed = np.fromfile(os.path.join(data_dir, fields[1]), dtype="<f4").reshape(-1, V)
            tol = make_golden.tolerance(want)
            check(committed.shape == want.shape and (np.abs(committed - want) <= tol / 50).all(),
                  f"{fields[0]}: committed logits are the reference's")
            primed, _ = lstm_reference.compute_logits(model, tokens, primed=True)
            whole = np.fromfile(os.path.join(data_dir, opts["primed"]), dtype="<f4").reshape(-1, V)
            P = len(model.prime_tokens)
            check(whole.shape[0] == P + len(tokens) and (np.abs(whole[P:] - primed) <= tol / 50).all(),
                  f"{fields[0]}: committed primed logits are the reference's")
            check(int(opts["fingerprint"], 16) == model.fingerprint, f"{fields[0]}: fingerprint")
            check((opts["fingerprint_key"] == "present") == (model.stored_fingerprint is not None),
                  f"{fields[0]}: fingerprint_key")
            check((opts["checksum"] == "present") == model.has_checksum, f"{fields[0]}: checksum")
            hp, vocab = make_golden.lstm_writer_hp(dict(V=V, E=model.hp["embedding_length"],
                                                        H=model.hp["hidden_size"],
                                                        L=model.hp["layer_count"],
                                                        residual=model.hp["residual"],
                                                        forget_bias=model.hp["forget_bias"]))
            check(gguf_writer.lstm_fingerprint(hp, vocab, model.checksum) == model.fingerprint,
                  f"{fields[0]}: the writer's and the reader's FWMFP2 agree")
            if torch is not None:
                worst = max(worst, cross_check_torch(model, tokens, fields[0]))
                worst = max(worst, cross_check_torch(model, list(model.prime_tokens) + tokens,
                                                     fields[0] + " primed"))
        # random models, including a deep and a wide one
        if torch is not None:
            rng = np.random.default_rng(2024)
            for k in range(6):
                L = int(rng.integers(1, 6))
                spec = dict(name=f"r{k}", V=int(rng.integers(2, 25)), E=int(rng.integers(1, 12)),
                            H=int(rng.integers(1, 12)), L=L, residual=bool(rng.integers(0, 2)),
                            forget_bias=float(rng.uniform(-2, 2)), types="f32", order="shuffled",
                            checksum=True, fingerprint=True, prime=None, gaps=True)
                path = os.path.join(tmp, "rand.gguf")
                hp = make_golden.write_lstm(spec, path, rng, gain=float(rng.uniform(0.5, 4)))
                model = lstm_reference.Model(path)
                tokens = [int(t) for t in rng.integers(0, hp["V"], size=30)]
                worst = max(worst, cross_check_torch(model, tokens, f"random model {k} ({spec})"))
            print(f"test_lstm_reference: torch {torch.__version__}: worst |logit difference| {worst:.3g}")
        else:
            print("test_lstm_reference: torch is not installed: the PyTorch cross-check is skipped")
    finally:
        for name in os.listdir(tmp):
            os.unlink(os.path.join(tmp, name))
        os.rmdir(tmp)
    print(f"test_lstm_reference: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
