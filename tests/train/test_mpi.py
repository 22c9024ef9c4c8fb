#!/usr/bin/env python3
"""test_mpi.py - fwm-train under `mpirun -np 2` computes the same bits as one process.

A tiny model on a generated bAbI folder (test_cli.make_data), 4 lanes, 1 thread per process:
  1. one process with --lane-groups 2 and `mpirun -np 2` (2 groups, one per process, the default
     there) train 6 steps: the checkpoints are byte-identical except the training-time field (and
     the checksum that covers it), the model files are byte-identical, log.csv agrees except its
     seconds column, and only rank 0 prints progress;
  2. one process with --lane-groups 4 trains 6 steps; `mpirun -np 2 --lane-groups 4` (two groups
     per process) trains 3, is resumed under mpirun to 6: the same checkpoint again; and so does
     a one-process run of 3 steps resumed under mpirun to 6;
  3. SIGTERM to rank 1 only of an endless `mpirun -np 2` run: every rank stops at the same step
     boundary (they agree on it), rank 0 writes the checkpoint there, the run exits 0, and a
     resume under mpirun continues from exactly that step;
  4. the other data paths split the same way: the standard bAbI protocol (--protocol standard,
     lanes reset at samples' starts) with the FWM, and the associative retrieval task (--task ar)
     with the Gated Fast Weights model: -np 2 equals one process with 2 lane groups, bit for bit.
The checkpoint's fields are read from the file itself (train/checkpoint.c's documented layout).

Open MPI under AddressSanitizer: Open MPI keeps allocations to the end of the process that
LeakSanitizer reports as leaks (its own, not fwm's), so the mpirun runs of this test, and only
they, set detect_leaks=0; every other sanitizer check stays on. The one-process runs keep leak
detection (a plain run never initialises MPI).

usage: test_mpi.py FWM_TRAIN BUILT_WITH_MPI(0|1)
Exit 77 (skipped) when fwm-train was built without MPI or mpirun is not installed.
"""
import glob
import os
import shutil
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


