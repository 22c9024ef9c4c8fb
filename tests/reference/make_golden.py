#!/usr/bin/python3
"""make_golden.py - generate the committed tiny models (`fwm`, `lstm`, `mnm`, `gfw`, `stm`) and their
expected logits.

What it is for: writing tests/golden/data/ (model files through gguf_writer.py, expected logits
through fwm_reference.py in float64, stored as little-endian float32, and manifest.txt) from fixed
seeds, and checking that the data actually exercise the model: the Frobenius-norm clamp engages,
the reads produce non-trivial values, every non-default hyperparameter visibly changes the logits,
and the values are well-conditioned (float32 evaluations of the same reference stay far inside the
tests' tolerance). It is also the library of tiny-model helpers that tests/golden/check_live.py uses
for its random model. The `lstm`, `mnm`, `gfw` and `stm` models go through one driver
(_build_arch: the seeded attempts, the expected files, the manifest line); each architecture gives
its attempt and its session-start rows and fingerprint.

Run:  /usr/bin/python3 tests/reference/make_golden.py [--out tests/golden/data]
          [--only-fwm] [--only-lstm] [--only-mnm] [--only-gfw] [--only-stm]
      (with --only-* flags only those architectures' models are regenerated; the manifest's other
      lines are kept as they are, in the manifest's architecture order)
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fwm_reference  # noqa: E402
import gfw_reference  # noqa: E402
import gguf_writer  # noqa: E402
import lstm_reference  # noqa: E402
import mnm_reference  # noqa: E402
import stm_reference  # noqa: E402

# The tests' tolerance (tests/golden/test_golden.c and check_live.py use the same rule): a relative
# error of 1e-5 measured against the row's scale, the largest |logit| of the row,
#   |got - want| <= RTOL * max(max_j |want_j|, SCALE_FLOOR)
# A logit near zero is a sum of terms of the row's size, so its rounding error is of the row's
# size too; a purely element-wise relative rule would be meaningless for it.
RTOL = 1e-5
SCALE_FLOOR = 1e-3
# How much of the tolerance float32 evaluations of the reference may use up for data to be accepted.
MAX_F32_ERROR_FRACTION = 0.15

WORDS = ["<pad>", "<eos>", "mary", "moved", "to", "the", "bathroom", ".", "where", "is", "?",
         "john", "went", "garden", "hallway", "sandra", "n,w", "kitchen", "took", "apple",
         "daniel", "office", "back", "journeyed"]

PAPER_DEFAULTS = dict(forget_bias=1.0, beta_bias=1.0, eps=1e-5)  # write_scale: 1/T

# The committed models: every variant of the spec appears (see tests/golden/README.md).
GOLDEN = [
    dict(name="g1_always_nr1_res", V=13, E=7, H=9, S=3, R=5, T=4, Nr=1, residual=True,
         policy="always", types="f32", order="reversed", checksum=True, gaps=False,
         forget_bias=1.0, beta_bias=1.0, write_scale=1 / 4, eps=1e-5, n_tokens=48, seed=101),
    dict(name="g2_token_nr2_nores", V=17, E=11, H=13, S=5, R=3, T=5, Nr=2, residual=False,
         policy="token", types="f32", order="shuffled", checksum=False, gaps=True,
         forget_bias=1.0, beta_bias=1.0, write_scale=1 / 5, eps=1e-5, n_tokens=56, seed=202),
    dict(name="g3_always_nr3_nores_f16", V=19, E=5, H=15, S=8, R=4, T=8, Nr=3, residual=False,
         policy="always", types="f16", order="reversed", checksum=True, gaps=False,
         forget_bias=1.0, beta_bias=1.0, write_scale=1 / 8, eps=1e-5, n_tokens=44, seed=303),
    dict(name="g4_token_nr3_res_bf16", V=15, E=9, H=11, S=6, R=3, T=6, Nr=3, residual=True,
         policy="token", types="bf16", order="shuffled", checksum=True, gaps=True,
         forget_bias=1.0, beta_bias=1.0, write_scale=1 / 6, eps=1e-5, n_tokens=60, seed=404),
    dict(name="g5_always_nr2_res_mixed", V=20, E=24, H=23, S=6, R=4, T=6, Nr=2, residual=True,
         policy="always", order="reversed", checksum=False, gaps=True,
         types={"token_embd.weight": "bf16", "lstm.weight_hh": "f16", "fwm.write.weight": "f16",
                "fwm.read.bias": "bf16", "output.weight": "f16"},
         forget_bias=0.5, beta_bias=-0.25, write_scale=0.3, eps=1e-3, n_tokens=52, seed=505),
    dict(name="g6_token_nr1_nores", V=12, E=6, H=5, S=2, R=3, T=5, Nr=1, residual=False,
         policy="token", types="f32", order="canonical", checksum=True, gaps=False,
         forget_bias=1.5, beta_bias=0.5, write_scale=0.125, eps=1e-4, n_tokens=40, seed=606),
    # The stacked FWM (fwm.block_count = 3): two LSTM layers below the FWM's own.
    dict(name="g7_stacked_l3_nr2_res", V=14, E=6, H=8, S=4, R=3, T=4, Nr=2, residual=True, L=3,
         policy="always", order="shuffled", checksum=True, gaps=True,
         types={"blk.0.lstm.weight_ih": "f16", "blk.1.lstm.bias": "bf16", "lstm.weight_ih": "f16"},
         forget_bias=1.0, beta_bias=1.0, write_scale=1 / 4, eps=1e-5, n_tokens=48, seed=707),
]


def writer_hp(spec):
    """The gguf_writer.py hyperparameter dict and the vocabulary of a model spec."""
    vocab = WORDS[:spec["V"]]
    return dict(V=spec["V"], E=spec["E"], H=spec["H"], S=spec["S"], R=spec["R"], T=spec["T"],
                Nr=spec["Nr"], residual=spec["residual"], policy=spec["policy"],
                read_token=vocab.index("?"), forget_bias=spec["forget_bias"],
                beta_bias=spec["beta_bias"], write_scale=spec["write_scale"], eps=spec["eps"],
                pad=0, eos=1, L=spec.get("L", 1)), vocab


def make_weights(hp, rng, write_gain=4.0, read_gain=3.0, lstm_gain=1.5):
    """Weights initialised as the spec's table says, with gains that make keys and values large
    enough for the Frobenius-norm clamp to engage, and non-zero biases everywhere (a bias read with
    the wrong offset must show)."""
    V, E, H, S, R, T, Nr = (hp[k] for k in ("V", "E", "H", "S", "R", "T", "Nr"))

    def uni(shape, a):
        return rng.uniform(-a, a, size=shape)

    k = 1 / np.sqrt(H)
    a_mem = np.sqrt(6 / (H + S))
    L = hp.get("L", 1)
    weights = {
        "token_embd.weight": rng.normal(0, 1, size=(V, E)),
        "lstm.weight_ih": uni((4 * H, E if L == 1 else H), lstm_gain * k),
        "lstm.weight_hh": uni((4 * H, H), lstm_gain * k),
        "lstm.bias": uni((4 * H,), 0.3),
        "fwm.write.weight": uni((S + R + T + 1, H), write_gain * a_mem),
        "fwm.write.bias": uni((S + R + T + 1,), k),
        "fwm.read.weight": uni((S + Nr * R, H), read_gain * a_mem),
        "fwm.read.bias": uni((S + Nr * R,), k),
        "fwm.out.weight": uni((H, T), 1 / np.sqrt(T)),
        "fwm.out.bias": uni((H,), 1 / np.sqrt(T)),
        "output.weight": rng.normal(0, np.sqrt(2 / (V + H)), size=(V, H)),
    }
    for l in range(L - 1):  # a stacked FWM's lower layers, drawn after the rest
        weights[f"blk.{l}.lstm.weight_ih"] = uni((4 * H, E if l == 0 else H), lstm_gain * k)
        weights[f"blk.{l}.lstm.weight_hh"] = uni((4 * H, H), lstm_gain * k)
        weights[f"blk.{l}.lstm.bias"] = uni((4 * H,), 0.3)
    return weights


def make_tokens(hp, rng, n):
    """<eos> first, then random words with the read token ("?") every 3 to 8 tokens."""
    V, q = hp["V"], hp["read_token"]
    tokens = [hp["eos"]]
    while len(tokens) < n:
        tokens += list(rng.integers(0, V, size=int(rng.integers(2, 8))))
        tokens.append(q)
    return [int(t) for t in tokens[:n]]


def tolerance(want):
    """Per-element tolerance of a [n, V] array of expected logits (see RTOL above)."""
    row = np.abs(want).max(axis=1, keepdims=True)
    return RTOL * np.maximum(row, SCALE_FLOOR) * np.ones_like(want)


def _error_over_tol(got, want):
    return float((np.abs(got - want) / tolerance(want)).max())


def analyse(model, tokens, rng):
    """Reference logits (float64) plus the facts check_facts() judges; returns (logits, facts)."""
    hp = model.hp
    logits, trace = fwm_reference.compute_logits(model, tokens, np.float64)
    # Conditioning: a float32 evaluation, and float64 ones with every weight moved by up to one
    # float32 rounding step, estimate what an exact-to-float32 implementation may differ by.
    errors = [_error_over_tol(fwm_reference.compute_logits(model, tokens, np.float32)[0], logits)]
    for _ in range(4):
        nudged = {k: v * (1 + rng.uniform(-1, 1, v.shape) * 2.0 ** -24) for k, v in model.w.items()}
        errors.append(_error_over_tol(
            fwm_reference.compute_logits(model, tokens, np.float64, weights=nudged)[0], logits))
    # Every hyperparameter that differs from the paper's value must visibly matter.
    hp_effect = {}
    defaults = dict(PAPER_DEFAULTS, write_scale=1.0 / hp["t"])
    names = dict(forget_bias="forget_bias", beta_bias="beta_bias", write_scale="write_scale",
                 eps="layer_norm_eps")
    for key, name in names.items():
        if abs(hp[name] - defaults[key]) > 1e-6 * abs(defaults[key]):
            other = fwm_reference.compute_logits(model, tokens, np.float64,
                                                 hp_override={name: defaults[key]})[0]
            hp_effect[name] = _error_over_tol(other, logits)
    # A stacked FWM: each lower layer's recurrent weights must visibly matter.
    for l in range(hp.get("block_count", 1) - 1):
        name = f"blk.{l}.lstm.weight_hh"
        other = fwm_reference.compute_logits(model, tokens, np.float64,
                                             weights=dict(model.w, **{name: 0 * model.w[name]}))[0]
        hp_effect[name] = _error_over_tol(other, logits)
    read_steps = [t for t in trace if t["read"]]
    facts = {
        "clamp_steps": sum(1 for t in trace if t["norm"] > 1.0),
        "max_norm": max(t["norm"] for t in trace),
        "read_steps": len(read_steps),
        # LN output std is sqrt(var / (var + eps)): near 1 when the read is not dominated by eps
        "nontrivial_reads": sum(1 for t in read_steps if t["q_std"] > 0.5),
        "f32_error_over_tol": max(errors),
        "hp_effect_over_tol": hp_effect,
        "max_abs_logit": float(np.abs(logits).max()),
    }
    return logits, facts


def check_facts(name, facts, require_clamp=True):
    """The golden data must exercise the model; returns a list of problems (empty when fine)."""
    problems = []
    if require_clamp and facts["clamp_steps"] < 3:
        problems.append(f"{name}: the Frobenius-norm clamp engaged at only {facts['clamp_steps']} "
                        f"steps (max norm {facts['max_norm']:.3f})")
    if facts["read_steps"] < 4:
        problems.append(f"{name}: only {facts['read_steps']} read steps")
    if facts["nontrivial_reads"] < 0.9 * facts["read_steps"]:
        problems.append(f"{name}: only {facts['nontrivial_reads']} of {facts['read_steps']} reads "
                        "give a layer-norm output with std > 0.5")
    if facts["f32_error_over_tol"] > MAX_F32_ERROR_FRACTION:
        problems.append(f"{name}: float32 rounding may use {facts['f32_error_over_tol']:.2f} of "
                        "the tolerance (ill-conditioned)")
    for hp_name, effect in facts["hp_effect_over_tol"].items():
        if effect < 100:
            problems.append(f"{name}: {hp_name} changes the logits by only {effect:.1f} tolerances")
    if facts["max_abs_logit"] < 0.05:
        problems.append(f"{name}: logits are all tiny")
    return problems


def build(spec, out_dir, attempts=200):
    """Write one model and its expected logits. The weights and tokens come from spec['seed']; when
    the data fail check_facts (mostly: an ill-conditioned read somewhere in the sequence), the next
    seed is tried, deterministically. Returns (manifest line, facts, seed used, problems)."""
    hp, vocab = writer_hp(spec)
    model_file = spec["name"] + ".gguf"
    path = os.path.join(out_dir, model_file)
    for attempt in range(attempts):
        seed = spec["seed"] * 1000 + attempt
        rng = np.random.default_rng(seed)
        weights = make_weights(hp, rng, **spec.get("gains", {}))
        gguf_writer.write_model(path, hp, vocab, weights, types=spec["types"],
                                order=spec["order"], checksum=spec["checksum"], gaps=spec["gaps"],
                                name=spec["name"], rng=rng)
        model = fwm_reference.Model(path)  # re-read: verifies the checksum, uses the stored values
        tokens = make_tokens(hp, rng, spec["n_tokens"])
        logits, facts = analyse(model, tokens, rng)
        problems = check_facts(spec["name"], facts, spec.get("require_clamp", True))
        if not problems:
            break
    expected_file = spec["name"] + ".f32"
    logits.astype("<f4").tofile(os.path.join(out_dir, expected_file))
    line = (f"{model_file} {expected_file} checksum={'present' if spec['checksum'] else 'absent'} "
            f"tokens={','.join(map(str, tokens))}")
    return line, facts, seed, problems


def describe(name, n_tokens, facts, seed):
    effects = ", ".join(f"{k} {v:.0f}" for k, v in facts["hp_effect_over_tol"].items())
    return (f"{name}: seed {seed}; clamp at {facts['clamp_steps']}/{n_tokens} steps (max norm "
            f"{facts['max_norm']:.2f}); {facts['read_steps']} reads, {facts['nontrivial_reads']} "
            f"non-trivial; float32 rounding uses {facts['f32_error_over_tol']:.3f} of the tolerance; "
            f"max |logit| {facts['max_abs_logit']:.2f}"
            + (f"; effect in tolerances of {effects}" if effects else ""))


# ---- the `lstm` architecture ----------------------------------------------------------------------

# The committed LSTM models (tests/golden/README.md): one, two and three layers, residual on and
# off (on with E == H for one layer: layer 0 never adds its input), forget_bias other than 1, F32,
# F16, BF16 and mixed tensors, checksum and fingerprint keys present or absent, decoy fwm.* keys,
# and session starts: the default ([eos]), three tokens, none, seven.
LSTM_MIXED = {"token_embd.weight": "bf16", "blk.0.lstm.weight_hh": "f16", "blk.1.lstm.weight_ih": "bf16",
              "blk.1.lstm.bias": "f16", "blk.2.lstm.weight_hh": "bf16", "output.weight": "f16",
              "output.bias": "bf16"}
LSTM_GOLDEN = [
    dict(name="lstm1_res_eqdim", V=12, E=6, H=6, L=1, residual=True, forget_bias=1.0, types="f32",
         order="reversed", checksum=True, fingerprint=True, prime=None, gaps=False, n_tokens=40,
         seed=701),
    dict(name="lstm2_res_f16", V=13, E=7, H=8, L=2, residual=True, forget_bias=1.0, types="f16",
         order="shuffled", checksum=True, fingerprint=False, prime=[1, 5, 3], gaps=True,
         n_tokens=48, seed=702),
    dict(name="lstm3_nores_bf16", V=12, E=5, H=4, L=3, residual=False, forget_bias=0.5,
         types="bf16", order="reversed", checksum=False, fingerprint=False, prime=None, gaps=False,
         n_tokens=44, seed=703),
    dict(name="lstm3_res_mixed", V=14, E=8, H=7, L=3, residual=True, forget_bias=-0.75,
         types=LSTM_MIXED, order="canonical", checksum=False, fingerprint=True, prime=[], gaps=True,
         decoys=True, n_tokens=52, seed=704),
    dict(name="lstm2_nores_f32", V=12, E=8, H=5, L=2, residual=False, forget_bias=2.0,
         types="f32", order="shuffled", checksum=True, fingerprint=True,
         prime=[1, 2, 3, 4, 5, 6, 7], gaps=True, n_tokens=36, seed=705),
]


def lstm_writer_hp(spec):
    """The gguf_writer.py hyperparameter dict and the vocabulary of an LSTM model spec."""
    return dict(V=spec["V"], E=spec["E"], H=spec["H"], L=spec["L"], residual=spec["residual"],
                forget_bias=spec["forget_bias"], pad=0, eos=1), WORDS[:spec["V"]]


def make_lstm_weights(hp, rng, gain=2.0):
    """Embeddings N(0, 1), LSTM weights U(-gain/sqrt(H), gain/sqrt(H)) (PyTorch's default times a
    gain, so that gates move over their whole range without saturating), non-zero biases
    everywhere (a bias read with the wrong offset must show)."""
    V, E, H, L = hp["V"], hp["E"], hp["H"], hp["L"]
    k = gain / np.sqrt(H)
    w = {"token_embd.weight": rng.normal(0, 1, size=(V, E))}
    for layer in range(L):
        w[f"blk.{layer}.lstm.weight_ih"] = rng.uniform(-k, k, size=(4 * H, E if layer == 0 else H))
        w[f"blk.{layer}.lstm.weight_hh"] = rng.uniform(-k, k, size=(4 * H, H))
        w[f"blk.{layer}.lstm.bias"] = rng.uniform(-0.5, 0.5, size=4 * H)
    w["output.weight"] = rng.normal(0, np.sqrt(2 / (V + H)) * 2, size=(V, H))
    w["output.bias"] = rng.uniform(-0.5, 0.5, size=V)
    return w


def make_lstm_tokens(hp, rng, n):
    """<eos> first, then random tokens."""
    return [hp["eos"]] + [int(t) for t in rng.integers(0, hp["V"], size=n - 1)]


def analyse_lstm(model, tokens, rng):
    """Reference logits (float64, from zero) plus the facts check_lstm_facts() judges."""
    hp = model.hp
    L = hp["layer_count"]
    logits, run = lstm_reference.compute_logits(model, tokens)
    errors = [_error_over_tol(lstm_reference.compute_logits(model, tokens, np.float32)[0], logits)]
    for _ in range(4):
        nudged = {k: v * (1 + rng.uniform(-1, 1, v.shape) * 2.0 ** -24) for k, v in model.w.items()}
        errors.append(_error_over_tol(
            lstm_reference.compute_logits(model, tokens, weights=nudged)[0], logits))
    effects = {}
    if abs(hp["forget_bias"] - 1.0) > 1e-6:
        effects["forget_bias"] = _error_over_tol(lstm_reference.compute_logits(
            model, tokens, hp_override={"forget_bias": 1.0})[0], logits)
    if hp["residual"] and hp["embedding_length"] == hp["hidden_size"]:
        # the data must catch a runtime that lets layer 0 add its input (the embedding) too
        effects["a residual at layer 0"] = _error_over_tol(lstm_reference.compute_logits(
            model, tokens, hp_override={"residual_first_layer": 0})[0], logits)
    if L >= 2:
        effects["residual"] = _error_over_tol(lstm_reference.compute_logits(
            model, tokens, hp_override={"residual": not hp["residual"]})[0], logits)
    for layer in range(L):  # every layer's recurrence carries information
        w = dict(model.w)
        w[f"blk.{layer}.lstm.weight_hh"] = np.zeros_like(w[f"blk.{layer}.lstm.weight_hh"])
        effects[f"weight_hh of layer {layer}"] = _error_over_tol(
            lstm_reference.compute_logits(model, tokens, weights=w)[0], logits)
    if model.prime_tokens:
        effects["the prime tokens"] = _error_over_tol(
            lstm_reference.compute_logits(model, tokens, primed=True)[0], logits)
    # gates in their sensitive range: sigmoid in (0.02, 0.98), tanh(g_z) in (-0.98, 0.98)
    live = []
    for layer in range(L):
        acts = [np.concatenate([step[layer][g] for step in run.trace]) for g in "ifo"]
        z = np.concatenate([step[layer]["z"] for step in run.trace])
        fr = [float(((a > 0.02) & (a < 0.98)).mean()) for a in acts] + [float((np.abs(z) < 0.98).mean())]
        live.append(min(fr))
    facts = {
        "f32_error_over_tol": max(errors),
        "effect_over_tol": effects,
        "live_gate_fraction": min(live),
        "max_abs_logit": float(np.abs(logits).max()),
    }
    return logits, facts


def _arch_problems(name, facts, own):
    """What the data of the `lstm`, `mnm`, `gfw` and `stm` models are checked for: well-conditioned
    for float32, every effect at least 100 tolerances, then the architecture's own problems (`own`),
    then logits not all tiny."""
    problems = []
    if facts["f32_error_over_tol"] > MAX_F32_ERROR_FRACTION:
        problems.append(f"{name}: float32 rounding may use {facts['f32_error_over_tol']:.2f} of "
                        "the tolerance (ill-conditioned)")
    for what, effect in facts["effect_over_tol"].items():
        if effect < 100:
            problems.append(f"{name}: {what} changes the logits by only {effect:.1f} tolerances")
    problems += own
    if facts["max_abs_logit"] < 0.05:
        problems.append(f"{name}: logits are all tiny")
    return problems


def check_lstm_facts(name, facts):
    own = []
    if facts["live_gate_fraction"] < 0.6:
        own.append(f"{name}: only {facts['live_gate_fraction']:.2f} of some gate's values are "
                   "outside saturation")
    return _arch_problems(name, facts, own)


def write_lstm(spec, path, rng, gain=2.0):
    """Write the LSTM model of `spec` with weights from rng; returns the writer's hp dict."""
    hp, vocab = lstm_writer_hp(spec)
    weights = make_lstm_weights(hp, rng, gain)
    gguf_writer.write_lstm_model(path, hp, vocab, weights, types=spec["types"], order=spec["order"],
                                 checksum=spec["checksum"], fingerprint=spec["fingerprint"],
                                 prime_tokens=spec["prime"], decoy_keys=spec.get("decoys", False),
                                 gaps=spec["gaps"], name=spec["name"], rng=rng)
    return hp


