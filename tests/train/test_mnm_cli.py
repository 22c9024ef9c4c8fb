#!/usr/bin/env python3
"""test_mnm_cli.py - fwm-train --arch mnm end to end on a tiny generated bAbI folder: a short run
writes an `mnm` model file that fwm-inspect verifies, fwm-run steps and fwm-eval evaluates; a run
stopped at a checkpoint and resumed writes the same model file, byte for byte, and the same
checkpoint (but its training-time field) as an uninterrupted run; --meta-weight changes the model
and a checkpoint of another meta weight is refused; the architecture's flags are refused for the
others and theirs for it, and an MNM checkpoint is refused by an LSTM run, naming both. With MPI in
the build and mpirun installed: `mpirun -np 2` trains the same model, bit for bit, as one process
with two lane groups.

usage: test_mnm_cli.py FWM_TRAIN FWM_EVAL FWM_INSPECT FWM_RUN HAVE_MPI(0|1)
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli import make_data  # noqa: E402  (the same tiny bAbI folder)
from test_mpi import mpi_env, mpirun_command  # noqa: E402
import test_lstm_cli  # noqa: E402
from test_lstm_cli import check, run  # noqa: E402


def checkpoint_without_seconds(path):
    """As test_lstm_cli's, for an MNM checkpoint (architecture 2)."""
    return test_lstm_cli.checkpoint_without_seconds(path, 2, "mnm")


def main():
    train, evaluate, inspect, fwm_run, have_mpi = sys.argv[1:6]
    tmp = tempfile.mkdtemp(prefix="fwm-test-mnm-cli-")
    data = os.path.join(tmp, "babi")
    make_data(data)

    def command(run_dir, steps, *extra):
        return [train, "--arch", "mnm", "--data", data, "--set", "1k", "--embedding", "8",
                "--hidden", "12", "--heads", "2", "--key-length", "6", "--value-length", "5",
                "--memory-hidden", "7", "--memory-layers", "3", "--output-length", "9",
                "--lanes", "3", "--window", "16", "--threads", "1", "--eval-every", "2",
                "--eval-lanes", "2", "--checkpoint-every", "2", "--progress", "0", "--mode", "qm",
                "--run-dir", run_dir, "--steps", str(steps)] + list(extra)

    a = os.path.join(tmp, "a")
    p = run(command(a, 5))
    check("MNM E=8 H=12 heads=2 d_k=6 d_v=5 memory 3 x 7 d_o=9; meta weight 1" in p.stderr,
          "the run names its model (got %r)" % p.stderr[-400:])
    model = os.path.join(a, "model.gguf")
    check(os.path.exists(model), "model file written")
    info = run([inspect, model]).stdout
    for key, value in (("general.architecture", '"mnm"'), ("mnm.memory.block_count", "3"),
                       ("mnm.head_count", "2"), ("mnm.hidden_size", "12"),
                       ("mnm.memory.key_length", "6"), ("mnm.output_length", "9"),
                       ("fwm.training.mode", '"qm"'), ("fwm.training.steps", "5"),
                       ("general.name", "mnm-catbabi-1k-qm")):
        line = next((l for l in info.splitlines() if l.strip().startswith(key + " ")), "")
        check(line and value in line, "model key %s with %s (got %r)" % (key, value, line))
    p = run([fwm_run, model, "--text", "Mary went to the kitchen. Where is Mary?", "--topk", "2"])
    check(p.stdout.count("\n") >= 9, "fwm-run steps the MNM model (got %r)" % p.stdout[-300:])
    p = run([evaluate, model, "--data", data, "--set", "1k", "--split", "valid", "--lanes", "2",
             "--threads", "1"])
    check("  all " in p.stdout, "fwm-eval evaluates the MNM model")

    # stopped at step 2 (the checkpoint), resumed to 5: the same bits
    b = os.path.join(tmp, "b")
    run(command(b, 2))
    run(command(b, 5, "--resume"))
    with open(model, "rb") as fa, open(os.path.join(b, "model.gguf"), "rb") as fb:
        check(fa.read() == fb.read(), "resumed run writes the uninterrupted run's model file")
    check(checkpoint_without_seconds(os.path.join(a, "checkpoint.bin")) ==
          checkpoint_without_seconds(os.path.join(b, "checkpoint.bin")),
          "resumed run's checkpoint equals the uninterrupted run's")
    # the meta weight: another model, and its checkpoint is refused by a run of another weight
    c = os.path.join(tmp, "c")
    run(command(c, 5, "--meta-weight", "2"))
    with open(model, "rb") as fa, open(os.path.join(c, "model.gguf"), "rb") as fc:
        check(fa.read() != fc.read(), "--meta-weight changes the trained model")
    p = run(command(c, 6, "--resume"), expect_rc=1)
    check("meta-objective weight" in p.stderr, "a checkpoint of another meta weight refused "
          "(got %r)" % p.stderr[-300:])

    # the architectures' flags, and another architecture's checkpoint
    for flag, value in (("--memory-s", "4"), ("--reads", "2"), ("--layers", "2"),
                        ("--dropout-token", "0.1")):
        p = run(command(os.path.join(tmp, "d"), 1, flag, value), expect_rc=2)
        check("does not apply to --arch mnm" in p.stderr or "--arch lstm" in p.stderr,
              "%s refused for mnm (got %r)" % (flag, p.stderr[-200:]))
    p = run(command(os.path.join(tmp, "d"), 1, "--residual"), expect_rc=2)
    check("--residual does not apply to --arch mnm" in p.stderr, "--residual refused for mnm")
    for flag in ("--heads", "--memory-layers", "--meta-weight"):
        p = run([train, flag, "2", "--data", data], expect_rc=2)
        check("%s does not apply to --arch fwm" % flag in p.stderr, "%s refused for fwm" % flag)
    p = run([train, "--arch", "lstm", "--data", data, "--set", "1k", "--embedding", "8",
             "--hidden", "12", "--layers", "1", "--lanes", "3", "--window", "16", "--threads",
             "1", "--progress", "0", "--mode", "qm", "--run-dir", a, "--steps", "6",
             "--resume"], expect_rc=1)
    check("architecture mnm" in p.stderr and "lstm" in p.stderr,
          "an LSTM run refuses the MNM checkpoint, naming both (got %r)" % p.stderr[-300:])
    if have_mpi == "1" and shutil.which("mpirun"):
        one, two = os.path.join(tmp, "one"), os.path.join(tmp, "two")
        run(command(one, 4, "--lane-groups", "2", "--lanes", "4", "--no-test"))
        p = subprocess.run(mpirun_command(2) + command(two, 4, "--lanes", "4", "--no-test"),
                           capture_output=True, text=True, env=mpi_env(), timeout=300)
        check(p.returncode == 0, "mpirun -np 2 fwm-train --arch mnm (got %r)" % p.stderr[-500:])
        with open(os.path.join(one, "model.gguf"), "rb") as f1, \
                open(os.path.join(two, "model.gguf"), "rb") as f2:
            check(f1.read() == f2.read(), "mpirun -np 2 trains one process's model (2 groups)")
    else:
        print("(no MPI: the mpirun comparison is skipped)")
    help_text = run([train, "--help"]).stdout
    for flag in ("--arch fwm|lstm|mnm", "--heads N", "--memory-layers L", "--meta-weight X",
                 "--max-nonfinite N"):
        check(flag in help_text, "fwm-train --help lists %s" % flag)
    subprocess.run(["rm", "-rf", tmp])
    failures = test_lstm_cli.failures
    print("test_mnm_cli: %s" % ("all checks passed" if not failures else
                                "%d check(s) failed" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
