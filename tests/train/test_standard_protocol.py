#!/usr/bin/env python3
"""test_standard_protocol.py - the standard bAbI protocol (--protocol standard) in fwm-train and
fwm-eval, against an independent computation.

* A tiny model of every architecture (FWM, LSTM, MNM, Gated Fast Weights, the STM in sentence
  mode) is trained with --protocol standard on en-valid (--set 1k: one sample per question of its
  training files, counted here; the MNM 20 steps, the others a few hundred); fwm-eval --protocol
  standard's per-task test accuracy, for tasks 1, 6 and 20, equals the accuracy computed by the
  numpy references (fwm_reference.py, lstm_reference.py, mnm_reference.py, gfw_reference.py,
  stm_reference.py) over the same stories read here independently: a sample per question, the
  story's statements before it then the question, run from the reset state, the answer the arg-max
  after "?" (one answer may differ between float32 and float64 rounding); the mean error line is
  the mean of the table's errors.
* Every sample starts from the reset state whatever the lanes: fwm-eval --tasks 1,6,20 with 16 and
  50 lanes (other samples side by side, other lanes) prints the same table for every architecture
  (the MNM's and the STM's reset states are their initial memories, not zero), and for the FWM the same as
  those tasks' rows of the whole test split with 101 lanes (20 tasks, 20,000 questions; not under
  the sanitizers, where FWM_TEST_SANITIZED is set); the catbAbI protocol (state carried) gives
  other figures.
* A run stopped at step 150 and resumed to 300 writes the uninterrupted run's model file.
* Refusals: an unknown --protocol, --protocol standard with --task ar.

usage: test_standard_protocol.py FWM_TRAIN FWM_EVAL DATA_DIR   (exit 77 = skipped: no data)
"""
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
sys.path.insert(0, HERE)
import fwm_reference  # noqa: E402
import gfw_reference  # noqa: E402
import lstm_reference  # noqa: E402
import mnm_reference  # noqa: E402
import stm_reference  # noqa: E402
from check_catbabi import words_of  # noqa: E402

failures = 0
TASKS = (1, 6, 20)
FOLDER = "en-valid"  # --set 1k: its test split is the 10k one's size (1,000 per task), the rest
                     # is smaller: the test is quicker


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


def table(text):
    """{task: (questions, accuracy %)} and the mean error line of fwm-eval's output."""
    rows = {int(t): (int(n), float(a)) for t, n, a in
            re.findall(r"^\s+(\d+)\s+(\d+)\s+([0-9.]+)%\s*$", text, re.M)}
    m = re.search(r"mean error ([0-9.]+)% over (\d+) task", text)
    return rows, (float(m.group(1)), int(m.group(2))) if m else None


def answer_perplexity(text):
    m = re.search(r"answer perplexity ([0-9.]+)", text)
    return float(m.group(1)) if m else None


def samples(path):
    """The standard protocol's samples of a task file: (statement words + question words, answer)."""
    out, statements = [], []
    for line in open(path, encoding="ascii").read().splitlines():
        if not line:
            continue
        ident, text = line.split(" ", 1)
        if ident == "1":
            statements = []
        if "\t" in text:
            question, answer, _ = text.split("\t")
            out.append((statements + words_of(question), answer.lower()))
        else:
            statements = statements + words_of(text)
    return out


def reference_runner(module, model_path):
    """(vocabulary, start state, run) for a model file: run(state, tokens) reads the tokens from the
    state (which it leaves as it was) and returns (the state after them, the logits after the last
    one). A question's sample is its story's statements then the question, so the statements are
    read once per story and each question from a copy of the state they left."""
    if module is fwm_reference:
        runner = module.Runner(module.Model(model_path))

        def run(state, tokens):
            runner.h, runner.c, runner.F = (a.copy() for a in state)
            logits = [runner.step(int(x)) for x in tokens][-1]
            runner.trace.clear()
            return (runner.h.copy(), runner.c.copy(), runner.F.copy()), logits
        return runner.m.vocab, (runner.h.copy(), runner.c.copy(), runner.F.copy()), run
    if module is lstm_reference:
        model = module.Model(model_path)
        runner = module.Runner(model)

        def run(state, tokens):
            runner.h, runner.c = [a.copy() for a in state[0]], [a.copy() for a in state[1]]
            logits = [runner.step(int(x)) for x in tokens][-1]
            runner.trace.clear()
            return runner.state(), logits
        return model.vocab, runner.state(), run
    hp, vocab, params = module.read_model(model_path)[:3]

    def run(state, tokens):  # the functional references: forward(hp, params, tokens, state)
        out = module.forward(hp, params, tokens, state)
        return out[1], out[0][-1]
    return vocab, None, run


