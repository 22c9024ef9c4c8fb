#!/usr/bin/python3
"""check_bf16.py - BF16 models (fwm.matmul_type "bf16") through the C runtime against the numpy
reference's BF16 products (tests/reference/bf16_reference.py), bit for bit.

Usage: check_bf16.py --fwm-init EXE --fwm-convert EXE --fwm-run EXE

For small fwm models (one layer and the stacked --layers 3, each with and without --residual) and
lstm models (1 and 3 layers), written by fwm-init and converted with fwm-convert --weights bf16:
  - fwm-run's logits on a fixed token sequence, with the kernel the CPU picks and with
    FWM_BF16_KERNEL=portable, must equal the reference's bit for bit. The reference's vectors are
    float64 and the runtime's float32, a few ulps apart, so where one lies that close to a BF16
    rounding boundary the two may round it apart (the reference flags such products:
    Products.fragile). A differing row is accepted only where the reference flagged a product in
    that step: the output product alone excuses that row (within the golden tolerance); a product
    that feeds the state means the two states part there, and the rest of the sequence is only
    checked within BF16_TOL of the row's scale. At least MIN_EXACT of the rows must be compared
    bit for bit;
  - the F32 model's logits must differ from the BF16 model's (the key really switches), and must
    match the reference in F32 mode within the golden tolerance (make_golden.tolerance).
Exits 0 on agreement, 1 on a mismatch, 77 (skipped) without numpy.
"""

import argparse
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("check_bf16: numpy is not available: skipped")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import fwm_reference  # noqa: E402
import lstm_reference  # noqa: E402
import make_golden  # noqa: E402

SIZES = ["--vocab-size", "40", "--embedding", "24", "--hidden", "40"]  # 24 and 40: chunk tails
FWM = SIZES + ["--memory-s", "8", "--memory-r", "6", "--memory-t", "8", "--reads", "2"]
MODELS = [
    ("fwm, 1 layer", FWM + ["--seed", "4"]),
    ("fwm, 1 layer, residual", FWM + ["--residual", "--seed", "5"]),
    ("fwm, 3 layers", FWM + ["--layers", "3", "--seed", "6"]),
    ("fwm, 3 layers, residual", FWM + ["--layers", "3", "--residual", "--seed", "7"]),
    ("lstm, 1 layer", ["--arch", "lstm"] + SIZES + ["--layers", "1", "--seed", "8"]),
    ("lstm, 3 layers, residual", ["--arch", "lstm"] + SIZES + ["--layers", "3", "--seed", "9"]),
    ("lstm, 3 layers", ["--arch", "lstm"] + SIZES + ["--layers", "3", "--no-residual", "--seed", "10"]),
]
TOKENS = [int(t) for t in np.random.default_rng(2026).integers(0, 40, 60)]
MIN_EXACT = 0.5   # at least this share of the rows compared bit for bit
BF16_TOL = 1e-2   # after the states part: |diff| <= this times the row's largest |logit|


def run(cmd, env=None):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {proc.returncode}:\n{proc.stderr}")
    return proc.stdout


def c_logits(exe, path, workdir, portable=False):
    out = os.path.join(workdir, "logits.f32")
    env = dict(os.environ)
    if portable:
        env["FWM_BF16_KERNEL"] = "portable"
    else:
        env.pop("FWM_BF16_KERNEL", None)
    run([exe, path, "--tokens", ",".join(map(str, TOKENS)), "--topk", "0", "--dump-logits", out], env)
    return np.fromfile(out, dtype="<f4").reshape(len(TOKENS), -1)


def reference(path):
    """(logits as float32 [n, V], the steps' fragile products, the model's matmul type)."""
    arch = fwm_reference.read_gguf(path)[0]["general.architecture"][1]
    ref = lstm_reference if arch == "lstm" else fwm_reference
    model = ref.Model(path)
    runner = ref.Runner(model)
    rows = [runner.step(x) for x in TOKENS]
    return np.stack(rows).astype(np.float32), runner.mv.fragile, model