def _build_arch(spec, out_dir, attempts, arch, attempt_fn, finish_fn):
    """The per-architecture golden model driver (lstm, mnm, gfw, stm): up to `attempts` seeds
    (spec["seed"] * 1000 + attempt) of attempt_fn(spec, path, rng) -> (state, tokens, logits,
    facts, problems), stopping at the first without problems; then the expected rows from the
    reset state (NAME.f32) and finish_fn(spec, path, state, tokens) -> (rows from the session
    start, fingerprint, checksum key present, fingerprint key present) into NAME.primed.f32 and
    the manifest line. Returns (manifest line, facts, seed used, problems)."""
    model_file = spec["name"] + ".gguf"
    path = os.path.join(out_dir, model_file)
    for attempt in range(attempts):
        seed = spec["seed"] * 1000 + attempt
        rng = np.random.default_rng(seed)
        state, tokens, logits, facts, problems = attempt_fn(spec, path, rng)
        if not problems:
            break
    expected_file = spec["name"] + ".f32"
    logits.astype("<f4").tofile(os.path.join(out_dir, expected_file))
    primed_file = spec["name"] + ".primed.f32"
    primed, fingerprint, checksum_key, fingerprint_key = finish_fn(spec, path, state, tokens)
    primed.astype("<f4").tofile(os.path.join(out_dir, primed_file))
    line = (f"{model_file} {expected_file} checksum={'present' if checksum_key else 'absent'} "
            f"tokens={','.join(map(str, tokens))} arch={arch} "
            f"fingerprint={fingerprint:#018x} "
            f"fingerprint_key={'present' if fingerprint_key else 'absent'} "
            f"primed={primed_file}")
    return line, facts, seed, problems