def mpirun_command(np_):
    """mpirun for a small box with no network: shared memory between local processes only, more
    processes than cores allowed, no binding (the cores are shared), root allowed where the
    tests run as root (CI containers)."""
    cmd = ["mpirun", "-np", str(np_), "--oversubscribe", "--bind-to", "none",
           "--mca", "btl", "self,vader"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def mpi_env():
    env = dict(os.environ)
    # containers often forbid the cross-memory attach (ptrace) that vader's single copy uses
    env["OMPI_MCA_btl_vader_single_copy_mechanism"] = "none"
    asan = env.get("ASAN_OPTIONS", "")
    env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "detect_leaks=0"
    return env


def run(args, env=None, expect_rc=0):
    p = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    if p.returncode != expect_rc:
        print("command:", " ".join(args))
        print("stdout:", p.stdout[-3000:])
        print("stderr:", p.stderr[-3000:])
    check(p.returncode == expect_rc, "exit status %d (expected %d) of %s" % (
        p.returncode, expect_rc, " ".join(args[:3])))
    return p


def checkpoint_fields(path):
    """(bytes without the seconds field and the checksum, step): layout "FWMTRCK1", u32 version,
    u32 sizeof(fwm_hparams), the hparams, i32 mode, lanes, window, segment, u32 qmark, u64 seed,
    u64 data hash, i64 step, epoch, window_index, tokens, f64 seconds, ... , u64 checksum."""
    with open(path, "rb") as f:
        data = f.read()
    magic, _, hparams_size = struct.unpack_from("@8sII", data, 0)
    if magic != b"FWMTRCK1":
        raise AssertionError("%s: magic %r" % (path, magic))
    prefix = "@8sII%dsiiiiIQQ" % hparams_size
    (step,) = struct.unpack_from("@q", data, struct.calcsize(prefix))
    seconds_at = struct.calcsize(prefix + "qqqqd") - 8
    return data[:seconds_at] + data[seconds_at + 8:-8], step


def log_rows(run_dir):
    """log.csv without its seconds column (wall time differs between runs)."""
    with open(os.path.join(run_dir, "log.csv")) as f:
        rows = [line.rstrip("\n").split(",") for line in f]
    return [r[:3] + r[4:] for r in rows]


def same_run(dir_a, dir_b, what, models=True):
    a, step_a = checkpoint_fields(os.path.join(dir_a, "checkpoint.bin"))
    b, step_b = checkpoint_fields(os.path.join(dir_b, "checkpoint.bin"))
    check(step_a == step_b, "%s: same step (%d, %d)" % (what, step_a, step_b))
    check(a == b, "%s: checkpoints identical bit for bit (parameters, Adam moments, lane states, "
                  "data position, running metrics)" % what)
    if models:
        with open(os.path.join(dir_a, "model.gguf"), "rb") as f:
            model_a = f.read()
        with open(os.path.join(dir_b, "model.gguf"), "rb") as f:
            model_b = f.read()
        check(model_a == model_b, "%s: model files identical" % what)
    check(log_rows(dir_a) == log_rows(dir_b), "%s: log.csv rows agree" % what)


def rank_pids(mpirun_pid):
    """{rank: pid} of mpirun's local processes (their environment names their rank)."""
    ranks = {}
    for path in glob.glob("/proc/%d/task/*/children" % mpirun_pid):
        try:
            with open(path) as f:
                children = [int(c) for c in f.read().split()]
        except OSError:
            continue
        for pid in children:
            try:
                with open("/proc/%d/environ" % pid, "rb") as f:
                    env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
            except OSError:
                continue
            if b"OMPI_COMM_WORLD_RANK" in env:
                ranks[int(env[b"OMPI_COMM_WORLD_RANK"])] = pid
    return ranks


def progress_steps(text):
    return [int(line.split()[1].split("/")[0]) for line in text.splitlines()
            if line.startswith("step ") and "/" in line.split()[1]]


def signal_test(train, common, tmp):
    run_dir = os.path.join(tmp, "signal")
    args = mpirun_command(2) + [train] + common + ["--run-dir", run_dir, "--steps", "100000000",
                                                   "--eval-every", "0", "--checkpoint-every", "0"]
    err_path = os.path.join(tmp, "signal.err")
    with open(err_path, "w") as err:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, env=mpi_env())
    seen, ranks = None, {}
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        with open(err_path) as f:
            steps = progress_steps(f.read())
        if steps and steps[-1] >= 5:
            ranks = rank_pids(proc.pid)
            if 1 in ranks:
                seen = steps[-1]
                break
        time.sleep(0.05)
    check(seen is not None, "the mpirun run made progress and its rank 1 was found")
    if seen is None:
        proc.kill()
        proc.wait()
        return
    os.kill(ranks[1], signal.SIGTERM)
    try:
        rc = proc.wait(120)
    except subprocess.TimeoutExpired:  # a rank waiting forever for another: the bug to catch
        proc.kill()
        proc.wait()
        rc = None
    with open(err_path) as f:
        text = f.read()
    check(rc == 0, "SIGTERM to rank 1: mpirun exits 0 (got %r): %s" % (rc, text[-1500:]))
    check("stopped by a signal to another rank" in text, "rank 0 says why it stopped")
    _, step = checkpoint_fields(os.path.join(run_dir, "checkpoint.bin"))
    check(step >= seen, "checkpoint at step %d, at or after the last progress line (%d)" % (
        step, seen))
    check(not os.path.exists(os.path.join(run_dir, "model.gguf")), "no model file when stopped")
    p = run(mpirun_command(2) + [train] + common + [
        "--run-dir", run_dir, "--steps", str(step + 2), "--resume", "--eval-every", "0"],
        env=mpi_env())
    check("resumed from" in p.stderr and ("at step %d " % step) in p.stderr,
          "the resumed run starts at the stopped step")
    _, step2 = checkpoint_fields(os.path.join(run_dir, "checkpoint.bin"))
    check(step2 == step + 2, "the resumed run ends at step %d (got %d)" % (step + 2, step2))


