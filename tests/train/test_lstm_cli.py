#!/usr/bin/env python3
"""test_lstm_cli.py - fwm-train --arch lstm end to end on a tiny generated bAbI folder: a short run
with every dropout on writes an `lstm` model file that fwm-inspect verifies, fwm-run steps and
fwm-eval evaluates; a run stopped at a checkpoint and resumed writes the same model file, byte for
byte, and the same checkpoint (but its training-time field) as an uninterrupted run; the
architecture's flags are refused for the other architecture, and an LSTM checkpoint is refused by an
FWM run, naming the architectures. With MPI in the build and mpirun installed: `mpirun -np 2`
trains the same model, bit for bit, as one process with two lane groups (the dropout masks are
per lane of the run, whoever trains it).

usage: test_lstm_cli.py FWM_TRAIN FWM_EVAL FWM_INSPECT FWM_RUN HAVE_MPI(0|1)
"""
import shutil
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli import make_data, read_gguf  # noqa: E402  (the same tiny bAbI folder)
from test_mpi import mpi_env, mpirun_command  # noqa: E402

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
        p.returncode, expect_rc, " ".join(os.path.basename(a) for a in args[:3])))
    return p


def checkpoint_without_seconds(path, want_arch=1, arch_name="lstm"):
    """The checkpoint's bytes without its training-time field and the checksum (layout in
    train/checkpoint.c: "FWMTRCK1", u32 version, u32 size of the model block, the block, i32 mode,
    lanes, window, segment, u32 qmark, u64 seed, u64 data hash, i64 step, epoch, window_index,
    tokens, f64 seconds, ...). The block's first field is the architecture (fwm_arch): want_arch."""
    with open(path, "rb") as f:
        data = f.read()
    magic, version, block = struct.unpack_from("@8sII", data, 0)
    check(magic == b"FWMTRCK1" and version == 6, "checkpoint magic and version 6")
    (arch,) = struct.unpack_from("@I", data, 16)
    check(arch == want_arch, "checkpoint records architecture %d (%s), got %d"
          % (want_arch, arch_name, arch))
    seconds_at = struct.calcsize("@8sII%dsiiiiIQQqqqqd" % block) - 8
    return data[:seconds_at] + data[seconds_at + 8:-8]