def _session_start(spec):
    """The tokens a session of spec's model reads first: [eos] without the key."""
    return [1] if spec["prime"] is None else list(spec["prime"])


def _stored_fingerprint(path):
    """The fingerprint the writer stored in the file at path."""
    meta, _ = fwm_reference.read_gguf(path)
    return meta["fwm.fingerprint"][1]


def _describe_arch(name, facts, seed, middle):
    """A model's line of the generator's report: seed, float32 rounding, the architecture's own
    figures (`middle`), max |logit| and the effects."""
    effects = ", ".join(f"{k} {v:.0f}" for k, v in facts["effect_over_tol"].items())
    return (f"{name}: seed {seed}; float32 rounding uses {facts['f32_error_over_tol']:.3f} of the "
            f"tolerance; {middle}max |logit| {facts['max_abs_logit']:.2f}; effect in tolerances of "
            f"{effects}")


def _lstm_attempt(spec, path, rng):
    hp = write_lstm(spec, path, rng)
    model = lstm_reference.Model(path)  # re-read: verifies the hashes, uses the stored values
    tokens = make_lstm_tokens(hp, rng, spec["n_tokens"])
    logits, facts = analyse_lstm(model, tokens, rng)
    return model, tokens, logits, facts, check_lstm_facts(spec["name"], facts)


