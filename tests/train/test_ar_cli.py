#!/usr/bin/env python3
"""test_ar_cli.py - fwm-train and fwm-eval on the associative retrieval task (--task ar,
docs/AR_TASK.md) end to end:

* learning: a small FWM trained 1,200 steps on an easy setting (one storage per query) answers the
  validation queries far above chance (1/8);
* metrics: fwm-eval --task ar's total and partial accuracy and bits per character, and the
  partial bits over all targets, equal tests/reference/ar_task.py's `metrics` over the logits of
  the runtime-independent numpy references (fwm_reference.py, lstm_reference.py) run over the same
  test stream, with one lane and with three (each lane from the zero state); every target counts
  (the targets equal to the space, which is also the padding id, included);
* the LSTM and the MNM train on the task and write model files fwm-eval reads; a run stopped
  and resumed writes the uninterrupted run's model file; a checkpoint of another seed is refused;
* the Gated Fast Weights model trains on the task too; the bundled `models/gfw-ar.gguf` (where
  present) answers the paper's test split (5,000 queries, 1-10 storages each) at a partial accuracy
  of at least 0.95 (the model card's 0.9682; the paper's 0.9522), and on its first 300 queries
  fwm-eval's figures equal those of gfw_reference.py over the same stream;
* refusals: --mode with --task ar, an unknown --task, a model whose vocabulary is not the task's.

usage: test_ar_cli.py FWM_TRAIN FWM_EVAL
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import ar_task  # noqa: E402
import fwm_reference  # noqa: E402
import gfw_reference  # noqa: E402
import lstm_reference  # noqa: E402

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAILED:", what)


def run(args, expect_rc=0):
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != expect_rc:
        print("command:", " ".join(args))
        print("stdout:", p.stdout[-2000:])
        print("stderr:", p.stderr[-2000:])
    check(p.returncode == expect_rc, "exit status %d (expected %d) of %s" % (
        p.returncode, expect_rc, " ".join(os.path.basename(a) for a in args[:4])))
    return p


def parse_table(text):
    """The figures of fwm-eval --task ar's table (cli_common.c fwm__print_seq_table)."""
    m = re.search(r"targets\s+(\d+)\s+total accuracy\s+([0-9.]+)\s+total bpc\s+([0-9.]+)\s*\n"
                  r"\s+answers\s+(\d+)\s+partial accuracy\s+([0-9.]+)\s+partial bpc\s+([0-9.]+)"
                  r"\s+partial bpc over all targets\s+([0-9.]+)", text)
    if not m:
        return None
    g = m.groups()
    return {"count": int(g[0]), "total_accuracy": float(g[1]), "total_bpc": float(g[2]),
            "partial_count": int(g[3]), "partial_accuracy": float(g[4]),
            "partial_bpc": float(g[5]), "partial_bpc_all": float(g[6])}


