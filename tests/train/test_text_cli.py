#!/usr/bin/env python3
"""test_text_cli.py - fwm-train and fwm-eval on plain text (--task text, docs/TEXT.md) end to end,
on a small generated corpus:

* the corpus: the counts fwm-train prints (tokens per split, the share of <unk>) and the model's
  vocabulary (<pad> <eos> <unk>, then the training words by frequency, ties in order of first
  appearance, the --vocab-size most frequent) equal this test's own count of the words (the corpus
  is written with its words and punctuation already apart, so splitting it on white space is the
  text rules' result); the model file says tokenizer "text" and <unk> = 2;
* learning: an LSTM trained a few hundred steps predicts the corpus far better than a uniform
  guess (valid perplexity under half the vocabulary size); RUN/best/best.txt names its best
  validation, and a run started over in the same folder (--force) keeps its own best;
* scoring: fwm-eval --task text's valid and test perplexities (one primed session, the state
  carried) equal those of the runtime-independent numpy references (lstm_reference.py,
  fwm_reference.py) over the same tokens, for an LSTM and an FWM; the temperature it picks on valid
  is the numpy grid's best (within a rounding tie), and its test figure at that temperature equals
  numpy's; the trainer's own test figure with one lane equals fwm-eval's;
* fwm-inspect --vocab lists that vocabulary; --embedding-init draws the embedding in its range;
  --name is the model's general.name (default ARCH-text), refused empty, over 63 bytes or with a
  control character;
* the runtime reads served text as training did: words outside the vocabulary become <unk>
  (fwm-run shows them), contractions split;
* refusals, each naming the problem: no --data, --mode with --task text, a missing split, an empty
  split, a --vocab-size above the training words, invalid UTF-8 (its byte), a catbAbI model given to
  fwm-eval --task text.

usage: test_text_cli.py FWM_TRAIN FWM_EVAL FWM_RUN FWM_INSPECT
"""
import math
import os
import re
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
from cli_checks import check, finish, run  # noqa: E402
import fwm_reference  # noqa: E402
import lstm_reference  # noqa: E402

NAMES = ["elinor", "marianne", "edward", "willoughby", "brandon", "fanny", "john", "lucy"]
PLACES = ["norland", "barton", "london", "cleveland", "delaford"]
VERBS = ["walked to", "wrote from", "returned to", "thought of", "dreamed of"]


def make_corpus(rng, paragraphs):
    """Paragraphs of simple sentences whose tokens are already apart (lower case, punctuation
    separated by spaces), so that splitting on white space is the text rules' result."""
    lines = []
    for _ in range(paragraphs):
        who = NAMES[rng.integers(len(NAMES))]
        sentences = []
        for _ in range(int(rng.integers(2, 5))):
            sentences.append("%s %s %s ." % (who, VERBS[rng.integers(len(VERBS))],
                                              PLACES[rng.integers(len(PLACES))]))
            if rng.random() < 0.3:
                sentences.append("%s , %s said ." % (who, NAMES[rng.integers(len(NAMES))]))
        lines.append(" ".join(sentences))
    return lines


def tokens_of(lines):
    out = []
    for line in lines:
        words = line.split()
        out += words + (["<eos>"] if words else [])
    return out


def vocabulary(train_tokens, size):
    count, first = {}, {}
    for i, w in enumerate(train_tokens):
        if w == "<eos>":
            continue
        count[w] = count.get(w, 0) + 1
        first.setdefault(w, i)
    order = sorted(count, key=lambda w: (-count[w], first[w]))
    return ["<pad>", "<eos>", "<unk>"] + order[:size]


def ids_of(tokens, vocab):
    index = {w: i for i, w in enumerate(vocab)}
    return [index.get(w, 2) for w in tokens]


def reference_nll(model, module, ids, temperatures):
    """-log p of every token (and at each temperature), the first scored by the primed start."""
    prime = [int(x) for x in model.prime_tokens] if hasattr(model, "prime_tokens") else [1]
    logits, _ = module.compute_logits(model, prime + ids[:-1])
    logits = logits[len(prime) - 1:]
    out = []
    for T in temperatures:
        z = logits / T
        z = z - z.max(axis=1, keepdims=True)
        lse = np.log(np.exp(z).sum(axis=1))
        out.append(float(-(z[np.arange(len(ids)), ids] - lse).sum()))
    return out