def _lstm_finish(spec, path, model, tokens):
    primed, _ = lstm_reference.compute_logits(model, list(model.prime_tokens) + tokens)
    return primed, model.fingerprint, spec["checksum"], spec["fingerprint"]


def build_lstm(spec, out_dir, attempts=50):
    """Write one LSTM model, its expected logits from zero (NAME.f32) and from the session start
    (NAME.primed.f32: the rows of the prime tokens, then those of the tokens). Returns (manifest
    line, facts, seed used, problems)."""
    return _build_arch(spec, out_dir, attempts, "lstm", _lstm_attempt, _lstm_finish)


def describe_lstm(name, facts, seed):
    return _describe_arch(name, facts, seed,
                          f"live gate fraction {facts['live_gate_fraction']:.2f}; ")


# ---- the `mnm` architecture ----------------------------------------------------------------------

# The committed MNM models (tests/golden/README.md), written by mnm_reference.py's own writer: one,
# two and three memory layers, one to three heads, forget_bias 0 and not, F32, F16, BF16 and mixed
# tensors, and session starts: the default ([eos]), three tokens, none, five.
MNM_MIXED = {"token_embd.weight": "bf16", "lstm.weight_ih": "f16", "mnm.interact.weight": "bf16",
             "mnm.rate.bias": "f16", "mnm.target.weight": "f16", "mnm.memory.0.init": "bf16",
             "mnm.memory.1.init": "f16", "mnm.out.weight": "bf16", "output.bias": "f16"}
MNM_GOLDEN = [
    dict(name="mnm1_h1_f32", V=12, E=5, H=6, Nh=1, dk=4, dv=5, D=3, Lm=1, do=7, forget_bias=0.0,
         types="f32", prime=None, n_tokens=40, seed=801),
    dict(name="mnm2_h2_f16", V=13, E=6, H=7, Nh=2, dk=5, dv=4, D=6, Lm=2, do=5, forget_bias=1.0,
         types="f16", prime=[1, 5, 3], n_tokens=44, seed=802),
    dict(name="mnm3_h3_bf16", V=12, E=4, H=8, Nh=3, dk=6, dv=3, D=5, Lm=3, do=6, forget_bias=-0.5,
         types="bf16", prime=[], n_tokens=36, seed=803),
    dict(name="mnm3_h2_mixed", V=14, E=7, H=9, Nh=2, dk=4, dv=6, D=7, Lm=3, do=8, forget_bias=0.75,
         types=MNM_MIXED, prime=[1, 2, 3, 4, 5], n_tokens=48, seed=804),
]