def reference_metrics(module, model_path, x, y, lanes):
    """ar_task.metrics over the reference's logits, the stream cut into `lanes` lanes of
    ceil(n / lanes) characters, each run from the zero state (what the evaluator does)."""
    import numpy as np
    if module is gfw_reference:
        hp, _, params = module.read_model(model_path)[:3]
        logits_of = lambda tokens: module.forward(hp, params, tokens)[0]  # noqa: E731
    else:
        model = module.Model(model_path)
        logits_of = lambda tokens: module.compute_logits(model, tokens)[0]  # noqa: E731
    n = len(x)
    length = -(-n // lanes)
    parts = [logits_of(x[b * length:(b + 1) * length]) for b in range(lanes) if b * length < n]
    return ar_task.metrics(np.concatenate(parts), np.asarray(y))


def compare(evaluate, module, model, lanes, queries, tag, max_storages=1):
    x, y = ar_task.generate(queries, 1, "test", storages=(1, max_storages))
    x, y = ar_task.encode(x), ar_task.encode(y)
    p = run([evaluate, "--task", "ar", model, "--split", "test", "--ar-test", str(queries),
             "--ar-max-storages", str(max_storages), "--lanes", str(lanes), "--threads", "1"])
    got = parse_table(p.stdout)
    check(got is not None, f"{tag}: fwm-eval prints the metrics table (got {p.stdout[-400:]!r})")
    if got is None:
        return None
    want = reference_metrics(module, model, x, y, lanes)
    check(got["count"] == len(x), f"{tag}: every one of the {len(x)} targets counts (got "
          f"{got['count']})")
    check(got["partial_count"] == want["partial_count"] == queries,
          f"{tag}: {got['partial_count']} answers, expected {queries}")
    for key in ("total_accuracy", "partial_accuracy"):  # float32 vs float64: one flip at most
        check(abs(got[key] - want[key]) <= 1.0 / want["partial_count"] * 1.01,
              f"{tag}: {key} {got[key]} vs the reference's {want[key]}")
    for key in ("total_bpc", "partial_bpc", "partial_bpc_all"):
        check(abs(got[key] - want[key]) <= 1e-5 * max(1.0, abs(want[key])),
              f"{tag}: {key} {got[key]} vs the reference's {want[key]}")
    return got


def main():
    train, evaluate = sys.argv[1:3]
    tmp = tempfile.mkdtemp(prefix="fwm-test-ar-")
    easy = ["--task", "ar", "--ar-max-storages", "1", "--ar-train", "20000", "--ar-valid", "100",
            "--ar-test", "100", "--lanes", "32", "--window", "32", "--lr", "0.003",
            "--threads", "2", "--progress", "0", "--eval-lanes", "1"]

    # 1. learning: a small FWM on the easy setting
    fwm_dir = os.path.join(tmp, "fwm")
    p = run([train, "--embedding", "16", "--hidden", "32", "--memory-s", "8", "--memory-r", "4",
             "--memory-t", "8", "--steps", "1200", "--eval-every", "600", "--run-dir", fwm_dir]
            + easy)
    check("vocabulary 15 words" in p.stderr, "the AR vocabulary has 15 symbols")
    valid = parse_table(p.stdout)
    check(valid is not None, "fwm-train prints the valid table")
    if valid:
        print("FWM after 1,200 steps: valid partial accuracy %.3f, total accuracy %.4f"
              % (valid["partial_accuracy"], valid["total_accuracy"]))
        check(valid["partial_accuracy"] >= 0.6,
              "the FWM answers the queries far above chance 0.125 (got %.3f)"
              % valid["partial_accuracy"])
    fwm_model = os.path.join(fwm_dir, "model.gguf")

    # 2. the metrics against the reference on the same logits
    for lanes in (1, 3):
        compare(evaluate, fwm_reference, fwm_model, lanes, 60, f"fwm, {lanes} lane(s)")

    # 3. the LSTM (and its metrics), the MNM
    lstm_dir = os.path.join(tmp, "lstm")
    run([train, "--arch", "lstm", "--embedding", "8", "--hidden", "16", "--layers", "2",
         "--steps", "40", "--eval-every", "0", "--no-test", "--run-dir", lstm_dir] + easy)
    compare(evaluate, lstm_reference, os.path.join(lstm_dir, "model.gguf"), 2, 40, "lstm, 2 lanes")
    # stopped after 3 steps and resumed to 6: the uninterrupted run's model file
    base = [train, "--arch", "lstm", "--embedding", "8", "--hidden", "16", "--layers", "1",
            "--eval-every", "0", "--no-test"] + easy
    one, two = os.path.join(tmp, "one"), os.path.join(tmp, "two")
    run(base + ["--steps", "6", "--run-dir", one])
    run(base + ["--steps", "3", "--run-dir", two])
    run(base + ["--steps", "6", "--run-dir", two, "--resume"])
    with open(os.path.join(one, "model.gguf"), "rb") as f1, \
            open(os.path.join(two, "model.gguf"), "rb") as f2:
        check(f1.read() == f2.read(), "a resumed --task ar run writes the uninterrupted run's model")
    p = run(base + ["--steps", "7", "--run-dir", two, "--resume", "--ar-seed", "2"], expect_rc=1)
    check("training data" in p.stderr, "a checkpoint of another --ar-seed is refused (got %r)"
          % p.stderr[-300:])
    mnm_dir = os.path.join(tmp, "mnm")
    run([train, "--arch", "mnm", "--embedding", "8", "--hidden", "12", "--heads", "1",
         "--key-length", "4", "--value-length", "4", "--memory-hidden", "6", "--output-length",
         "8", "--steps", "10", "--eval-every", "0", "--no-test", "--run-dir", mnm_dir] + easy)
    p = run([evaluate, "--task", "ar", os.path.join(mnm_dir, "model.gguf"), "--split", "valid",
             "--ar-valid", "30", "--threads", "1"])
    got = parse_table(p.stdout)
    check(got is not None and got["partial_count"] == 30, "fwm-eval --task ar reads an MNM model")

    # 4. the Gated Fast Weights model: a tiny one trains on the task; the bundled one answers it
    gfw_dir = os.path.join(tmp, "gfw")
    run([train, "--arch", "gfw", "--embedding", "6", "--hidden", "8", "--slow-hidden", "8",
         "--slow-inner", "12", "--steps", "10", "--eval-every", "0", "--no-test", "--run-dir",
         gfw_dir] + easy)
    compare(evaluate, gfw_reference, os.path.join(gfw_dir, "model.gguf"), 2, 40, "gfw, 2 lanes")
    bundled = os.path.join(HERE, "..", "..", "models", "gfw-ar.gguf")
    if os.path.exists(bundled):
        p = run([evaluate, "--task", "ar", bundled, "--split", "test", "--threads", "1"])
        got = parse_table(p.stdout)
        check(got is not None and got["partial_count"] == 5000,
              "the bundled gfw-ar.gguf is evaluated on the 5,000 test queries")
        if got:
            print("bundled gfw-ar.gguf: test partial accuracy %.4f, total %.6f"
                  % (got["partial_accuracy"], got["total_accuracy"]))
            check(got["partial_accuracy"] >= 0.95, "the bundled gfw-ar.gguf answers at least 95%% "
                  "of the test queries (got %.4f)" % got["partial_accuracy"])
        got = compare(evaluate, gfw_reference, bundled, 1, 300, "bundled gfw-ar.gguf",
                      max_storages=10)
        if got:
            check(got["partial_accuracy"] >= 0.9, "the bundled model on the first 300 queries "
                  "(got %.4f)" % got["partial_accuracy"])
    else:
        print("models/gfw-ar.gguf is not here: its checks are skipped")

    # 5. refusals
    p = run([train, "--task", "ar", "--mode", "qm", "--run-dir", os.path.join(tmp, "x")],
            expect_rc=2)
    check("--mode is for --task catbabi" in p.stderr, "--mode refused with --task ar")
    p = run([train, "--task", "copy", "--run-dir", os.path.join(tmp, "x")], expect_rc=2)
    check("--task expects catbabi, ar or text" in p.stderr, "unknown task refused")
    p = run([evaluate, "--task", "copy", fwm_model], expect_rc=2)
    check("--task expects catbabi, ar or text" in p.stderr, "fwm-eval refuses an unknown task")
    help_text = run([train, "--help"]).stdout
    for flag in ("--task catbabi|ar", "--ar-seed S", "--ar-max-storages N"):
        check(flag in help_text, "fwm-train --help lists %s" % flag)
    if failures:
        print(f"{failures} check(s) failed")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