def reference_accuracy(module, model_path, data, task):
    """(questions, accuracy %, summed answer cross entropy) of the reference over a test file's
    standard-protocol samples (those of samples(path), read with shared prefixes; the counts are
    compared)."""
    import numpy as np
    vocab, start, run = reference_runner(module, model_path)
    ids = {w: i for i, w in enumerate(vocab)}
    path = os.path.join(data, FOLDER, "qa%d_test.txt" % task)
    correct = total = 0
    nll = 0.0
    state = None
    for line in open(path, encoding="ascii").read().splitlines():
        if not line:
            continue
        ident, text = line.split(" ", 1)
        if ident == "1":
            state, _ = run(start, [ids["<eos>"]])
        if "\t" in text:
            question, answer, _ = text.split("\t")
            _, logits = run(state, [ids[w] for w in words_of(question)])
            logits = np.asarray(logits, dtype=np.float64)
            correct += int(np.argmax(logits) == ids[answer.lower()])
            top = logits.max()
            nll += top + np.log(np.exp(logits - top).sum()) - logits[ids[answer.lower()]]
            total += 1
        else:
            state, _ = run(state, [ids[w] for w in words_of(text)])
    check(total == len(samples(path)), "task %d: the shared-prefix reading has one sample per "
          "question (%d, samples() %d)" % (task, total, len(samples(path))))
    return total, 100.0 * correct / total, nll