def mnm_writer_hp(spec):
    """mnm_reference's hyperparameter dict and the vocabulary of an MNM model spec."""
    hp = mnm_reference.default_hparams(
        vocab_size=spec["V"], embedding_length=spec["E"], hidden_size=spec["H"],
        head_count=spec["Nh"], key_length=spec["dk"], value_length=spec["dv"],
        memory_hidden=spec["D"], memory_layers=spec["Lm"], output_length=spec["do"],
        forget_bias=spec["forget_bias"], padding_token_id=0, eos_token_id=1)
    return hp, WORDS[:spec["V"]]


def make_mnm_weights(hp, rng, gain=2.0):
    """The spec's initialisation (mnm_reference.init_params) with the controller, interaction, target
    and initial-memory weights scaled by `gain`, so that keys and values are large enough for the
    write to move the memory visibly, and non-zero biases everywhere; the rate bias raised so that
    beta is well away from zero."""
    w = {k: np.array(v, dtype=np.float64) for k, v in mnm_reference.init_params(hp, rng).items()}
    for k in w:
        if k != "token_embd.weight":
            w[k] = w[k] * gain
        if k.endswith(".bias"):
            w[k] = w[k] + rng.uniform(-0.3, 0.3, size=w[k].shape)
    w["mnm.rate.bias"] = w["mnm.rate.bias"] + 1.0
    return w


def _mnm_logits(hp, params, tokens):
    return mnm_reference.forward(hp, params, tokens)[0]


def analyse_mnm(hp, params, tokens, prime, rng):
    """Reference logits (float64, from the reset state) plus the facts check_mnm_facts() judges."""
    logits = _mnm_logits(hp, params, tokens)
    errors = []
    for _ in range(4):
        nudged = {k: v * (1 + rng.uniform(-1, 1, v.shape) * 2.0 ** -24) for k, v in params.items()}
        errors.append(_error_over_tol(_mnm_logits(hp, nudged, tokens), logits))
    effects = {}
    no_write = dict(params)
    no_write["mnm.rate.bias"] = np.full_like(params["mnm.rate.bias"], -60.0)
    effects["the write"] = _error_over_tol(_mnm_logits(hp, no_write, tokens), logits)
    for l in range(hp["memory_layers"]):
        other = dict(params)
        other[f"mnm.memory.{l}.init"] = params[f"mnm.memory.{l}.init"] * 0.5
        effects[f"the initial memory {l}"] = _error_over_tol(_mnm_logits(hp, other, tokens), logits)
    if abs(hp["forget_bias"]) > 1e-6:
        effects["forget_bias"] = _error_over_tol(
            _mnm_logits(dict(hp, forget_bias=0.0), params, tokens), logits)
    no_read = dict(params)
    no_read["lstm.weight_ih"] = params["lstm.weight_ih"].copy()
    no_read["lstm.weight_ih"][:, hp["embedding_length"]:] = 0
    effects["r in the controller"] = _error_over_tol(_mnm_logits(hp, no_read, tokens), logits)
    if prime:
        effects["the prime tokens"] = _error_over_tol(_mnm_logits(hp, params, list(prime) + tokens)[len(prime):],
                                                      logits)
    betas = []
    state = mnm_reference.reset_state(hp, params)
    for t in tokens:
        _, state, aux = mnm_reference.step(hp, params, state, int(t))
        betas.append(aux["beta"])
    facts = {
        "f32_error_over_tol": max(errors),
        "effect_over_tol": effects,
        "min_beta": float(min(betas)),
        "max_abs_logit": float(np.abs(logits).max()),
    }
    return logits, facts


def check_mnm_facts(name, facts):
    own = []
    if facts["min_beta"] < 0.2:
        own.append(f"{name}: the update rate falls to {facts['min_beta']:.2f}")
    return _arch_problems(name, facts, own)


def _mnm_attempt(spec, path, rng):
    hp, vocab = mnm_writer_hp(spec)
    weights = make_mnm_weights(hp, rng)
    mnm_reference.write_model(path, hp, vocab, weights, name=spec["name"], types=spec["types"],
                              prime_tokens=spec["prime"])
    _, _, params = mnm_reference.read_model(path)  # re-read: the stored (rounded) values
    tokens = [1] + [int(t) for t in rng.integers(0, hp["vocab_size"], size=spec["n_tokens"] - 1)]
    logits, facts = analyse_mnm(hp, params, tokens, spec["prime"], rng)
    return (hp, params), tokens, logits, facts, check_mnm_facts(spec["name"], facts)


def _mnm_finish(spec, path, state, tokens):
    hp, params = state
    primed = _mnm_logits(hp, params, _session_start(spec) + tokens)
    return primed, _stored_fingerprint(path), True, True


def build_mnm(spec, out_dir, attempts=50):
    """Write one MNM model with mnm_reference.write_model, its expected logits from the reset state
    (NAME.f32) and from the session start (NAME.primed.f32: the rows of the prime tokens, then those
    of the tokens; the start is [eos] without the key). Returns (manifest line, facts, seed used,
    problems)."""
    return _build_arch(spec, out_dir, attempts, "mnm", _mnm_attempt, _mnm_finish)


def describe_mnm(name, facts, seed):
    return _describe_arch(name, facts, seed, f"min beta {facts['min_beta']:.2f}; ")

# ---- the `gfw` architecture ----------------------------------------------------------------------

# The committed Gated Fast Weights models (tests/golden/README.md), written by gguf_writer.py (an
# independent writer; gfw_reference.py reads them): the smallest fast net (m = 2) and larger ones,
# epsilon at its default and not, F32, F16, BF16 and mixed tensors in every order, checksum and
# fingerprint keys present or absent, and session starts: the default ([eos]), three tokens, none,
# five. The recurrence is chaotic with large weights (docs/MODEL.md, ambiguity 9), so the weights
# stay at the initialisation's scale and the streams are short.
GFW_MIXED = {"token_embd.weight": "bf16", "gfw.slow.0.weight": "f16", "gfw.slow.1.bias": "bf16",
             "gfw.slow.1.weight": "f16", "output.bias": "f16"}
GFW_GOLDEN = [
    dict(name="gfw1_f32", V=12, E=5, m=4, N=6, P=8, eps=1e-5, types="f32", order="reversed",
         checksum=True, fingerprint=True, prime=None, gaps=False, n_tokens=32, seed=901),
    dict(name="gfw2_eps_f16", V=13, E=6, m=7, N=5, P=9, eps=1e-3, types="f16", order="shuffled",
         checksum=True, fingerprint=False, prime=[1, 5, 3], gaps=True, n_tokens=28, seed=902),
    dict(name="gfw3_bf16", V=15, E=15, m=10, N=8, P=12, eps=1e-5, types="bf16", order="reversed",
         checksum=False, fingerprint=False, prime=[], gaps=False, n_tokens=24, seed=903),
    dict(name="gfw4_m2_mixed", V=14, E=4, m=2, N=3, P=5, eps=1e-5, types=GFW_MIXED,
         order="canonical", checksum=False, fingerprint=True, prime=[1, 2, 3, 4, 5], gaps=True,
         n_tokens=30, seed=904),
]