def as_version_3(path, gfw_block=104):
    """Rewrite a version-6 checkpoint of an FWM, LSTM or MNM run as version 3 wrote it: the model
    block without its last parts (fwm_gfw_hparams, eight 4-byte fields; fwm_stm_hparams, 60
    bytes, and the STM's two u32 switches; the tied-embeddings flag, where version 5 had 4 bytes
    of padding: 104 bytes, zero for these architectures and an untied run), the header's version
    and block size, and the FNV-1a hash of the bytes before it."""
    with open(path, "rb") as f:
        data = f.read()
    magic, version, block = struct.unpack_from("@8sII", data, 0)
    check(version == 6 and data[16 + block - gfw_block:16 + block] == bytes(gfw_block),
          "a version-6 checkpoint with empty gfw and STM parts, untied")
    body = (struct.pack("@8sII", magic, 3, block - gfw_block) + data[16:16 + block - gfw_block]
            + data[16 + block:-8])
    h = 1469598103934665603
    for byte in body:
        h = ((h ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    with open(path, "wb") as f:
        f.write(body + struct.pack("@Q", h))


def as_version_5(path):
    """Rewrite a version-6 checkpoint of an untied run as version 5 wrote it: the same model block
    (the tied-embeddings flag sits where version 5 had zero padding), the header's version, and
    the FNV-1a hash of the bytes before it."""
    with open(path, "rb") as f:
        data = f.read()
    magic, version, block = struct.unpack_from("@8sII", data, 0)
    check(version == 6 and data[16 + block - 4:16 + block] == bytes(4),
          "a version-6 checkpoint of an untied run")
    body = struct.pack("@8sII", magic, 5, block) + data[16:-8]
    h = 1469598103934665603
    for byte in body:
        h = ((h ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    with open(path, "wb") as f:
        f.write(body + struct.pack("@Q", h))


def main():
    train, evaluate, inspect, fwm_run, have_mpi = sys.argv[1:6]
    tmp = tempfile.mkdtemp(prefix="fwm-test-lstm-cli-")
    data = os.path.join(tmp, "babi")
    make_data(data)

    def command(run_dir, steps, *extra):
        return [train, "--arch", "lstm", "--data", data, "--set", "1k", "--embedding", "8",
                "--hidden", "12", "--layers", "2", "--dropout-token", "0.1",
                "--dropout-embedding", "0.1", "--dropout-recurrent", "0.2", "--dropout-layer",
                "0.1", "--lanes", "3", "--window", "16", "--threads", "1", "--eval-every", "2",
                "--eval-lanes", "2", "--checkpoint-every", "2", "--progress", "0", "--mode", "qm",
                "--run-dir", run_dir, "--steps", str(steps)] + list(extra)

    a = os.path.join(tmp, "a")
    p = run(command(a, 5))
    check("LSTM E=8 H=12 L=2 residual" in p.stderr, "the run names its model (got %r)"
          % p.stderr[-400:])
    model = os.path.join(a, "model.gguf")
    check(os.path.exists(model), "model file written")
    info = run([inspect, model]).stdout
    for key, value in (("general.architecture", '"lstm"'), ("lstm.block_count", "2"),
                       ("lstm.hidden_size", "12"), ("lstm.embedding_length", "8"),
                       ("fwm.training.mode", '"qm"'), ("fwm.training.steps", "5"),
                       ("general.name", "lstm-catbabi-1k-qm")):
        line = next((l for l in info.splitlines() if l.strip().startswith(key + " ")), "")
        check(line and value in line, "model key %s with %s (got %r)" % (key, value, line))
    p = run([fwm_run, model, "--text", "Mary went to the kitchen. Where is Mary?", "--topk", "2"])
    check(p.stdout.count("\n") >= 9, "fwm-run steps the LSTM model (got %r)" % p.stdout[-300:])
    p = run([evaluate, model, "--data", data, "--set", "1k", "--split", "valid", "--lanes", "2",
             "--threads", "1"])
    check("  all " in p.stdout, "fwm-eval evaluates the LSTM model")

    # stopped at step 2 (the checkpoint), resumed to 5: the same bits
    b = os.path.join(tmp, "b")
    run(command(b, 2))
    run(command(b, 5, "--resume"))
    with open(model, "rb") as fa, open(os.path.join(b, "model.gguf"), "rb") as fb:
        check(fa.read() == fb.read(), "resumed run writes the uninterrupted run's model file")
    check(checkpoint_without_seconds(os.path.join(a, "checkpoint.bin")) ==
          checkpoint_without_seconds(os.path.join(b, "checkpoint.bin")),
          "resumed run's checkpoint equals the uninterrupted run's")
    # a version-3 checkpoint (before the gfw model) still resumes, to the same bits
    v3 = os.path.join(tmp, "v3")
    run(command(v3, 2))
    as_version_3(os.path.join(v3, "checkpoint.bin"))
    p = run(command(v3, 5, "--resume"))
    with open(model, "rb") as fa, open(os.path.join(v3, "model.gguf"), "rb") as fb:
        check(fa.read() == fb.read(), "a version-3 checkpoint resumes to the same model file")
    # a version-5 checkpoint (before --tie-embeddings) resumes as untied, to the same bits
    v5 = os.path.join(tmp, "v5")
    run(command(v5, 2))
    as_version_5(os.path.join(v5, "checkpoint.bin"))
    run(command(v5, 5, "--resume"))
    with open(model, "rb") as fa, open(os.path.join(v5, "model.gguf"), "rb") as fb:
        check(fa.read() == fb.read(), "a version-5 checkpoint resumes to the same model file")
    # and the dropout did something: without it the model differs
    c = os.path.join(tmp, "c")
    args = command(c, 5)
    for flag in ("--dropout-token", "--dropout-embedding", "--dropout-recurrent", "--dropout-layer"):
        args[args.index(flag) + 1] = "0"
    run(args)
    with open(model, "rb") as fa, open(os.path.join(c, "model.gguf"), "rb") as fc:
        check(fa.read() != fc.read(), "dropout changes the trained model")

    # --tie-embeddings (E == H = 12): output.weight stored equal to token_embd.weight
    t = os.path.join(tmp, "tied")
    tied = command(t, 2, "--tie-embeddings")
    tied[tied.index("--embedding") + 1] = "12"
    run(tied)
    _, tensors = read_gguf(os.path.join(t, "model.gguf"))
    check(tensors["output.weight"][2] == tensors["token_embd.weight"][2],
          "lstm, tied embeddings: output.weight stored equal to token_embd.weight")
    p = run(command(os.path.join(tmp, "tied-bad"), 1, "--tie-embeddings"), expect_rc=2)
    check("--tie-embeddings needs --hidden (12) equal to --embedding (8)" in p.stderr,
          "lstm: --tie-embeddings with E != H refused")

    # the other architecture's flags, and another architecture's checkpoint
    p = run(command(os.path.join(tmp, "d"), 1, "--memory-s", "4"), expect_rc=2)
    check("--memory-s does not apply to --arch lstm" in p.stderr, "FWM flag refused for lstm")
    p = run([train, "--layers", "9", "--data", data], expect_rc=2)
    check("--layers: at most 8 for --arch fwm" in p.stderr,
          "--layers above the stacked FWM's 8 refused for fwm")
    p = run([train, "--arch", "gfw", "--dropout-layer", "0.2", "--data", data], expect_rc=2)
    check("--arch lstm and fwm" in p.stderr, "dropout refused for gfw")
    p = run([train, "--arch", "rnn"], expect_rc=2)
    check("--arch expects fwm, lstm, mnm, gfw or stm" in p.stderr, "unknown architecture refused")
    p = run([train, "--data", data, "--set", "1k", "--embedding", "8", "--hidden", "12",
             "--memory-s", "4", "--memory-r", "3", "--memory-t", "4", "--reads", "2", "--lanes",
             "3", "--window", "16", "--threads", "1", "--progress", "0", "--mode", "qm",
             "--run-dir", a, "--steps", "6", "--resume"], expect_rc=1)
    check("architecture lstm" in p.stderr and "fwm" in p.stderr,
          "an FWM run refuses the LSTM checkpoint, naming both (got %r)" % p.stderr[-300:])
    if have_mpi == "1" and shutil.which("mpirun"):
        one, two = os.path.join(tmp, "one"), os.path.join(tmp, "two")
        run(command(one, 4, "--lane-groups", "2", "--lanes", "4", "--no-test"))
        p = subprocess.run(mpirun_command(2) + command(two, 4, "--lanes", "4", "--no-test"),
                           capture_output=True, text=True, env=mpi_env(), timeout=300)
        check(p.returncode == 0, "mpirun -np 2 fwm-train --arch lstm (got %r)" % p.stderr[-500:])
        with open(os.path.join(one, "model.gguf"), "rb") as f1, \
                open(os.path.join(two, "model.gguf"), "rb") as f2:
            check(f1.read() == f2.read(), "mpirun -np 2 trains one process's model (2 groups)")
    else:
        print("(no MPI: the mpirun comparison is skipped)")
    help_text = run([train, "--help"]).stdout
    for flag in ("--arch fwm|lstm", "--layers L", "--dropout-token P", "--dropout-embedding P",
                 "--dropout-recurrent P", "--dropout-layer P"):
        check(flag in help_text, "fwm-train --help lists %s" % flag)
    subprocess.run(["rm", "-rf", tmp])
    print("test_lstm_cli: %s" % ("all checks passed" if not failures else
                                 "%d check(s) failed" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
