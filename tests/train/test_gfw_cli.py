#!/usr/bin/python3
"""test_gfw_cli.py - fwm-train --arch gfw end to end on a tiny bAbI folder (test_cli's): the flags
(--embedding, --hidden for the fast net, --slow-hidden, --slow-inner), the model file (fwm-inspect
shows its keys; fwm-run steps it; fwm-eval evaluates it), a run stopped
at a checkpoint and resumed equals an uninterrupted one bit for bit, and bad values and other
architectures' flags are refused with messages that name them.

usage: test_gfw_cli.py FWM_TRAIN FWM_EVAL FWM_INSPECT FWM_RUN
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli import make_data  # noqa: E402  (the same tiny bAbI folder)
import test_lstm_cli  # noqa: E402
from test_lstm_cli import check, run  # noqa: E402


def main():
    train, evaluate, inspect, fwm_run = sys.argv[1:5]
    tmp = tempfile.mkdtemp(prefix="fwm-test-gfw-cli-")
    data = os.path.join(tmp, "babi")
    make_data(data)

    def command(run_dir, steps, *extra):
        return [train, "--arch", "gfw", "--data", data, "--set", "1k", "--embedding", "6",
                "--hidden", "7", "--slow-hidden", "9", "--slow-inner", "11", "--lanes", "3",
                "--window", "16", "--threads", "1", "--eval-every", "2", "--eval-lanes", "2",
                "--checkpoint-every", "2", "--progress", "0", "--mode", "qm", "--run-dir",
                run_dir, "--steps", str(steps)] + list(extra)

    a = os.path.join(tmp, "a")
    p = run(command(a, 5))
    check("gfw E=6 fast m=7 slow N=9 P=11 (fast matrices 98 + 56 floats per lane)" in p.stderr,
          "the run names its model (got %r)" % p.stderr[-400:])
    model = os.path.join(a, "model.gguf")
    check(os.path.exists(model), "model file written")
    info = run([inspect, model]).stdout
    for key, value in (("general.architecture", '"gfw"'), ("gfw.embedding_length", "6"),
                       ("gfw.fast.hidden_size", "7"), ("gfw.slow.hidden_size", "9"),
                       ("gfw.slow.inner_size", "11"), ("fwm.training.mode", '"qm"'),
                       ("fwm.training.steps", "5"), ("general.name", "gfw-catbabi-1k-qm")):
        line = next((l for l in info.splitlines() if l.strip().startswith(key + " ")), "")
        check(line and value in line, "model key %s with %s (got %r)" % (key, value, line))
    p = run([fwm_run, model, "--text", "Mary went to the kitchen. Where is Mary?", "--topk", "2"])
    check(p.stdout.count("\n") >= 9, "fwm-run steps the gfw model (got %r)" % p.stdout[-300:])
    p = run([evaluate, model, "--data", data, "--set", "1k", "--split", "valid", "--lanes", "2",
             "--threads", "1"])
    check("  all " in p.stdout, "fwm-eval evaluates the gfw model")

    # the paper's sizes by default (V from the data)
    p = run([train, "--arch", "gfw", "--data", data, "--set", "1k", "--lanes", "2", "--window",
             "8", "--threads", "1", "--progress", "0", "--eval-every", "0", "--no-test",
             "--run-dir", os.path.join(tmp, "paper"), "--steps", "1"])
    check("gfw E=15 fast m=40 slow N=40 P=100 (fast matrices 2240 + 1640 floats per lane)"
          in p.stderr, "the paper's sizes by default (got %r)" % p.stderr[-400:])

    # stopped at step 2 (the checkpoint), resumed to 5: the same bits
    b = os.path.join(tmp, "b")
    run(command(b, 2))
    run(command(b, 5, "--resume"))
    with open(model, "rb") as fa, open(os.path.join(b, "model.gguf"), "rb") as fb:
        check(fa.read() == fb.read(), "resumed run writes the uninterrupted run's model file")
    check(test_lstm_cli.checkpoint_without_seconds(os.path.join(a, "checkpoint.bin"), 3, "gfw") ==
          test_lstm_cli.checkpoint_without_seconds(os.path.join(b, "checkpoint.bin"), 3, "gfw"),
          "resumed run's checkpoint equals the uninterrupted run's")
    # other sizes: the checkpoint is refused
    p = run(command(b, 6, "--resume", "--slow-inner", "12"), expect_rc=1)
    check("model hyperparameters" in p.stderr, "a checkpoint of other sizes refused (got %r)"
          % p.stderr[-300:])

    # bad values, each named
    d = os.path.join(tmp, "d")
    for flag, value, says in (("--hidden", "1", "--hidden expects an integer from 2"),
                              ("--slow-hidden", "0", "--slow-hidden expects an integer from 1"),
                              ("--slow-inner", "many", "--slow-inner expects an integer"),
                              ("--embedding", "-3", "--embedding expects an integer from 1")):
        p = run(command(d, 1, flag, value), expect_rc=2)
        check(says in p.stderr, "%s %s refused (got %r)" % (flag, value, p.stderr[-200:]))
    # other architectures' flags
    for flag, value in (("--memory-s", "4"), ("--reads", "2"), ("--layers", "2"),
                        ("--heads", "2"), ("--meta-weight", "1"), ("--dropout-token", "0.1")):
        p = run(command(d, 1, flag, value), expect_rc=2)
        check("does not apply to --arch gfw" in p.stderr or "--arch lstm" in p.stderr,
              "%s refused for gfw (got %r)" % (flag, p.stderr[-200:]))
    p = run(command(d, 1, "--residual"), expect_rc=2)
    check("--residual does not apply to --arch gfw" in p.stderr, "--residual refused for gfw")
    for arch in ("fwm", "mnm"):
        for flag in ("--slow-hidden", "--slow-inner"):
            p = run([train, "--arch", arch, flag, "20", "--data", data], expect_rc=2)
            check("%s does not apply to --arch %s" % (flag, arch) in p.stderr,
                  "%s refused for %s (got %r)" % (flag, arch, p.stderr[-200:]))
    p = run([train, "--arch", "gfx", "--data", data], expect_rc=2)
    check("--arch expects fwm, lstm, mnm, gfw or stm, got 'gfx'" in p.stderr, "unknown --arch named")
    p = run([train, "--arch", "mnm", "--data", data, "--set", "1k", "--embedding", "8",
             "--hidden", "12", "--lanes", "3", "--window", "16", "--threads", "1", "--progress",
             "0", "--mode", "qm", "--run-dir", a, "--steps", "6", "--resume"], expect_rc=1)
    check("architecture gfw" in p.stderr and "mnm" in p.stderr,
          "an MNM run refuses the gfw checkpoint, naming both (got %r)" % p.stderr[-300:])
    help_text = run([train, "--help"]).stdout
    for flag in ("--arch fwm|lstm|mnm|gfw", "--slow-hidden N", "--slow-inner P"):
        check(flag in help_text, "fwm-train --help lists %s" % flag)
    subprocess.run(["rm", "-rf", tmp])
    failures = test_lstm_cli.failures
    print("test_gfw_cli: %s" % ("all checks passed" if not failures else
                                "%d check(s) failed" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