def gfw_writer_hp(spec):
    """The gguf_writer.py hyperparameter dict and the vocabulary of a GFW model spec."""
    return dict(V=spec["V"], E=spec["E"], m=spec["m"], N=spec["N"], P=spec["P"], eps=spec["eps"],
                pad=0, eos=1), WORDS[:spec["V"]]


def make_gfw_weights(whp, rng, gain=1.5):
    """The spec's initialisation (gfw_reference.init_params: Glorot-uniform matrices) with the slow
    net's weights scaled by `gain`, so that the update gates and candidates move visibly, and
    non-zero biases everywhere (a bias read with the wrong offset must show)."""
    hp = gfw_reference.default_hparams(vocab_size=whp["V"], embedding_length=whp["E"],
                                       fast_hidden=whp["m"], slow_hidden=whp["N"],
                                       slow_inner=whp["P"])
    w = {k: np.array(v, dtype=np.float64) for k, v in gfw_reference.init_params(hp, rng).items()}
    for k in ("gfw.slow.0.weight", "gfw.slow.1.weight"):
        w[k] = w[k] * gain
    for k in w:
        if k.endswith(".bias"):
            w[k] = w[k] + rng.uniform(-0.3, 0.3, size=w[k].shape)
    return w


def _gfw_logits(hp, params, tokens):
    return gfw_reference.forward(hp, params, tokens)[0]


def _gfw_logits_f32(hp, params, tokens):
    """docs/MODEL.md's step evaluated in float32 throughout (weights, activations, state), for the
    conditioning estimate only: unlike nudged float64 weights it also rounds every intermediate,
    which is what an exact-to-float32 implementation does."""
    f = np.float32
    P = {k: np.asarray(v, dtype=f) for k, v in params.items()}
    m, N = hp["fast_hidden"], hp["slow_hidden"]
    eps = f(hp["layer_norm_epsilon"])
    s = gfw_reference.sizes(hp)
    one = np.ones(1, dtype=f)

    def ln(v):
        mu = v.mean(dtype=f)
        return (v - mu) / np.sqrt(((v - mu) ** 2).mean(dtype=f) + eps)

    def gate(F, u, rows, cols):
        a, b = np.tanh(u[:rows]), np.tanh(u[rows:rows + cols])
        g = f(1) / (f(1) + np.exp(-u[rows + cols:2 * rows + cols]))
        d = f(1) / (f(1) + np.exp(-u[2 * rows + cols:]))
        T = np.outer(g, d)
        return T * np.outer(a, b) + (f(1) - T) * F

    hF, hS = np.zeros(m, dtype=f), np.zeros(N, dtype=f)
    F1, F2 = np.zeros((m, s["f1_cols"]), dtype=f), np.zeros((m, s["f2_cols"]), dtype=f)
    out = []
    for t in tokens:
        e = P["token_embd.weight"][int(t)]
        a = ln(np.tanh(F1 @ np.concatenate([hF, e, one])))
        hF = ln(np.tanh(F2 @ np.concatenate([a, one])))
        out.append(P["output.weight"] @ hF + P["output.bias"])
        sv = np.tanh(P["gfw.slow.0.weight"] @ np.concatenate([hS, e]) + P["gfw.slow.0.bias"])
        o = P["gfw.slow.1.weight"] @ sv + P["gfw.slow.1.bias"]
        hS = np.tanh(o[:N])
        F1 = gate(F1, o[N:N + s["u1"]], m, s["f1_cols"])
        F2 = gate(F2, o[N + s["u1"]:], m, s["f2_cols"])
    return np.array(out, dtype=np.float64)


def analyse_gfw(hp, params, tokens, prime, rng):
    """Reference logits (float64, from the zero state) plus the facts check_gfw_facts() judges."""
    logits = _gfw_logits(hp, params, tokens)
    errors = [_error_over_tol(_gfw_logits_f32(hp, params, tokens), logits)]
    for _ in range(4):
        nudged = {k: v * (1 + rng.uniform(-1, 1, v.shape) * 2.0 ** -24) for k, v in params.items()}
        errors.append(_error_over_tol(_gfw_logits(hp, nudged, tokens), logits))
    m, N, E = hp["fast_hidden"], hp["slow_hidden"], hp["embedding_length"]
    sizes = gfw_reference.sizes(hp)
    effects = {}
    for what, first, count in (("the F1 update", N, sizes["u1"]), ("the F2 update", N + sizes["u1"], sizes["u2"])):
        other = dict(params)
        for k in ("gfw.slow.1.weight", "gfw.slow.1.bias"):
            other[k] = params[k].copy()
            other[k][first:first + count] = 0
        effects[what] = _error_over_tol(_gfw_logits(hp, other, tokens), logits)
    no_hs = dict(params)
    no_hs["gfw.slow.0.weight"] = params["gfw.slow.0.weight"].copy()
    no_hs["gfw.slow.0.weight"][:, :N] = 0
    effects["h_S in the slow net"] = _error_over_tol(_gfw_logits(hp, no_hs, tokens), logits)
    # the bias columns of F1 and F2 (the last beta and delta of each update)
    no_bias = dict(params)
    no_bias["gfw.slow.1.bias"] = params["gfw.slow.1.bias"].copy()
    no_bias["gfw.slow.1.weight"] = params["gfw.slow.1.weight"].copy()
    c1, c2 = sizes["f1_cols"], sizes["f2_cols"]
    for row in (N + m + c1 - 1, N + sizes["u1"] + m + c2 - 1):
        no_bias["gfw.slow.1.bias"][row] = -40.0  # beta -> tanh = -1: a different bias column
        no_bias["gfw.slow.1.weight"][row] = 0
    effects["the fast layers' bias columns"] = _error_over_tol(_gfw_logits(hp, no_bias, tokens), logits)
    if abs(hp["layer_norm_epsilon"] - 1e-5) > 1e-9:
        effects["layer_norm_epsilon"] = _error_over_tol(
            _gfw_logits(dict(hp, layer_norm_epsilon=1e-5), params, tokens), logits)
    if prime:
        effects["the prime tokens"] = _error_over_tol(
            _gfw_logits(hp, params, list(prime) + tokens)[len(prime):], logits)
    # the fast net's pre-norm spread after the first step (a layer norm of a near-constant vector
    # would make the data ill-conditioned), and the update gates' range
    state = gfw_reference.reset_state(hp)
    P = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    stds, gates = [], []
    for t in tokens:
        e = P["token_embd.weight"][int(t)]
        if np.abs(state["F1"]).max() > 0:
            pre = np.tanh(state["F1"] @ np.concatenate([state["hF"], e, [1.0]]))
            stds.append(float(pre.std()))
        _, state, aux = gfw_reference.step(hp, P, state, int(t))
        o = aux["o"]
        gamma = o[N + m + c1:N + 2 * m + c1]
        gates.append(float(np.mean(1 / (1 + np.exp(-gamma)))))
    facts = {
        "f32_error_over_tol": max(errors),
        "effect_over_tol": effects,
        "min_pre_norm_std": min(stds),
        "mean_gate": float(np.mean(gates)),
        "max_abs_logit": float(np.abs(logits).max()),
    }
    return logits, facts


