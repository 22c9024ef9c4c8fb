#!/usr/bin/env python3
"""test_interrupt.py - fwm-train stopped by a signal keeps its work: on SIGTERM (then SIGINT) a run
writes its checkpoint at the next step boundary and exits 0, and --resume continues from exactly
that step.

A tiny model on a generated bAbI folder (test_cli.make_data) trains with no periodic checkpoints
(--checkpoint-every 0) and far more steps than it will get to, so the only checkpoint is the one
the signal causes. The checkpoint's step is read from the file itself (its documented header,
train/checkpoint.c: native layout), not from the program's messages.

usage: test_interrupt.py FWM_TRAIN
"""
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli import make_data  # noqa: E402

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAILED:", what)


def checkpoint_step(path):
    """The step field of a checkpoint: "FWMTRCK1", u32 version, u32 sizeof(fwm_hparams), the
    hparams, i32 mode, lanes, window, segment, u32 qmark, u64 seed, u64 data hash, i64 step (C struct
    layout, native alignment)."""
    with open(path, "rb") as f:
        data = f.read(4096)
    magic, version, hparams_size = struct.unpack_from("@8sII", data, 0)
    if magic != b"FWMTRCK1":
        raise AssertionError("%s: magic %r" % (path, magic))
    prefix = "@8sII%dsiiiiIQQ" % hparams_size
    (step,) = struct.unpack_from("@q", data, struct.calcsize(prefix))
    return step


def wait_for_progress(stderr_path, proc, min_step, timeout=60):
    """Wait until the progress lines show at least `min_step` steps done; return that step."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            return None
        with open(stderr_path) as f:
            text = f.read()
        steps = [int(line.split()[1].split("/")[0]) for line in text.splitlines()
                 if line.startswith("step ") and "/" in line.split()[1]]
        if steps and steps[-1] >= min_step:
            return steps[-1]
        time.sleep(0.05)
    return None


def interrupt(command, stderr_path, signal_number, min_step):
    """Start `command`, let it train past `min_step`, send the signal; return (rc, stderr)."""
    with open(stderr_path, "w") as err:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
    seen = wait_for_progress(stderr_path, proc, min_step)
    check(seen is not None, "progress past step %d before the signal" % min_step)
    proc.send_signal(signal_number)
    try:
        rc = proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        rc = None
    with open(stderr_path) as f:
        return rc, seen, f.read()


def main():
    train = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="fwm-test-interrupt-")
    data = os.path.join(tmp, "babi")
    make_data(data)
    run_dir = os.path.join(tmp, "run")
    checkpoint = os.path.join(run_dir, "checkpoint.bin")
    common = [train, "--data", data, "--set", "1k", "--embedding", "8", "--hidden", "12",
              "--memory-s", "4", "--memory-r", "3", "--memory-t", "4", "--reads", "2", "--lanes", "3",
              "--window", "16", "--threads", "1", "--eval-every", "0", "--checkpoint-every", "0",
              "--progress", "0.001", "--run-dir", run_dir, "--mode", "qm", "--no-test"]
    total = 10000000

    # SIGTERM during a fresh run
    rc, seen, err = interrupt(common + ["--steps", str(total)], os.path.join(tmp, "1.err"),
                              signal.SIGTERM, 5)
    check(rc == 0, "exit status 0 after SIGTERM (got %r)" % rc)
    check("stopped by SIGTERM" in err and checkpoint in err,
          "the stop message names the signal and the checkpoint (got %r)" % err[-400:])
    check(os.path.exists(checkpoint), "checkpoint written on SIGTERM")
    check(not os.path.exists(os.path.join(run_dir, "model.gguf")), "no model written on a stop")
    if failures:
        return 1
    step = checkpoint_step(checkpoint)
    print("SIGTERM after progress showed step %d: checkpoint at step %d" % (seen, step))
    check(seen <= step < total, "checkpoint step %d between the last progress (%d) and the end" % (step, seen))
    check("at step %d of %d" % (step, total) in err, "the message gives the checkpoint's step")

    # --resume continues from exactly that step, and runs to its end
    p = subprocess.run(common + ["--steps", str(step + 3), "--resume"], capture_output=True, text=True,
                       timeout=120)
    check(p.returncode == 0, "resume exit status (got %d: %s)" % (p.returncode, p.stderr[-400:]))
    check("resumed from %s at step %d" % (checkpoint, step) in p.stderr,
          "resumed at the checkpoint's step (got %r)" % p.stderr[-400:])
    check(checkpoint_step(checkpoint) == step + 3, "after the resumed run the checkpoint is at step %d"
          % (step + 3))
    check(os.path.exists(os.path.join(run_dir, "model.gguf")), "the finished run wrote its model")

    # SIGINT during a resumed run: the checkpoint moves on
    rc, seen, err = interrupt(common + ["--steps", str(total), "--resume"], os.path.join(tmp, "2.err"),
                              signal.SIGINT, step + 6)
    check(rc == 0, "exit status 0 after SIGINT (got %r)" % rc)
    check("stopped by SIGINT" in err, "the stop message names SIGINT")
    step2 = checkpoint_step(checkpoint)
    print("SIGINT after progress showed step %s: checkpoint at step %d" % (seen, step2))
    check(seen is not None and seen <= step2 < total, "SIGINT checkpoint step %d follows the progress" % step2)

    subprocess.run(["rm", "-rf", tmp])
    print("test_interrupt: %s" % ("all checks passed" if not failures else "%d check(s) failed" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
