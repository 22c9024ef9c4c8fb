#!/usr/bin/python3
"""test_stm_cli.py - fwm-train --arch stm end to end on a tiny bAbI folder (test_cli's), in both
input modes: the flags (--input, --embedding, --sentence-length, --memory-size, --queries,
--relation-length, --answer-hidden, --reset-on-eos, --fix-alpha, --train-output), the model file
(fwm-inspect shows its keys; fwm-run steps it; fwm-eval evaluates it), the standard bAbI protocol
in sentence mode, a run stopped at a checkpoint and resumed equals an uninterrupted one bit for bit,
and bad values, bad combinations and other architectures' flags are refused with messages that
name them.

usage: test_stm_cli.py FWM_TRAIN FWM_EVAL FWM_INSPECT FWM_RUN
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli import make_data  # noqa: E402  (the same tiny bAbI folder)
import test_lstm_cli  # noqa: E402
from test_lstm_cli import check, run  # noqa: E402

STM = 4  # fwm_arch


def key_line(info, key):
    return next((l for l in info.splitlines() if l.strip().startswith(key + " ")), "")


def main():
    train, evaluate, inspect, fwm_run = sys.argv[1:5]
    tmp = tempfile.mkdtemp(prefix="fwm-test-stm-cli-")
    data = os.path.join(tmp, "babi")
    make_data(data)

    def command(run_dir, steps, *extra):
        return [train, "--arch", "stm", "--data", data, "--set", "1k", "--embedding", "6",
                "--sentence-length", "8", "--memory-size", "5", "--queries", "3",
                "--answer-hidden", "7", "--lanes", "3", "--window", "16", "--threads", "1",
                "--eval-every", "2", "--eval-lanes", "2", "--checkpoint-every", "2",
                "--progress", "0", "--run-dir", run_dir, "--steps", str(steps)] + list(extra)

    # sentence mode (the default): qm by default, Z held by default
    a = os.path.join(tmp, "a")
    p = run(command(a, 5))
    check("STM sentence mode E=6 P=8 d=5 n_q=3 n_r=96 H_a=7 reset_on_eos on (memories 100 "
          "floats per lane); alpha1, alpha3 trained; Z held; mode qm" in p.stderr,
          "the run names its model (got %r)" % p.stderr[-500:])
    model = os.path.join(a, "model.gguf")
    check(os.path.exists(model), "model file written")
    info = run([inspect, model]).stdout
    for key, value in (("general.architecture", '"stm"'), ("stm.input_mode", "0"),
                       ("stm.embedding_length", "6"), ("stm.sentence.max_length", "8"),
                       ("stm.memory.size", "5"), ("stm.memory.query_count", "3"),
                       ("stm.answer.hidden_size", "7"), ("fwm.training.mode", '"qm"'),
                       ("fwm.training.steps", "5"), ("general.name", "stm-catbabi-1k-qm")):
        line = key_line(info, key)
        check(line and value in line, "model key %s with %s (got %r)" % (key, value, line))
    p = run([fwm_run, model, "--text", "Mary went to the kitchen. Where is Mary?", "--topk", "2"])
    check(p.stdout.count("\n") >= 9, "fwm-run steps the stm model (got %r)" % p.stdout[-300:])
    p = run([evaluate, model, "--data", data, "--set", "1k", "--split", "valid", "--lanes", "2",
             "--threads", "1"])
    check("  all " in p.stdout, "fwm-eval evaluates the sentence-mode model")

    # stopped at step 2 (the checkpoint), resumed to 5: the same bits
    b = os.path.join(tmp, "b")
    run(command(b, 2))
    run(command(b, 5, "--resume"))
    with open(model, "rb") as fa, open(os.path.join(b, "model.gguf"), "rb") as fb:
        check(fa.read() == fb.read(), "resumed run writes the uninterrupted run's model file")
    check(test_lstm_cli.checkpoint_without_seconds(os.path.join(a, "checkpoint.bin"), STM, "stm")
          == test_lstm_cli.checkpoint_without_seconds(os.path.join(b, "checkpoint.bin"), STM,
                                                      "stm"),
          "resumed run's checkpoint equals the uninterrupted run's")
    for flag, value, says in (("--memory-size", "6", "model hyperparameters"),
                              ("--fix-alpha", "on", "--fix-alpha"),
                              ("--train-output", "on", "--train-output")):
        p = run(command(b, 6, "--resume", flag, value), expect_rc=1)
        check(says in p.stderr, "a checkpoint without %s %s refused (got %r)"
              % (flag, value, p.stderr[-300:]))

    # word mode, LM, alpha held, reset_on_eos off
    w = os.path.join(tmp, "w")
    p = run(command(w, 3, "--input", "word", "--relation-length", "4", "--mode", "lm",
                    "--fix-alpha", "on", "--reset-on-eos", "off", "--no-test"))
    check("STM word mode E=6 P=8 d=5 n_q=3 n_r=4 H_a=7 reset_on_eos off (memories 100 floats per "
          "lane); alpha1, alpha3 held; Z -; mode lm" in p.stderr,
          "the word-mode run names its model (got %r)" % p.stderr[-500:])
    wmodel = os.path.join(w, "model.gguf")
    info = run([inspect, wmodel]).stdout
    for key, value in (("stm.input_mode", "1"), ("stm.relation_length", "4"),
                       ("stm.reset_on_eos", "false"), ("general.name", "stm-catbabi-1k-lm")):
        line = key_line(info, key)
        check(line and value in line, "model key %s with %s (got %r)" % (key, value, line))
    p = run([evaluate, wmodel, "--data", data, "--set", "1k", "--split", "valid", "--lanes", "2",
             "--threads", "1"])
    check("  all " in p.stdout, "fwm-eval evaluates the word-mode model")
    p = run([fwm_run, wmodel, "--text", "Mary went to the kitchen.", "--topk", "2"])
    check(p.stdout.count("\n") >= 5, "fwm-run steps the word-mode model")

    # the standard bAbI protocol in sentence mode, Z trained
    s = os.path.join(tmp, "s")
    p = run(command(s, 3, "--protocol", "standard", "--train-output", "on", "--no-test"))
    check("Z trained" in p.stderr, "--train-output on is reported")
    check("mean error" in p.stdout, "the standard protocol reports the mean error (got %r)"
          % p.stdout[-300:])
    info = run([inspect, os.path.join(s, "model.gguf")]).stdout
    line = key_line(info, "general.name")
    check("stm-babi-1k-qm" in line, "the standard protocol's model name (got %r)" % line)

    # bad values and combinations, each named
    d = os.path.join(tmp, "d")
    for extra, says in (
            (("--mode", "lm"), "--mode lm does not apply to --arch stm --input sentence"),
            (("--input", "word", "--train-output", "on"), "--train-output is for --arch stm "
                                                           "--input sentence"),
            (("--input", "phrase"), "--input expects sentence or word, got 'phrase'"),
            (("--fix-alpha", "yes"), "--fix-alpha expects on or off, got 'yes'"),
            (("--memory-size", "0"), "--memory-size expects an integer from 1"),
            (("--queries", "many"), "--queries expects an integer"),
            (("--hidden", "8"), "--hidden does not apply to --arch stm"),
            (("--slow-hidden", "8"), "--slow-hidden does not apply to --arch stm"),
            (("--memory-s", "4"), "--memory-s does not apply to --arch stm"),
            (("--residual",), "--residual does not apply to --arch stm"),
            (("--dropout-token", "0.1"), "--arch lstm")):
        p = run(command(d, 1, *extra), expect_rc=2)
        check(says in p.stderr, "%s refused (got %r)" % (" ".join(extra), p.stderr[-300:]))
    p = run([train, "--arch", "stm", "--task", "ar", "--data", data], expect_rc=2)
    check("not --task ar" in p.stderr, "sentence mode refuses --task ar (got %r)" % p.stderr[-300:])
    for arch in ("fwm", "gfw"):
        for flag, value in (("--memory-size", "20"), ("--input", "word"), ("--fix-alpha", "on")):
            p = run([train, "--arch", arch, flag, value, "--data", data], expect_rc=2)
            check("%s does not apply to --arch %s" % (flag, arch) in p.stderr,
                  "%s refused for %s (got %r)" % (flag, arch, p.stderr[-200:]))
    help_text = run([train, "--help"]).stdout
    for flag in ("--arch fwm|lstm|mnm|gfw|stm", "--input sentence|word", "--memory-size d",
                 "--queries N", "--fix-alpha on|off", "--train-output on|off"):
        check(flag in help_text, "fwm-train --help lists %s" % flag)
    subprocess.run(["rm", "-rf", tmp])
    failures = test_lstm_cli.failures
    print("test_stm_cli: %s" % ("all checks passed" if not failures else
                                "%d check(s) failed" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