def check_gfw_facts(name, facts):
    own = []
    if facts["min_pre_norm_std"] < 0.01:
        own.append(f"{name}: a fast layer's pre-norm spread falls to {facts['min_pre_norm_std']:.3g}")
    if not 0.1 < facts["mean_gate"] < 0.9:
        own.append(f"{name}: the F1 gates average {facts['mean_gate']:.2f} (saturated)")
    return _arch_problems(name, facts, own)


def _gfw_attempt(spec, path, rng):
    whp, vocab = gfw_writer_hp(spec)
    weights = make_gfw_weights(whp, rng)
    gguf_writer.write_gfw_model(path, whp, vocab, weights, types=spec["types"], order=spec["order"],
                                checksum=spec["checksum"], fingerprint=spec["fingerprint"],
                                prime_tokens=spec["prime"], gaps=spec["gaps"], name=spec["name"],
                                rng=rng)
    hp, _, params, _ = gfw_reference.read_model(path)  # re-read: the stored (rounded) values
    tokens = [1] + [int(t) for t in rng.integers(0, hp["vocab_size"], size=spec["n_tokens"] - 1)]
    logits, facts = analyse_gfw(hp, params, tokens, spec["prime"], rng)
    return (hp, params, vocab), tokens, logits, facts, check_gfw_facts(spec["name"], facts)


def _gfw_finish(spec, path, state, tokens):
    hp, params, vocab = state
    primed = _gfw_logits(hp, params, _session_start(spec) + tokens)
    _, tensors = fwm_reference.read_gguf(path)
    cs = gfw_reference.checksum(hp, {n: tensors[n][2] for n, _ in gfw_reference.tensor_list(hp)})
    fingerprint = gfw_reference.fingerprint(hp, vocab, cs)  # what the loader must compute
    return primed, fingerprint, spec["checksum"], spec["fingerprint"]


def build_gfw(spec, out_dir, attempts=50):
    """Write one GFW model with gguf_writer.write_gfw_model, its expected logits from the zero state
    (NAME.f32) and from the session start (NAME.primed.f32: the rows of the prime tokens, then those
    of the tokens; the start is [eos] without the key). Returns (manifest line, facts, seed used,
    problems)."""
    return _build_arch(spec, out_dir, attempts, "gfw", _gfw_attempt, _gfw_finish)


def describe_gfw(name, facts, seed):
    return _describe_arch(name, facts, seed,
                          f"min pre-norm std {facts['min_pre_norm_std']:.2f}; mean F1 gate "
                          f"{facts['mean_gate']:.2f}; ")


# ---- the `stm` architecture ----------------------------------------------------------------------

# The committed STM models (tests/golden/README.md), written by stm_reference.py's own writer (F32,
# and two with F16, BF16 and mixed tensors):
# sentence mode with and without reset_on_eos (sentences longer than P, questions, answers, <eos>
# inside a sentence and in the answer slot), word mode with and without it; α all non-zero so that
# the relational read and transfer count. Session starts: the default ([eos]), none, three tokens.
# Rows where the model predicts nothing (sentence mode: every token but a question's end) are NaN
# in the expected files: the runtime must give NaN rows there.
STM_MIXED = {"token_embd.weight": "bf16", "stm.write.weight": "f16", "stm.sam.weight": "bf16",
             "stm.transfer.weight": "f16", "stm.relation.init": "bf16", "stm.distill.weight": "f16",
             "output.weight": "bf16", "output.bias": "f16"}
STM_GOLDEN = [
    dict(name="stm1_sentence", V=16, mode=stm_reference.SENTENCE, E=6, P=5, d=5, nq=3, nr=2, Ha=7,
         reset_on_eos=True, prime=None, n_sentences=14, seed=901),
    dict(name="stm2_sentence_noreset", V=14, mode=stm_reference.SENTENCE, E=5, P=3, d=4, nq=2, nr=2,
         Ha=6, reset_on_eos=False, prime=[], n_sentences=12, seed=902),
    dict(name="stm3_word", V=13, mode=stm_reference.WORD, E=5, P=4, d=4, nq=3, nr=3, Ha=4,
         reset_on_eos=True, prime=[1, 4, 5], n_tokens=36, seed=903),
    dict(name="stm4_word_noreset", V=12, mode=stm_reference.WORD, E=4, P=4, d=3, nq=2, nr=4, Ha=4,
         reset_on_eos=False, prime=None, n_tokens=32, seed=904),
    dict(name="stm5_sentence_f16", V=15, mode=stm_reference.SENTENCE, E=5, P=4, d=4, nq=2, nr=2, Ha=5,
         reset_on_eos=True, prime=None, n_sentences=12, seed=907, types="f16"),
    dict(name="stm6_word_mixed", V=13, mode=stm_reference.WORD, E=5, P=4, d=4, nq=2, nr=3, Ha=4,
         reset_on_eos=True, prime=[1, 2], n_tokens=34, seed=906, types=STM_MIXED),
]
STM_STATEMENT_END, STM_QUESTION_END = 7, 10  # "." and "?" of WORDS


def stm_writer_hp(spec):
    hp = stm_reference.default_hparams(
        vocab_size=spec["V"], input_mode=spec["mode"], embedding_length=spec["E"],
        sentence_length=spec["P"], memory_size=spec["d"], query_count=spec["nq"],
        relation_length=spec["nr"], answer_hidden=spec["Ha"], reset_on_eos=spec["reset_on_eos"],
        statement_end_token_id=STM_STATEMENT_END, question_end_token_id=STM_QUESTION_END,
        padding_token_id=0, eos_token_id=1)
    return hp, WORDS[:spec["V"]]


def make_stm_weights(hp, rng):
    """The spec's initialisation with larger input maps and embeddings (so that sentences move the
    memories visibly), non-zero biases, and α = (0.9, 0.7, 0.5)."""
    w = {k: np.array(v, dtype=np.float64) for k, v in stm_reference.init_params(hp, rng).items()}
    for k in w:
        if k.startswith(("token_embd", "stm.write", "stm.value", "stm.select")):
            w[k] = w[k] * 3.0
        if k.endswith(("bias", "bias1", "bias2")) and k != "stm.gate.bias":
            w[k] = w[k] + rng.uniform(-0.3, 0.3, size=w[k].shape)
    if "stm.position.weight" in w:
        w["stm.position.weight"] = 1.0 + rng.uniform(-0.5, 0.5, size=w["stm.position.weight"].shape)
    w["stm.sam.norm.weight"] = 1.0 + rng.uniform(-0.3, 0.3, size=w["stm.sam.norm.weight"].shape)
    w["stm.sam.norm.bias"] = rng.uniform(-0.3, 0.3, size=w["stm.sam.norm.bias"].shape)
    w["stm.alpha"] = np.array([0.9, 0.7, 0.5])
    return w