def parse_eval(text):
    f = {}
    m = re.search(r"valid perplexity ([0-9.]+) \((\d+) tokens", text)
    f["valid"], f["valid_tokens"] = float(m.group(1)), int(m.group(2))
    m = re.search(r"temperature ([0-9.]+): valid perplexity ([0-9.]+)", text)
    f["T"], f["valid_T"] = float(m.group(1)), float(m.group(2))
    m = re.search(r"test perplexity ([0-9.]+) \((\d+) tokens", text)
    f["test"], f["test_tokens"] = float(m.group(1)), int(m.group(2))
    m = re.search(r"\(tuned on valid\): test perplexity ([0-9.]+)", text)
    f["test_T"] = float(m.group(1))
    return f


def close(a, b, rel):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def main():
    fwm_train, fwm_eval, fwm_run, fwm_inspect = sys.argv[1:5]
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus")
        os.mkdir(corpus)
        splits = {"train": make_corpus(rng, 160), "valid": make_corpus(rng, 20),
                  "test": make_corpus(rng, 20)}
        splits["valid"][3] += " ashby arrived ."      # words outside the training split
        splits["test"][0] = "ashby , combe and allenham .\n\n" + splits["test"][0]
        for name, lines in splits.items():
            with open(os.path.join(corpus, name + ".txt"), "w") as f:
                f.write("\n".join(lines) + "\n")
        toks = {name: tokens_of(open(os.path.join(corpus, name + ".txt")).read().split("\n"))
                for name in splits}
        size = 16
        vocab = vocabulary(toks["train"], size)
        ids = {name: ids_of(t, vocab) for name, t in toks.items()}

        common = ["--task", "text", "--data", corpus, "--vocab-size", str(size), "--lanes", "4",
                  "--window", "20", "--threads", "1", "--progress", "0", "--eval-every", "100",
                  "--eval-lanes", "2", "--test-lanes", "1"]
        lstm_dir = os.path.join(tmp, "lstm")
        p = run([fwm_train] + common + ["--arch", "lstm", "--layers", "1", "--embedding", "12",
                                        "--hidden", "16", "--steps", "300", "--lr", "0.01",
                                        "--run-dir", lstm_dir])
        for name in ("train", "valid", "test"):
            unk = sum(1 for i in ids[name] if i == 2)
            m = re.search(r"%s\s+(\d+) tokens, <unk> ([0-9.]+)%%" % name, p.stderr)
            check(m and int(m.group(1)) == len(ids[name]),
                  "%s tokens printed %s, counted %d" % (name, m and m.group(1), len(ids[name])))
            check(m and abs(float(m.group(2)) - 100.0 * unk / len(ids[name])) < 0.006,
                  "%s <unk> share printed %s, counted %.2f%%" % (
                      name, m and m.group(2), 100.0 * unk / len(ids[name])))
        lstm_path = os.path.join(lstm_dir, "model.gguf")
        lstm = lstm_reference.Model(lstm_path)
        check(list(lstm.vocab) == vocab, "the model's vocabulary %s, counted %s" % (
            list(lstm.vocab)[:8], vocab[:8]))
        listed = run([fwm_inspect, "--vocab", lstm_path]).stdout.splitlines()
        check(listed == ["%d\t%s" % (i, w) for i, w in enumerate(vocab)],
              "fwm-inspect --vocab lists %s" % listed[:5])
        check(lstm.meta["tokenizer.ggml.model"][1] == "text", "tokenizer.ggml.model is text")
        check(lstm.meta["general.name"][1] == "lstm-text", "the default name is ARCH-text: %r"
              % (lstm.meta["general.name"][1],))
        check(lstm.meta["tokenizer.ggml.unknown_token_id"][1] == 2, "<unk> is token 2")
        trainer_test = float(re.search(r"test perplexity ([0-9.]+)", p.stdout).group(1))
        best_file = os.path.join(lstm_dir, "best", "best.txt")
        best_step, best_ppl = open(best_file).read().split()
        check(best_step in ("100", "200", "300") and float(best_ppl) < (size + 3) / 2,
              "best.txt names the run's best validation: %s %s" % (best_step, best_ppl))

        # a run started over (--force) keeps its own best, not the earlier run's
        again = os.path.join(tmp, "again")
        shutil.copytree(lstm_dir, again)
        run([fwm_train] + common + ["--arch", "lstm", "--layers", "1", "--embedding", "12",
                                    "--hidden", "16", "--steps", "100", "--lr", "0",
                                    "--run-dir", again, "--force", "--no-test"])
        step, ppl = open(os.path.join(again, "best", "best.txt")).read().split()
        check(step == "100" and float(ppl) > float(best_ppl),
              "after --force, best.txt is the new run's (%s %s), not %s %s" % (
                  step, ppl, best_step, best_ppl))

        fwm_dir = os.path.join(tmp, "fwm")
        run([fwm_train] + common + ["--arch", "fwm", "--embedding", "8", "--hidden", "12",
                                    "--memory-s", "4", "--memory-r", "4", "--memory-t", "4",
                                    "--steps", "40", "--run-dir", fwm_dir])
        fwm_path = os.path.join(fwm_dir, "model.gguf")

        grid = [round(0.80 + 0.01 * k, 2) for k in range(41)]
        for path, model, module in ((lstm_path, lstm, lstm_reference),
                                    (fwm_path, fwm_reference.Model(fwm_path), fwm_reference)):
            p = run([fwm_eval, path, "--task", "text", "--data", corpus])
            f = parse_eval(p.stdout)
            check(f["valid_tokens"] == len(ids["valid"]) and f["test_tokens"] == len(ids["test"]),
                  "%s: tokens scored %d/%d, counted %d/%d" % (
                      path, f["valid_tokens"], f["test_tokens"], len(ids["valid"]),
                      len(ids["test"])))
            nv = reference_nll(model, module, ids["valid"], [1.0] + grid)
            nt = reference_nll(model, module, ids["test"], [1.0] + grid)
            pv = math.exp(nv[0] / len(ids["valid"]))
            pt = math.exp(nt[0] / len(ids["test"]))
            check(close(f["valid"], pv, 2e-5), "%s: valid perplexity %.6f, numpy %.6f" % (
                path, f["valid"], pv))
            check(close(f["test"], pt, 2e-5), "%s: test perplexity %.6f, numpy %.6f" % (
                path, f["test"], pt))
            best = min(range(41), key=lambda k: nv[1 + k])
            k_eval = grid.index(f["T"])
            check(nv[1 + k_eval] - nv[1 + best] <= 1e-6 * abs(nv[1 + best]),
                  "%s: temperature %.2f chosen, numpy's best %.2f" % (path, f["T"], grid[best]))
            pt_T = math.exp(nt[1 + k_eval] / len(ids["test"]))
            check(close(f["test_T"], pt_T, 2e-5), "%s: test at T=%.2f %.6f, numpy %.6f" % (
                path, f["T"], f["test_T"], pt_T))
            if path == lstm_path:
                check(f["valid"] < (size + 3) / 2, "the LSTM learned: valid perplexity %.3f "
                      "(uniform: %d)" % (f["valid"], size + 3))
                check(close(trainer_test, f["test"], 1e-4),
                      "trainer's one-lane test perplexity %.4f, fwm-eval's %.4f" % (
                          trainer_test, f["test"]))

        # --embedding-init X: the embedding starts in U(-X, X) (one step of Adam at lr 1e-3 moves
        # an entry by at most about 1e-3); the FWM's own draw is N(0, 1)
        for flags, bound in ((["--embedding-init", "0.05"], 0.0515), ([], None)):
            d = os.path.join(tmp, "init%d" % len(flags))
            run([fwm_train] + common + ["--arch", "fwm", "--embedding", "8", "--hidden", "8",
                                        "--memory-s", "4", "--memory-r", "4", "--memory-t", "4",
                                        "--steps", "1", "--run-dir", d, "--no-test"] + flags)
            emb = fwm_reference.Model(os.path.join(d, "model.gguf")).w["token_embd.weight"]
            biggest = float(np.abs(emb).max())
            check(biggest <= bound if bound else biggest > 1.0,
                  "embedding after --embedding-init %s: largest |entry| %.4f" % (flags, biggest))

        # served text is read as training text was: unknown words become <unk>
        p = run([fwm_run, lstm_path, "--text", "Elinor wasn't at Allenham.", "--topk", "1"])
        read = [line.split("\t")[1] for line in p.stdout.splitlines()
                if re.match(r"^\d+\t", line)]
        said = ["elinor", "was", "n't", "at", "allenham", "."]
        check(read == [w if w in vocab else "<unk>" for w in said], "fwm-run read %s" % read)

        # refusals
        def refused(args, rc, pattern):
            p = run(args, expect_rc=rc)
            check(re.search(pattern, p.stderr), "message %r for %s" % (
                p.stderr.strip()[-300:], pattern))

        base = [fwm_train, "--task", "text", "--steps", "1", "--threads", "1", "--progress", "0",
                "--arch", "lstm", "--layers", "1", "--embedding", "4", "--hidden", "4",
                "--force"]
        refused(base + ["--run-dir", os.path.join(tmp, "r0")], 2, r"--task text needs --data")
        refused(base + ["--data", corpus, "--mode", "qm", "--run-dir", os.path.join(tmp, "r1")],
                2, r"--mode and --protocol are for --task catbabi")
        refused(base + ["--data", corpus, "--vocab-size", "100000",
                        "--run-dir", os.path.join(tmp, "r2")], 1,
                r"--vocab-size 100000 is more than the %d distinct words" % (
                    len(set(toks["train"])) - 1))
        bad = os.path.join(tmp, "bad")
        os.mkdir(bad)
        for name in ("train", "valid"):
            with open(os.path.join(bad, name + ".txt"), "w") as f:
                f.write("elinor walked .\n")
        refused(base + ["--data", bad, "--run-dir", os.path.join(tmp, "r3")], 1,
                r"cannot open .*bad/test\.txt")
        with open(os.path.join(bad, "test.txt"), "w") as f:
            f.write("\n\n   \n")
        refused(base + ["--data", bad, "--run-dir", os.path.join(tmp, "r4")], 1,
                r"bad/test\.txt has no words")
        with open(os.path.join(bad, "test.txt"), "w") as f:
            f.write("elinor .\n")
        with open(os.path.join(bad, "train.txt"), "wb") as f:
            f.write(b"elinor walked\nto \xc3\x28 norland .\n")
        refused(base + ["--data", bad, "--run-dir", os.path.join(tmp, "r5")], 1,
                r"bad/train\.txt: text: invalid UTF-8 at byte 17")
        # --name: the model's name in the file; refused when empty, too long or with a control byte
        named = os.path.join(tmp, "r6")
        run(base + ["--data", corpus, "--no-test", "--run-dir", named, "--name", "Élinor's LSTM"])
        check(lstm_reference.Model(os.path.join(named, "model.gguf")).meta["general.name"][1]
              == "Élinor's LSTM", "--name is the model's general.name")
        for bad_name in ("", "x" * 64, "two\nlines"):
            refused(base + ["--data", corpus, "--run-dir", os.path.join(tmp, "r7"), "--name", bad_name],
                    2, r"--name expects 1 to 63 bytes without control characters")
        check(not os.path.exists(os.path.join(tmp, "r7")), "a refused --name leaves no run folder")
        babi_model = os.path.join(HERE, "..", "..", "models", "fwm-babi-lm.gguf")
        if os.path.exists(babi_model):
            refused([fwm_eval, babi_model, "--task", "text", "--data", corpus], 1,
                    r"needs a text model \(tokenizer \"text\"\); this one's tokenizer is \"word\"")
        refused([fwm_eval, lstm_path, "--task", "text"], 2, r"--task text needs --data")

    return finish("text CLI checks passed")


if __name__ == "__main__":
    sys.exit(main())