def main():
    train, built_with_mpi = sys.argv[1], sys.argv[2]
    if built_with_mpi != "1":
        print("SKIP: fwm-train was built without MPI (meson -Dmpi=disabled, or libopenmpi-dev "
              "missing: scripts/setup.sh installs it)")
        return 77
    if not shutil.which("mpirun"):
        print("SKIP: mpirun is not installed (Debian openmpi-bin; scripts/setup.sh installs it)")
        return 77
    tmp = tempfile.mkdtemp(prefix="fwm-test-mpi-")
    try:
        data = os.path.join(tmp, "babi")
        make_data(data)
        common = ["--data", data, "--set", "1k", "--embedding", "8", "--hidden", "12",
                  "--memory-s", "4", "--memory-r", "3", "--memory-t", "4", "--reads", "2",
                  "--lanes", "4", "--window", "16", "--threads", "1", "--eval-every", "3",
                  "--eval-lanes", "2", "--checkpoint-every", "2", "--progress", "0.001",
                  "--mode", "qm", "--no-test"]
        d = {name: os.path.join(tmp, name) for name in ("one2", "mpi2", "one4", "mpi4")}

        # 1. two groups: one process vs two
        run([train] + common + ["--lane-groups", "2", "--run-dir", d["one2"], "--steps", "6"])
        p = run(mpirun_command(2) + [train] + common + ["--run-dir", d["mpi2"], "--steps", "6"],
                env=mpi_env())
        same_run(d["one2"], d["mpi2"], "-np 2 vs one process, 2 lane groups")
        check("2 processes: 2 lane groups" in p.stderr, "the run names its processes and groups")
        check(progress_steps(p.stderr).count(6) == 1 and p.stderr.count("reading ") == 1,
              "only rank 0 prints (one progress line for step 6, one 'reading')")

        # 2. four groups, two per process, stopped and resumed under mpirun
        run([train] + common + ["--lane-groups", "4", "--run-dir", d["one4"], "--steps", "6"])
        run(mpirun_command(2) + [train] + common + ["--lane-groups", "4", "--run-dir", d["mpi4"],
                                                    "--steps", "3"], env=mpi_env())
        p = run(mpirun_command(2) + [train] + common + [
            "--lane-groups", "4", "--run-dir", d["mpi4"], "--steps", "6", "--resume"],
            env=mpi_env())
        check("resumed from" in p.stderr, "the mpirun run resumed")
        same_run(d["one4"], d["mpi4"], "-np 2 resumed at step 3 vs one process, 4 lane groups")
        # a one-process checkpoint continued under mpirun
        cross = os.path.join(tmp, "cross4")
        run([train] + common + ["--lane-groups", "4", "--run-dir", cross, "--steps", "3"])
        run(mpirun_command(2) + [train] + common + ["--lane-groups", "4", "--run-dir", cross,
                                                    "--steps", "6", "--resume"], env=mpi_env())
        same_run(d["one4"], cross, "one process to step 3, -np 2 on to 6, vs one process")

        # groups change the order of the sums: 2 and 4 groups are different runs (a sanity check
        # that the comparisons above can fail)
        a, _ = checkpoint_fields(os.path.join(d["one2"], "checkpoint.bin"))
        b, _ = checkpoint_fields(os.path.join(d["one4"], "checkpoint.bin"))
        check(a != b, "2 and 4 lane groups give different bits")

        # a group count the processes cannot share is refused, naming the option
        p = run(mpirun_command(2) + [train] + common + [
            "--lane-groups", "1", "--run-dir", os.path.join(tmp, "bad"), "--steps", "1"],
            env=mpi_env(), expect_rc=2)
        check(p.stderr.count("--lane-groups 1 must be between the number of processes (2") == 1,
              "--lane-groups below the process count refused, once (by rank 0)")

        # 3. SIGTERM to one rank
        signal_test(train, common, tmp)

        # 4. the standard protocol and the AR task with another architecture
        standard = common + ["--protocol", "standard"]
        ar = ["--task", "ar", "--arch", "gfw", "--embedding", "6", "--hidden", "8",
              "--slow-hidden", "8", "--slow-inner", "10", "--ar-train", "2000", "--ar-valid",
              "50", "--ar-test", "50", "--lanes", "4", "--window", "16", "--threads", "1",
              "--eval-every", "3", "--eval-lanes", "2", "--checkpoint-every", "2",
              "--progress", "0", "--no-test"]
        for name, args in (("standard", standard), ("ar-gfw", ar)):
            one, mpi = os.path.join(tmp, name + "-one"), os.path.join(tmp, name + "-mpi")
            run([train] + args + ["--lane-groups", "2", "--run-dir", one, "--steps", "6"])
            run(mpirun_command(2) + [train] + args + ["--run-dir", mpi, "--steps", "6"],
                env=mpi_env())
            same_run(one, mpi, "%s: -np 2 vs one process, 2 lane groups" % name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d check(s) failed" % failures)
        return 1
    print("ok: -np 2 = one process bit for bit (2 and 4 lane groups, resumed, the standard protocol, "
          "the AR task with the GFW), SIGTERM agreed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