def stm_tokens(spec, hp, rng):
    """Word mode: <eos> then random ids. Sentence mode: <eos>, then sentences of 1 to P + 2 random
    words (ids 2.. other than the end tokens and <eos>), each ended by "." or by "?" and an answer;
    an <eos> inside one sentence and one in an answer slot."""
    V = hp["vocab_size"]
    if hp["input_mode"] == stm_reference.WORD:
        return [1] + [int(t) for t in rng.integers(0, V, size=spec["n_tokens"] - 1)]
    words = [t for t in range(2, V) if t not in (STM_STATEMENT_END, STM_QUESTION_END)]
    out = [1]
    for i in range(spec["n_sentences"]):
        n = int(rng.integers(1, hp["sentence_length"] + 3))
        sentence = [int(rng.choice(words)) for _ in range(n)]
        if i == spec["n_sentences"] // 2:
            sentence.insert(n // 2, 1)  # <eos> inside a sentence
        question = i % 3 == 2
        out += sentence + [STM_QUESTION_END if question else STM_STATEMENT_END]
        if question:
            out.append(1 if i == spec["n_sentences"] - 4 else int(rng.choice(words)))
    return out


def _stm_rows(hp, params, tokens):
    """One row per token: the logits, or NaN where the token predicts nothing."""
    outs, _ = stm_reference.forward(hp, params, tokens)
    nan = np.full(hp["vocab_size"], np.nan)
    return np.array([nan if o is None else o for o in outs])


def _stm_attempt(spec, path, rng):
    hp, vocab = stm_writer_hp(spec)
    weights = make_stm_weights(hp, rng)
    stm_reference.write_model(path, hp, vocab, weights, name=spec["name"],
                              prime_tokens=spec["prime"], types=spec.get("types", "f32"))
    _, _, params = stm_reference.read_model(path)
    tokens = stm_tokens(spec, hp, rng)
    rows = _stm_rows(hp, params, tokens)
    live = ~np.isnan(rows[:, 0])
    errors = []
    for _ in range(4):
        nudged = {k: v * (1 + rng.uniform(-1, 1, v.shape) * 2.0 ** -24) for k, v in params.items()}
        errors.append(_error_over_tol(_stm_rows(hp, nudged, tokens)[live], rows[live]))
    effects = {}
    for what, change in (("the transfer (alpha3)", ("stm.alpha", np.array([0.9, 0.7, 0.0]))),
                         ("the relational read (alpha2)", ("stm.alpha", np.array([0.9, 0.0, 0.5]))),
                         ("the initial item memory", ("stm.item.init", params["stm.item.init"] * 0.5))):
        other = dict(params)
        other[change[0]] = change[1]
        effects[what] = _error_over_tol(_stm_rows(hp, other, tokens)[live], rows[live])
    facts = {"f32_error_over_tol": max(errors), "effect_over_tol": effects,
             "predicted_rows": int(live.sum()), "max_abs_logit": float(np.abs(rows[live]).max())}
    return (hp, params), tokens, rows, facts, _arch_problems(spec["name"], facts, [])


def _stm_finish(spec, path, state, tokens):
    hp, params = state
    return _stm_rows(hp, params, _session_start(spec) + tokens), _stored_fingerprint(path), True, True


def build_stm(spec, out_dir, attempts=50):
    """Write one STM model with stm_reference.write_model, its expected rows from the reset state
    (NAME.f32) and from the session start (NAME.primed.f32). Returns (manifest line, facts, seed,
    problems)."""
    return _build_arch(spec, out_dir, attempts, "stm", _stm_attempt, _stm_finish)


def describe_stm(name, facts, seed):
    return _describe_arch(name, facts, seed, f"{facts['predicted_rows']} predicted rows; ")


STM_MANIFEST_COMMENT = ("# stm models: arch=stm, fields as for lstm (written by stm_reference.py's writer); "
                        "NaN rows where nothing is predicted")


# The manifest's sections in order: each architecture's comment lines, then its models' lines.
MANIFEST_HEADER = ["# fwm golden data, generated by tests/reference/make_golden.py (do not edit).",
                   "# model expected-logits checksum=present|absent tokens=comma-separated-ids",
                   f"# tolerance: |got - want| <= {RTOL:g} * max(max |want| over the row, {SCALE_FLOOR:g})"]
SECTIONS = [
    ("fwm", [], GOLDEN, lambda spec, out: build(spec, out),
     lambda spec, facts, seed: describe(spec["name"], spec["n_tokens"], facts, seed)),
    ("lstm", ["# lstm models: arch=lstm; fingerprint= the FWMFP2 fingerprint the loader must compute;",
              "# fingerprint_key=present|absent: fwm.fingerprint stored in the file; primed= the expected",
              "# logits from the session start: one row per prime token, then one per token"],
     LSTM_GOLDEN, build_lstm, lambda spec, facts, seed: describe_lstm(spec["name"], facts, seed)),
    ("mnm", ["# mnm models: arch=mnm, fields as for lstm (written by mnm_reference.py's writer)"],
     MNM_GOLDEN, build_mnm, lambda spec, facts, seed: describe_mnm(spec["name"], facts, seed)),
    ("gfw", ["# gfw models: arch=gfw, fields as for lstm (written by gguf_writer.py, expected values from",
             "# gfw_reference.py)"],
     GFW_GOLDEN, build_gfw, lambda spec, facts, seed: describe_gfw(spec["name"], facts, seed)),
    ("stm", [STM_MANIFEST_COMMENT],
     STM_GOLDEN, build_stm, lambda spec, facts, seed: describe_stm(spec["name"], facts, seed)),
]


def manifest_arch(line):
    """The architecture of a manifest model line (`fwm` without an arch= field)."""
    for field in line.split()[2:]:
        if field.startswith("arch="):
            return field[len("arch="):]
    return "fwm"


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="generate tests/golden/data")
    ap.add_argument("--out", default=os.path.join(here, "..", "golden", "data"))
    for arch, *_ in SECTIONS:
        ap.add_argument(f"--only-{arch}", action="store_true",
                        help=f"regenerate the {arch} models only, keeping the manifest's other lines "
                             "(several --only-* flags combine)")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    selected = {arch for arch, *_ in SECTIONS if getattr(args, f"only_{arch}")}
    kept = {}  # the existing manifest's model lines of the architectures not regenerated
    if selected:
        with open(os.path.join(args.out, "manifest.txt")) as f:
            for ln in f:
                if ln.strip() and not ln.startswith("#"):
                    kept.setdefault(manifest_arch(ln), []).append(ln.rstrip("\n"))
    lines = list(MANIFEST_HEADER)
    all_problems = []
    for arch, comments, specs, build_one, describe_one in SECTIONS:
        lines += comments
        if selected and arch not in selected:
            lines += kept.get(arch, [])
            continue
        for spec in specs:
            line, facts, seed, problems = build_one(spec, args.out)
            lines.append(line)
            print(describe_one(spec, facts, seed))
            all_problems += problems
    with open(os.path.join(args.out, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    if all_problems:
        print("make_golden: the data do not exercise the model as required:\n  "
              + "\n  ".join(all_problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
