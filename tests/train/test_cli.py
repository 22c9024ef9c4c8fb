#!/usr/bin/env python3
"""test_cli.py - fwm-train and fwm-eval end to end on a tiny generated bAbI folder: a short run
with evaluation, checkpoints, log and model file (provenance keys checked with fwm-inspect), a
resumed run that continues from the checkpoint, fwm-eval on the model, the instability watcher's
reports (a run whose learning rate rises until it falls apart, a steady run), and the error
messages for a missing file, a malformed line and a bad option.

usage: test_cli.py FWM_TRAIN FWM_EVAL FWM_INSPECT
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from fwm_reference import read_gguf  # noqa: E402  (a plain GGUF reader)

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
        p.returncode, expect_rc, os.path.basename(args[0])))
    return p


def make_data(root):
    names = ["mary", "john", "sandra", "daniel"]
    places = ["kitchen", "garden", "office", "hallway"]
    for folder in ("en-valid",):
        os.makedirs(os.path.join(root, folder))
        for task in range(1, 21):
            for split, n in (("train", 12), ("valid", 4), ("test", 4)):
                lines = []
                for s in range(n):
                    who, where = names[(s + task) % 4], places[(s * 3 + task) % 4]
                    lines += ["1 %s went to the %s." % (who.capitalize(), where),
                              "2 Where is %s? \t%s\t1" % (who.capitalize(), where)]
                with open(os.path.join(root, folder, "qa%d_%s.txt" % (task, split)), "w") as f:
                    f.write("\n".join(lines) + "\n")


def main():
    train, evaluate, inspect = sys.argv[1:4]
    tmp = tempfile.mkdtemp(prefix="fwm-test-cli-")
    data = os.path.join(tmp, "babi")
    make_data(data)
    run_dir = os.path.join(tmp, "run")
    common = [train, "--data", data, "--set", "1k", "--embed", "8", "--hidden", "12",
              "--mem-s", "4", "--mem-r", "3", "--mem-t", "4", "--reads", "2", "--lanes", "3",
              "--window", "16", "--threads", "1", "--eval-every", "2", "--eval-lanes", "2",
              "--checkpoint-every", "2", "--progress", "0.001", "--run-dir", run_dir,
              "--mode", "qm"]
    p = run(common + ["--steps", "3"])
    check("step 3/3" in p.stderr, "progress line 'step 3/3' (got %r)" % p.stderr[-300:])
    check("ETA" in p.stderr and "tok/s" in p.stderr, "progress line has tok/s and ETA")
    check("test accuracy at \"?\" per task" in p.stdout, "per-task test table printed")
    for name in ("checkpoint.bin", "log.csv", "curve.gp", "model.gguf"):
        check(os.path.exists(os.path.join(run_dir, name)), "%s written" % name)
    log = open(os.path.join(run_dir, "log.csv")).read().splitlines()
    check(log[0] == "step,epoch,tokens,seconds,lr,train_loss,train_acc,valid_acc,valid_ppl",
          "log.csv header (got %r)" % log[0])
    check([l.split(",")[0] for l in log[1:]] == ["2", "3"], "log.csv rows at steps 2, 3 (got %r)"
          % log[1:])
    # the same run under fwm-init's flag names (the old ones above are deprecated aliases): the
    # same model file, byte for byte, and a note for each old name used
    check(all("note: %s is deprecated; use %s" % pair in p.stderr for pair in (
        ("--embed", "--embedding"), ("--mem-s", "--memory-s"), ("--mem-r", "--memory-r"),
        ("--mem-t", "--memory-t"))), "deprecation notes for the old flag names")
    renamed = [{"--embed": "--embedding", "--mem-s": "--memory-s", "--mem-r": "--memory-r",
                "--mem-t": "--memory-t"}.get(a, a) for a in common]
    run_dir2 = os.path.join(tmp, "run-new-names")
    renamed[renamed.index("--run-dir") + 1] = run_dir2
    p2 = run(renamed + ["--steps", "3"])
    check("deprecated" not in p2.stderr, "no deprecation note with the new names")
    with open(os.path.join(run_dir, "model.gguf"), "rb") as a, open(os.path.join(run_dir2, "model.gguf"), "rb") as b:
        check(a.read() == b.read(), "new flag names train the same model as the old ones")
    help_text = run([train, "--help"]).stdout
    for flag in ("--embedding E", "--memory-s S", "--memory-r R", "--memory-t T", "--no-residual"):
        check(flag in help_text, "fwm-train --help lists %s" % flag)
    check("deprecated aliases of --embedding" in help_text, "--help names the deprecated aliases")
    info = run([inspect, os.path.join(run_dir, "model.gguf")]).stdout
    for key, value in (("fwm.training.mode", '"qm"'), ("fwm.training.steps", "3"),
                       ("fwm.read_policy", '"token"'), ("fwm.training.dataset", "en-valid"),
                       ("fwm.training.valid_accuracy", ""), ("fwm.training.test_accuracy", ""),
                       ("general.name", "fwm-catbabi-1k-qm")):
        line = next((l for l in info.splitlines() if l.strip().startswith(key + " ")), "")
        check(line and value in line, "model key %s with %s (got %r)" % (key, value, line))
    check('session start: 1 prime token ["<eos>"]\n' in info,
          "fwm-train writes the session start: <eos>, as every training story begins")
    # resume: continues at step 3 and goes on to 5
    p = run(common + ["--steps", "5", "--resume"])
    check("resumed from" in p.stderr and "at step 3" in p.stderr, "resume message")
    log = open(os.path.join(run_dir, "log.csv")).read().splitlines()
    check([l.split(",")[0] for l in log[1:]] == ["2", "3", "4", "5"], "log continues (got %r)" % log)
    # an existing run's checkpoint is not overwritten without --resume or --force
    checkpoint = os.path.join(run_dir, "checkpoint.bin")
    with open(checkpoint, "rb") as f:
        before = f.read()
    p = run(common + ["--steps", "7"], expect_rc=1)
    check(checkpoint in p.stderr and "--resume" in p.stderr and "--force" in p.stderr,
          "refusal names the checkpoint and the ways out (got %r)" % p.stderr[-300:])
    with open(checkpoint, "rb") as f:
        check(f.read() == before, "refused run left the checkpoint as it was")
    check("reading" not in p.stderr, "refused before reading any data")
    p = run(common + ["--steps", "1", "--resume", "--force"], expect_rc=2)
    check("contradict" in p.stderr, "--resume with --force refused")
    # fwm-eval on the model, with the model's vocabulary
    p = run([evaluate, os.path.join(run_dir, "model.gguf"), "--data", data, "--set", "1k",
             "--split", "valid", "--lanes", "2", "--threads", "1"])
    check("  all " in p.stdout and "answer perplexity" in p.stdout, "fwm-eval table")
    check(sum(1 for l in p.stdout.splitlines() if l.strip()[:2].strip().isdigit()) == 20,
          "fwm-eval: 20 task rows")
    # the stacked FWM (--layers 3: two LSTM layers below the FWM's): trains, writes a model with
    # fwm.block_count 3 that fwm-inspect and fwm-eval read, and resumes
    stacked_dir = os.path.join(tmp, "run-stacked")
    stacked = list(renamed)
    stacked[stacked.index("--run-dir") + 1] = stacked_dir
    p = run(stacked + ["--layers", "3", "--steps", "3"])
    check("L=3" in p.stderr, "--layers 3: the model line names L=3 (got %r)" % p.stderr[-300:])
    info = run([inspect, os.path.join(stacked_dir, "model.gguf")]).stdout
    line = next((l for l in info.splitlines() if l.strip().startswith("fwm.block_count ")), "")
    check(line.split()[-1:] == ["3"], "stacked model: fwm.block_count 3 (got %r)" % line)
    check("blk.1.lstm.weight_hh" in info, "stacked model: the lower layers' tensors")
    p = run(stacked + ["--layers", "3", "--steps", "5", "--resume"])
    check("resumed from" in p.stderr and "at step 3" in p.stderr, "stacked run resumes")
    p = run(stacked + ["--layers", "2", "--steps", "6", "--resume"], expect_rc=1)
    check("differs" in p.stderr, "resume with another --layers refused (got %r)" % p.stderr[-300:])
    p = run([evaluate, os.path.join(stacked_dir, "model.gguf"), "--data", data, "--set", "1k",
             "--split", "valid", "--lanes", "2", "--threads", "1"])
    check("  all " in p.stdout, "fwm-eval reads the stacked model")
    # with the AWD dropouts: stopped at step 3 and resumed to 5 trains the model of a run
    # straight to 5, byte for byte (the masks are functions of the seed, step and lane); without
    # dropout another model
    drop = ["--layers", "3", "--dropout-token", "0.1", "--dropout-embedding", "0.2",
            "--dropout-recurrent", "0.3", "--dropout-layer", "0.2"]
    straight = list(renamed)
    straight[straight.index("--run-dir") + 1] = os.path.join(tmp, "run-dropout-straight")
    p = run(straight + drop + ["--steps", "5"])
    check("dropout token 0.1 embedding 0.2 recurrent 0.3 layer 0.2" in p.stderr,
          "the model line names the dropouts (got %r)" % p.stderr[-400:])
    pieces = list(renamed)
    pieces[pieces.index("--run-dir") + 1] = os.path.join(tmp, "run-dropout-pieces")
    run(pieces + drop + ["--steps", "3"])
    p = run(pieces + drop[:4] + ["--steps", "5", "--resume"], expect_rc=1)
    check("dropout" in p.stderr, "resume with other dropouts refused (got %r)" % p.stderr[-300:])
    run(pieces + drop + ["--steps", "5", "--resume"])
    with open(os.path.join(tmp, "run-dropout-straight", "model.gguf"), "rb") as fa, \
            open(os.path.join(tmp, "run-dropout-pieces", "model.gguf"), "rb") as fb:
        dropped = fa.read()
        check(dropped == fb.read(), "stacked FWM with dropout: resumed run = straight run")
    with open(os.path.join(stacked_dir, "model.gguf"), "rb") as fc:
        check(dropped != fc.read(), "dropout changes the trained model")
    # --tie-embeddings (E == H): the output matrix is the embedding matrix; the file stores both,
    # equal; a resume without it is refused; E != H is refused
    tied = list(renamed)
    tied[tied.index("--run-dir") + 1] = os.path.join(tmp, "run-tied")
    tied[tied.index("--embedding") + 1] = "12"
    run(tied + ["--layers", "2", "--tie-embeddings", "--dropout-token", "0.1", "--steps", "3"])
    _, tensors = read_gguf(os.path.join(tmp, "run-tied", "model.gguf"))
    check(tensors["output.weight"][2] == tensors["token_embd.weight"][2],
          "tied embeddings: output.weight stored equal to token_embd.weight")
    p = run(tied + ["--layers", "2", "--dropout-token", "0.1", "--steps", "5", "--resume"],
            expect_rc=1)
    check("tied embeddings" in p.stderr, "resume without --tie-embeddings refused (got %r)"
          % p.stderr[-300:])
    run(tied + ["--layers", "2", "--tie-embeddings", "--dropout-token", "0.1", "--steps", "5",
                "--resume"])
    _, tensors = read_gguf(os.path.join(tmp, "run-tied", "model.gguf"))
    check(tensors["output.weight"][2] == tensors["token_embd.weight"][2],
          "tied embeddings: still equal after a resume")
    p = run(renamed + ["--tie-embeddings", "--steps", "1", "--force"], expect_rc=2)
    check("--tie-embeddings needs --hidden (12) equal to --embedding (8)" in p.stderr,
          "--tie-embeddings with E != H refused (got %r)" % p.stderr[-300:])
    p = run(stacked + ["--layers", "9", "--steps", "1", "--force"], expect_rc=2)
    check("at most 8" in p.stderr, "--layers 9 refused for the FWM (got %r)" % p.stderr[-300:])
    # the instability watcher (train/divergence.c) as the trainer prints it: an LSTM whose learning
    # rate rises to 10 over its 600 steps (the warm-up) learns, then falls apart (on every OpenBLAS
    # kernel set tried: Zen, Haswell, Sandybridge, Prescott); at lr 3e-3 nothing
    # is reported
    unstable = "the run may be going unstable"
    lstm = [train, "--arch", "lstm", "--embedding", "8", "--hidden", "16", "--layers", "1",
            "--data", data, "--set", "1k", "--mode", "lm", "--lanes", "4", "--window", "20",
            "--steps", "600", "--eval-every", "100", "--eval-lanes", "2", "--no-test",
            "--progress", "0", "--threads", "1"]
    p = run(lstm + ["--lr", "10", "--warmup", "600", "--run-dir", os.path.join(tmp, "rising")])
    reports = [line for line in p.stderr.splitlines() if unstable in line]
    check(any("the training loss's moving average" in line for line in reports)
          and any("validation accuracy" in line and "below its best" in line for line in reports),
          "a run falling apart is reported, by its loss and by its validation accuracy (got %r)"
          % reports)
    p = run(lstm + ["--lr", "0.003", "--run-dir", os.path.join(tmp, "steady")])
    check(unstable not in p.stderr, "a steady run reports nothing (got %r)" % p.stderr[-400:])
    # errors
    os.remove(os.path.join(data, "en-valid", "qa9_test.txt"))
    p = run(common + ["--steps", "1", "--force"], expect_rc=1)
    check("qa9_test.txt" in p.stderr, "missing file named (got %r)" % p.stderr[-300:])
    with open(os.path.join(data, "en-valid", "qa9_test.txt"), "w") as f:
        f.write("1 Mary went to the office.\n3 Where is Mary?\toffice\t1\n")
    p = run(common + ["--steps", "1", "--force"], expect_rc=1)
    check("qa9_test.txt:2: line ID 3" in p.stderr, "malformed line named (got %r)" % p.stderr[-300:])
    p = run([train, "--lanes", "zero"], expect_rc=2)
    check("--lanes expects an integer" in p.stderr, "bad option value named")
    p = run([evaluate, os.path.join(tmp, "missing.gguf"), "--data", data], expect_rc=1)
    check("missing.gguf" in p.stderr, "fwm-eval names a missing model")
    subprocess.run(["rm", "-rf", tmp])
    print("test_cli: %s" % ("all checks passed" if not failures else "%d check(s) failed" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