def main():
    train, evaluate, data = sys.argv[1:4]
    if not os.path.exists(os.path.join(data, FOLDER, "qa1_test.txt")):
        print("no bAbI data at", data, "- skipped")
        return 77
    tmp = tempfile.mkdtemp(prefix="fwm-test-standard-")
    train_questions = sum(len(samples(os.path.join(data, FOLDER, "qa%d_train.txt" % t)))
                          for t in range(1, 21))
    common = ["--data", data, "--set", "1k", "--protocol", "standard", "--lanes", "32",
              "--window", "64",
              "--threads", "2", "--progress", "0", "--lr", "0.003", "--eval-every", "0",
              "--no-test"]
    models = {}
    for arch, sizes, steps, module in (
            ("fwm", ["--embedding", "16", "--hidden", "32", "--memory-s", "8", "--memory-r", "8",
                     "--memory-t", "8"], 300, fwm_reference),
            ("lstm", ["--embedding", "16", "--hidden", "32", "--layers", "1"], 300, lstm_reference),
            ("mnm", ["--embedding", "8", "--hidden", "12", "--heads", "1", "--key-length", "4",
                     "--value-length", "4", "--memory-hidden", "6", "--output-length", "8"], 20,
             mnm_reference),
            ("gfw", ["--embedding", "12", "--hidden", "16", "--slow-hidden", "16",
                     "--slow-inner", "24"], 300, gfw_reference),
            ("stm", ["--embedding", "16", "--memory-size", "8", "--queries", "2",
                     "--answer-hidden", "12"], 300, stm_reference)):
        run_dir = os.path.join(tmp, arch)
        p = run([train, "--arch", arch] + sizes + common + ["--steps", str(steps), "--run-dir",
                                                            run_dir])
        check("standard protocol: train  %6d samples" % train_questions in p.stderr,
              "%s: one training sample per question (got %r)" % (arch, p.stderr[-600:]))
        check("mean error" in p.stdout, "%s: fwm-train prints the valid mean error" % arch)
        models[arch] = (os.path.join(run_dir, "model.gguf"), module)

    # the FWM's run stopped at step 150 and resumed to 300: the same model file, byte for byte (the
    # lanes' sample layout and resets follow from the seed, the epoch and the window)
    resumed = os.path.join(tmp, "resumed")
    fwm_args = [train, "--arch", "fwm", "--embedding", "16", "--hidden", "32", "--memory-s", "8",
                "--memory-r", "8", "--memory-t", "8"] + common + ["--run-dir", resumed]
    run(fwm_args + ["--steps", "150"])
    run(fwm_args + ["--steps", "300", "--resume"])
    with open(models["fwm"][0], "rb") as f1, open(os.path.join(resumed, "model.gguf"), "rb") as f2:
        check(f1.read() == f2.read(), "a resumed --protocol standard run writes the uninterrupted "
              "run's model file")

    only = ",".join(str(t) for t in TASKS)
    for arch, (model, module) in models.items():
        outs = {}
        for lanes in (16, 50):
            p = run([evaluate, model, "--data", data, "--set", "1k", "--protocol", "standard",
                     "--split", "test", "--lanes", str(lanes), "--threads", "2", "--tasks", only])
            outs[lanes] = table(p.stdout)
        perplexity = answer_perplexity(p.stdout)
        rows, mean = outs[50]
        check(sorted(rows) == list(TASKS) and all(n == 1000 for n, _ in rows.values()),
              "%s: --tasks %s: those tasks' 1,000 test questions each (got %r)" % (arch, only, rows))
        check(outs[16] == outs[50],
              "%s: the same figures with 16 and 50 lanes (every sample from the reset state)"
              % arch)
        if mean and rows:
            want = sum(100 - a for _, a in rows.values()) / len(rows)
            check(abs(mean[0] - want) < 0.011 and mean[1] == len(TASKS),
                  "%s: mean error %.2f%%, the table's %.2f%%" % (arch, mean[0], want))
        # all 20 tasks, 101 lanes: the same figures for the three (the plain run's check: under the
        # sanitizers, FWM_TEST_SANITIZED, the 20,000 questions would add minutes to the same code)
        if arch == "fwm" and not os.environ.get("FWM_TEST_SANITIZED"):
            p = run([evaluate, model, "--data", data, "--set", "1k", "--protocol", "standard",
                     "--split", "test", "--lanes", "101", "--threads", "2"])
            every, mean20 = table(p.stdout)
            check(len(every) == 20 and sum(n for n, _ in every.values()) == 20000
                  and mean20 is not None and mean20[1] == 20,
                  "fwm: 20 tasks, 20,000 test questions, a mean error over 20 (got %d rows)"
                  % len(every))
            check(all(every.get(t) == rows.get(t) for t in TASKS),
                  "fwm: tasks %s alone give the figures of the whole test split" % only)
            p = run([evaluate, model, "--data", data, "--set", "1k", "--split", "test",
                     "--lanes", "50", "--threads", "2", "--tasks", only])
            carried, _ = table(p.stdout)
            check(carried and carried != rows, "fwm: the catbAbI protocol gives other figures")
        nll = questions = 0
        for task in TASKS:
            n, accuracy, task_nll = reference_accuracy(module, model, data, task)
            nll += task_nll
            questions += n
            got = rows.get(task)
            print("%s task %d: fwm-eval %s, reference %d questions %.2f%%" % (arch, task, got, n,
                                                                             accuracy))
            check(got is not None and got[0] == n and abs(got[1] - accuracy) <= 100.0 / n + 1e-9,
                  "%s task %d: fwm-eval %s against the reference's %.2f%% of %d" % (
                      arch, task, got, accuracy, n))
        # the answers' perplexity: every sample's logits count, so a model that answers the same
        # word everywhere (an accuracy of 0% or 50% on both sides) is compared too
        want = math.exp(nll / questions)
        print("%s: answer perplexity fwm-eval %s, reference %.4f" % (arch, perplexity, want))
        check(perplexity is not None and abs(perplexity - want) <= 1e-4 * want + 1e-4,
              "%s: answer perplexity %s against the reference's %.4f" % (arch, perplexity, want))

    model = models["fwm"][0]
    p = run([evaluate, model, "--data", data, "--set", "1k", "--protocol", "sorted"], expect_rc=2)
    check("--protocol expects catbabi or standard" in p.stderr, "unknown protocol refused")
    p = run([train, "--task", "ar", "--protocol", "standard", "--run-dir",
             os.path.join(tmp, "x")], expect_rc=2)
    check("--protocol standard is for the bAbI tasks" in p.stderr, "standard with --task ar refused")
    if failures:
        print(f"{failures} check(s) failed; the runs are kept in {tmp}")
        return 1
    shutil.rmtree(tmp, ignore_errors=True)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