def check_model(args, label, init_args, workdir):
    f32 = os.path.join(workdir, "f32.gguf")
    bf16 = os.path.join(workdir, "bf16.gguf")
    for p in (f32, bf16):
        if os.path.exists(p):
            os.remove(p)
    run([args.fwm_init, "--out", f32] + init_args)
    run([args.fwm_convert, "--weights", "bf16", f32, bf16])
    failures = 0
    want, fragile, model = reference(bf16)
    if model.matmul_type != "bf16" or not model.bf16:
        print(f"MISMATCH {label}: the reference sees matmul_type {model.matmul_type!r}, "
              f"{len(model.bf16)} BF16 products")
        return 1
    output_only = [f == ["output.weight"] for f in fragile]
    tol = make_golden.tolerance(want.astype(np.float64))
    for kernel in ("chosen", "portable"):
        got = c_logits(args.fwm_run, bf16, workdir, portable=kernel == "portable")
        same = got.view(np.uint32) == want.view(np.uint32)
        exact_rows, excused, parted, problem = 0, 0, None, None
        for pos in range(len(TOKENS)):
            if parted is not None:
                break
            if same[pos].all():
                exact_rows += 1
            elif not fragile[pos]:
                problem = pos
                break
            elif output_only[pos]:
                excused += 1
                if (np.abs(got[pos].astype(np.float64) - want[pos]) > tol[pos]).any():
                    problem = pos
                    break
            else:
                parted = pos
        if parted is not None:
            scale = np.abs(want[parted:]).max(axis=1, keepdims=True).astype(np.float64)
            if (np.abs(got[parted:].astype(np.float64) - want[parted:]) > BF16_TOL * scale).any():
                problem = parted
        print(f"  {label}, {kernel} kernel: {int(same.sum())} of {same.size} logits bit-identical; "
              f"{exact_rows} of {len(TOKENS)} rows bit-identical, {excused} excused (output "
              f"product's input near a rounding boundary)"
              + (f", the states part at step {parted} ({fragile[parted]})" if parted is not None
                 else "") + f"; max |diff| {float(np.abs(got - want).max()):.3g}")
        if problem is not None or exact_rows < MIN_EXACT * len(TOKENS):
            pos = problem if problem is not None else int(np.nonzero(~same.all(axis=1))[0][0])
            idx = int(np.nonzero(~same[pos])[0][0])
            print(f"MISMATCH {label}, {kernel} kernel: token position {pos}, logit {idx}: got "
                  f"{got[pos, idx]!r}, want {want[pos, idx]!r}; products flagged there: "
                  f"{fragile[pos]}")
            failures += 1
    # the F32 model: the reference in F32 mode, and a result other than the BF16 model's
    want32, _, model32 = reference(f32)
    got32 = c_logits(args.fwm_run, f32, workdir)
    tol32 = make_golden.tolerance(want32.astype(np.float64))
    bad = np.abs(got32.astype(np.float64) - want32) > tol32
    differ = np.abs(got32.astype(np.float64) - want) > tol
    print(f"  {label}, F32: within the golden tolerance of the F32 reference: {not bad.any()}; "
          f"{int(differ.sum())} of {differ.size} logits beyond it from the BF16 model's")
    if model32.matmul_type != "f32" or model32.bf16 or bad.any():
        print(f"MISMATCH {label}: the F32 model against the F32 reference ({int(bad.sum())} logits)")
        failures += 1
    if differ.sum() < differ.size // 2:
        print(f"MISMATCH {label}: the F32 and BF16 models' logits hardly differ")
        failures += 1
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fwm-init", required=True)
    ap.add_argument("--fwm-convert", required=True)
    ap.add_argument("--fwm-run", required=True)
    args = ap.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory(prefix="check_bf16.") as workdir:
        for label, init_args in MODELS:
            failures += check_model(args, label, init_args, workdir)
    print("check_bf16: FAILED" if failures else "check_bf16: ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
