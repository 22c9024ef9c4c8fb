"""test_logprobs.py - fwm-serve's `feed` with `logprobs: true`, and the unknown words of text models.

Models: tiny "text" models (an LSTM, an FWM, an MNM) trained for a few steps by fwm-train --task text
on prose written here, so that many words are outside their 50-word vocabulary and read as <unk>;
and a word-tokenizer FWM without <unk> made by fwm-init from a vocabulary written here. fwm-train
is found beside fwm-serve in the build tree (build/train/fwm-train next to build/server/fwm-serve).

Cases (SCRIPT CASE --serve PATH --init PATH --babi DIR --source-root DIR):
  reference     each served token id is the text's word (split here by the text rules for the plain
                prose used), and each log-probability agrees with the numpy reference
                (tests/reference/lstm_reference.py, fwm_reference.py) within 1e-4: primed, unprimed
                (the zero state's scores), and after a restore (no cached prediction)
  split         a text fed whole and the same text fed in four calls: the same ids, logprobs within 1e-5
  over_limit    a logprobs feed whose reply would pass --max-output-bytes is refused (too_large), so are
                a feed and an ask listing too many unknown words, and logprobs on an architecture
                without fwm_session_predict (mnm: bad_params naming it), with the session's position
                and prediction unchanged; the memory the feeds held is returned
  durable       a durable session read back after a restart (from its snapshot after a clean stop, or
                its log replayed after kill -9)
                scores its next feed's first token as one never stopped (--data-dir)
  austen        the bundled Jane Austen models (models/lstm-austen.gguf, models/fwm-austen.gguf) read
                the opening of Persuasion from data/austen/test.txt (scripts/setup.sh) as raw text, a
                paragraph a feed: the token ids are the reference text rules' (tests/reference/
                text_rules.py) in the model's vocabulary, the <unk> spans are those words' bytes, the
                logprobs of the first tokens agree with the numpy reference, and the served perplexity
                equals fwm-eval --task text's over the same lines (same token count)
  unknown       feed, ask and trace list the byte spans of the words read as <unk>, checked against
                the words' byte offsets (non-ASCII words included); a model without <unk> still
                refuses an unknown word (unknown_word); hello and GET /v1/models report each model's
                tokenizer, whether it has an unknown token, and whether feed takes logprobs
"""
import json
import math
import os
import re
import subprocess
import sys
import urllib.request

from server_harness import Client, RpcError, SkipCase, check, check_eq, expect_error, main

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))

PROSE = [
    "The family of the old man had long been settled in the country, and their house was large.",
    "The old man had a sister, and she was the companion of his life for many years.",
    "But her death, which came ten years before his own, was a great change in his home.",
    "He invited the family of his nephew to live in the house, and the nephew came with his wife.",
    "The old man was fond of the children, and the children were fond of him.",
    "His nephew was a good man, and his wife was a good woman, and the house was happy.",
    "In the spring the family walked in the garden, and in the winter they sat by the fire.",
    "The nephew had a son by his first wife, and the son was a young man of the town.",
]
TEXT = ("The old woman of the house walked to the garden with her nephew, and the café was quiet. "
        "Her sister had a house in the town, and the family was fond of the children.")


def train(env, arch, name):
    """A text model of `arch` trained for a few steps on PROSE; its path."""
    data = os.path.join(env.dir, "prose")
    if not os.path.isdir(data):
        os.makedirs(data)
        for part, lines in (("train", PROSE * 3), ("valid", PROSE[:3]), ("test", PROSE[3:6])):
            with open(os.path.join(data, part + ".txt"), "w") as f:
                f.write("\n".join(lines) + "\n")
    trainer = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(env.serve))), "train", "fwm-train")
    if not os.access(trainer, os.X_OK):
        raise SkipCase("no fwm-train beside fwm-serve at %s" % trainer)
    run_dir = os.path.join(env.dir, name)
    sizes = {"lstm": ["--layers", "2"], "fwm": ["--memory-s", "4", "--memory-r", "4", "--memory-t", "4"],
             "mnm": []}[arch]
    cmd = [trainer, "--task", "text", "--data", data, "--vocab-size", "50", "--arch", arch, "--embedding", "8",
           "--hidden", "8", "--steps", "3", "--lanes", "2", "--window", "10", "--eval-every", "0", "--no-test",
           "--threads", "1", "--seed", "5", "--run-dir", run_dir, "--force"] + sizes
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    return os.path.join(run_dir, "model.gguf")


def reference_of(path):
    """(vocab, prime tokens, logits(tokens, primed) -> [len + 1, V]): the numpy reference's scores
    before each token and after the last, from the model's start (primed) or the zero state."""
    try:
        import numpy as np
        import fwm_reference
        import lstm_reference
    except ImportError as e:
        raise SkipCase("the numpy reference needs numpy: %s" % e)
    meta, _ = fwm_reference.read_gguf(path)
    arch = meta["general.architecture"][1]
    prime = [int(x) for x in meta.get("fwm.session.prime_tokens", (0, [meta["tokenizer.ggml.eos_token_id"][1]]))[1]]
    if arch == "lstm":
        model = lstm_reference.Model(path)
        runner = lstm_reference.Runner(model)
        zero = model.w["output.bias"]
    else:
        model = fwm_reference.Model(path)
        runner = fwm_reference.Runner(model)
        hp, w = model.hp, model.w
        # the zero state: h = 0 and F = 0, so every read retrieves LN(0) = 0 and m = b_o
        reads = hp["read_policy"] == "always"
        zero = w["output.weight"] @ (w["fwm.out.bias"] if reads else np.zeros(hp["hidden_size"]))

    def logits(tokens, primed):
        run = type(runner)(model)
        rows = [run.step(x) for x in prime] if primed else [zero]
        rows = rows[-1:] + [run.step(int(x)) for x in tokens]
        return np.stack(rows)

    return model.vocab, prime, logits


def log_softmax_at(row, token):
    m = max(row)
    return float(row[token] - m - math.log(sum(math.exp(x - m) for x in row)))


def words_of(text):
    """The text rules for plain prose of letters (non-ASCII counting as letters), spaces, commas and
    periods: (word lower-cased, byte start, byte length) of each token."""
    out = []
    for m in re.finditer(r"[A-Za-z0-9\u0080-\U0010ffff]+|[.,]", text):
        start = len(text[:m.start()].encode())
        word = m.group(0)
        out.append((re.sub("[A-Z]", lambda c: c.group(0).lower(), word), start, len(word.encode())))
    return out


def expected_tokens(vocab, text):
    """Token ids, and the [start, length] spans of words outside the vocabulary (read as <unk>)."""
    index = {w: i for i, w in enumerate(vocab)}
    ids, unknown = [], []
    for word, start, length in words_of(text):
        if word in index:
            ids.append(index[word])
        else:
            ids.append(index["<unk>"])
            unknown.append([start, length])
    return ids, unknown


def close(found, expected, tolerance, what):
    check_eq(len(found), len(expected), what + ": count")
    worst = max((abs(a - b) for a, b in zip(found, expected)), default=0.0)
    check(worst <= tolerance, "%s: within %g" % (what, tolerance), worst, found[:5], expected[:5])


def case_reference(env):
    for arch in ("lstm", "fwm"):
        path = train(env, arch, "ref_" + arch)
        vocab, prime, logits = reference_of(path)
        ids, unknown = expected_tokens(vocab, TEXT)
        check(len(unknown) >= 5 and 0 < len(ids) - len(unknown), "%s: the text has known and unknown words" % arch,
              len(ids), unknown)
        server = env.start([path])
        c = Client(server.address)
        for primed in (True, False):
            s = c.call("open", prime=primed)["session"]
            r = c.call("feed", session=s, text=TEXT, logprobs=True, notify=False)
            what = "%s, %s" % (arch, "primed" if primed else "unprimed")
            check_eq(r["tokens"], ids, what + ": the token ids are the text's words")
            check_eq(r["unknown"], unknown, what + ": unknown spans")
            check_eq((r["fed"], r["pos"]), (len(ids), len(ids) + (len(prime) if primed else 0)), what + ": fed, pos")
            rows = logits(ids, primed)
            want = [log_softmax_at(rows[i], t) for i, t in enumerate(ids)]
            close(r["logprobs"], want, 1e-4, what + ": logprobs against the numpy reference")
            check(all(x < 0 for x in r["logprobs"]), what + ": log-probabilities are negative", r["logprobs"][:5])
        # a restored session holds no cached prediction: its first token is scored from the state
        s = c.call("open")["session"]
        half = len(ids) // 2
        first = c.call("feed", session=s, tokens=ids[:half], logprobs=True, notify=False)
        blob = c.call("snapshot", session=s)["state"]
        t = c.call("restore", state=blob)["session"]
        check_eq(c.call("predict", session=t)["topk"], [], arch + ": a restored session has no cached prediction")
        rest = c.call("feed", session=t, tokens=ids[half:], logprobs=True, notify=False)
        own = c.call("feed", session=s, tokens=ids[half:], logprobs=True, notify=False)
        rows = logits(ids, True)
        want = [log_softmax_at(rows[i], t) for i, t in enumerate(ids)]
        close(first["logprobs"] + rest["logprobs"], want, 1e-4, arch + ": restored, against the reference")
        close(rest["logprobs"], own["logprobs"], 1e-5, arch + ": restored, against the session it came from")
        check_eq(rest["unknown"], [], arch + ": a feed of token ids has no unknown words")
        c.close()
        check_eq(server.stop(), 0, "server exit status")


def case_split(env):
    for arch in ("lstm", "fwm"):
        path = train(env, arch, "split_" + arch)
        server = env.start([path])
        c = Client(server.address)
        whole = c.call("feed", session=c.call("open")["session"], text=TEXT, logprobs=True)
        s = c.call("open")["session"]
        cut = [m.start() for m in re.finditer(" ", TEXT)]
        bounds = [0, cut[len(cut) // 5], cut[len(cut) // 2], cut[4 * len(cut) // 5], len(TEXT)]
        ids, lp, unknown = [], [], []
        for a, b in zip(bounds, bounds[1:]):
            r = c.call("feed", session=s, text=TEXT[a:b], logprobs=True)
            check_eq(len(r["tokens"]), len(r["logprobs"]), arch + ": one logprob per token")
            ids += r["tokens"]
            lp += r["logprobs"]
            offset = len(TEXT[:a].encode())  # spans are bytes of the call's own text
            unknown += [[x + offset, n] for x, n in r["unknown"]]
        check_eq(ids, whole["tokens"], arch + ": the same ids fed in four calls")
        close(lp, whole["logprobs"], 1e-5, arch + ": the same logprobs fed in four calls")
        check_eq(unknown, whole["unknown"], arch + ": the same unknown words, at the same bytes")
        # token notifications are still sent, one per token, with logprobs asked for
        check_eq([n["token"] for n in c.take_tokens(s)], ids, arch + ": notifications beside logprobs")
        c.close()
        check_eq(server.stop(), 0, "server exit status")


def case_over_limit(env):
    path = train(env, "lstm", "limit_lstm")
    mnm = train(env, "mnm", "limit_mnm")
    server = env.start([path, mnm], "--max-output-bytes", "1024")
    c = Client(server.address)
    s = c.call("open")["session"]
    c.call("feed", session=s, text="the old man", logprobs=True)
    before = c.call("predict", session=s, topk=3)
    stats = c.call("stats")
    long_text = " ".join(["the family of the old man"] * 14)  # 84 tokens: over 1024 bytes of logprobs
    e = expect_error("too_large", c.call, "feed", session=s, text=long_text, logprobs=True)
    check("max-output-bytes 1024" in e.message and "logprobs" in e.message, "the refusal names the limit", e.message)
    after = c.call("predict", session=s, topk=3)
    check_eq((after["pos"], after["topk"]), (before["pos"], before["topk"]), "nothing was stepped")
    # without logprobs the same feed is fine; with fewer tokens per call too
    r = c.call("feed", session=s, text=long_text, notify=False)
    check_eq(r["pos"], before["pos"] + 84, "the feed without logprobs")
    check("tokens" not in r and "logprobs" not in r, "no logprobs unless asked", sorted(r))
    r = c.call("feed", session=s, text=" ".join(["the family of the old man"] * 5), logprobs=True, notify=False)
    check_eq(len(r["logprobs"]), 30, "a logprobs feed within the limit")
    # a reply listing many unknown words is bounded too: 60 spans of up to 19 bytes pass 1024 bytes
    strange = " ".join(["zyzzyva%d" % i for i in range(60)])
    pos = c.call("predict", session=s)["pos"]
    e = expect_error("too_large", c.call, "feed", session=s, text=strange)
    check("outside the vocabulary" in e.message and "max-output-bytes 1024" in e.message, "feed: names it", e.message)
    e = expect_error("too_large", c.call, "ask", session=s, question=strange)
    check("outside the vocabulary" in e.message and "max-output-bytes 1024" in e.message, "ask: names it", e.message)
    check_eq(c.call("predict", session=s)["pos"], pos, "nothing was read")
    check_eq(len(c.call("feed", session=s, text=strange[:200])["unknown"]), len(strange[:200].split()),
             "fewer unknown words fit")
    # the memory a logprobs feed holds is returned when it ends
    mem = c.call("stats")["memory"]
    check_eq(mem["used_bytes"] - mem["output_queued_bytes"] - mem["input_buffer_bytes"],
             stats["memory"]["used_bytes"] - stats["memory"]["output_queued_bytes"]
             - stats["memory"]["input_buffer_bytes"],
             "no memory held after the feeds")
    # an architecture whose scores before the first token need a step
    m = c.call("open", model=c.call("hello")["models"][1]["name"])["session"]
    pos = c.call("predict", session=m)["pos"]
    e = expect_error("bad_params", c.call, "feed", session=m, text="the old man", logprobs=True)
    check("'mnm'" in e.message and "logprobs" in e.message, "the refusal names the architecture", e.message)
    check_eq(c.call("predict", session=m)["pos"], pos, "nothing was stepped")
    check_eq(c.call("feed", session=m, text="the old man")["pos"], pos + 3, "the mnm feeds without logprobs")
    hello = c.call("hello")["models"]
    check_eq([x["logprobs"] for x in hello], [True, False], "hello: which models take logprobs")
    c.close()
    check_eq(server.stop(), 0, "server exit status")


def case_unknown(env):
    lstm = train(env, "lstm", "unk_lstm")
    fwm = train(env, "fwm", "unk_fwm")
    vocab_path = os.path.join(env.dir, "words.txt")
    with open(vocab_path, "w") as f:
        f.write("\n".join(["<pad>", "<eos>", "mary", "went", "to", "the", "garden", ".", "where", "is", "?"]) + "\n")
    word = os.path.join(env.dir, "word.gguf")
    subprocess.run([env.init, "--out", word, "--vocab", vocab_path, "--embedding", "8", "--hidden", "8",
                    "--memory-s", "4", "--memory-r", "4", "--memory-t", "4", "--seed", "2"],
                   check=True, stdout=subprocess.DEVNULL, timeout=60)
    server = env.start([lstm, fwm, word], "--http", "tcp://127.0.0.1:0")
    c = Client(server.address)
    models = c.call("hello")["models"]
    names = [m["name"] for m in models]
    check_eq([(m["tokenizer"], m["has_unknown_token"], m["logprobs"]) for m in models],
             [("text", True, True), ("text", True, True), ("word", False, True)], "hello: tokenizer, <unk>, logprobs")
    http = [a for a in server.addresses if a.startswith("http://")][0]
    with urllib.request.urlopen(http + "/v1/models", timeout=10) as resp:
        listed = json.load(resp)["data"]
    check_eq([(m["id"], m["tokenizer"], m["has_unknown_token"], m["logprobs"]) for m in listed],
             [(names[0], "text", True, True), (names[1], "text", True, True), (names[2], "word", False, True)],
             "/v1/models: tokenizer, <unk>, logprobs")

    text = "Her cousin Élise walked to the garden, and the café was quiet."
    raw = text.encode()
    for model, path in ((names[0], lstm), (names[1], fwm)):
        vocab, _, _ = reference_of(path)
        _, unknown = expected_tokens(vocab, text)
        spelled = [raw[a:a + n].decode() for a, n in unknown]
        check("café" in spelled and "Élise" in spelled, "non-ASCII words are among the unknown ones", spelled)
        s = c.call("open", model=model)["session"]
        r = c.call("feed", session=s, text=text)
        check_eq(r["unknown"], unknown, model + ": feed's unknown spans")
        check_eq([raw[a:a + n].decode() for a, n in r["unknown"]], spelled, model + ": the spans spell the words")
        question = "Where was Élise and the café"
        r = c.call("ask", session=s, question=question)
        check_eq(r["unknown"], expected_tokens(vocab, question)[1], model + ": ask's unknown spans")
        q = question.encode()
        check("Élise" in [q[a:a + n].decode() for a, n in r["unknown"]], model + ": ask lists Élise", r["unknown"])
        known = " ".join(w for w in vocab if re.fullmatch("[a-z]+", w))
        r = c.call("feed", session=s, text=known)
        check_eq(r["unknown"], [], model + ": no spans when every word is known")
    # trace (FWM models): the same spans
    s = c.call("open", model=names[1])["session"]
    r = c.call("trace", session=s, text=text, topk=1)
    check_eq(r["unknown"], unknown, "trace's unknown spans")
    check_eq(len(r["steps"]), len(words_of(text)), "trace read every word")
    # a model without <unk> still refuses the word, naming it
    s = c.call("open", model=names[2])["session"]
    e = expect_error("unknown_word", c.call, "feed", session=s, text="Mary went to the kitchen.")
    check_eq(e.error.get("word"), "kitchen", "the unknown word")
    r = c.call("feed", session=s, text="Mary went to the garden.")
    check_eq(r["unknown"], [], "a word model's feed: no unknown words")
    c.close()
    check_eq(server.stop(), 0, "server exit status")


def case_durable(env):
    """A durable session read back from the store (after a restart: from its snapshot, or its log
    replayed) scores the next feed's first token as the session that was never stopped."""
    for arch in ("lstm", "fwm"):
        path = train(env, arch, "durable_" + arch)
        vocab, _, logits = reference_of(path)
        ids, _ = expected_tokens(vocab, TEXT)
        half = len(ids) // 2
        # the state from a snapshot (a clean stop snapshots every session), or its log replayed (killed)
        for snapshot_tokens, stop in (("1", True), ("1000", False)):
            data = os.path.join(env.dir, "data-%s-%s" % (arch, snapshot_tokens))
            flags = ["--data-dir", data, "--snapshot-tokens", snapshot_tokens]
            server = env.start([path], *flags)
            c = Client(server.address)
            s = c.call("open")["session"]
            first = c.call("feed", session=s, tokens=ids[:half], logprobs=True, notify=False)["logprobs"]
            c.close()
            if stop:
                check_eq(server.stop(), 0, "server exit status")
            else:
                server.kill()  # the feed was answered once its log record was committed
            server = env.start([path], *flags)
            c = Client(server.address)
            rest = c.call("feed", session=s, tokens=ids[half:], logprobs=True, notify=False)["logprobs"]
            rows = logits(ids, True)
            want = [log_softmax_at(rows[i], t) for i, t in enumerate(ids)]
            close(first + rest, want, 1e-4, "%s, snapshot-tokens %s: across a restart" % (arch, snapshot_tokens))
            t = c.call("open")["session"]
            whole = c.call("feed", session=t, tokens=ids, logprobs=True, notify=False)["logprobs"]
            close(first + rest, whole, 1e-5, "%s, snapshot-tokens %s: as one feed" % (arch, snapshot_tokens))
            c.close()
            check_eq(server.stop(), 0, "server exit status")


AUSTEN_MODELS = (("lstm", "lstm-austen.gguf"), ("fwm", "fwm-austen.gguf"))
AUSTEN_LINES = 14  # Persuasion's title lines and first paragraphs: about 900 tokens
AUSTEN_REFERENCE_TOKENS = 120  # how many of them the numpy reference scores


def case_austen(env):
    try:
        import text_rules
    except ImportError as e:
        raise SkipCase("the reference text rules: %s" % e)
    corpus = os.path.join(env.source_root, "data", "austen", "test.txt")
    if not os.path.exists(corpus):
        raise SkipCase("no %s: scripts/setup.sh prepares the corpus (docs/CORPUS.md)" % corpus)
    with open(corpus, "rb") as f:
        lines = [f.readline() for _ in range(AUSTEN_LINES)]
    check(all(line.endswith(b"\n") for line in lines), "the passage's lines are whole", lines[-1][-20:])
    passage = b"".join(lines)
    data = os.path.join(env.dir, "persuasion")
    os.makedirs(data)
    for split in ("valid", "test"):
        with open(os.path.join(data, split + ".txt"), "wb") as f:
            f.write(passage)
    evaluate = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(env.serve))), "train", "fwm-eval")
    if not os.access(evaluate, os.X_OK):
        raise SkipCase("no fwm-eval beside fwm-serve at %s" % evaluate)
    paths = [os.path.join(env.source_root, "models", name) for _, name in AUSTEN_MODELS]
    server = env.start(paths)
    c = Client(server.address)
    served = c.call("hello")["models"]
    names = [m["name"] for m in served]
    check_eq([m["tokenizer"] for m in served], ["text", "text"], "both read any text")
    perplexities = {}
    for (arch, _), path, name in zip(AUSTEN_MODELS, paths, names):
        vocab, _, logits = reference_of(path)
        check_eq(len(vocab), 10003, arch + ": the 10,000 words of the model card and <pad> <eos> <unk>")
        index = {w: i for i, w in enumerate(vocab)}
        s = c.call("open", model=name)["session"]
        ids, lp, unknown, want_ids, want_unknown = [], [], [], [], []
        for line in lines:
            r = c.call("feed", session=s, text=line.decode(), logprobs=True, notify=False)
            ids += r["tokens"]
            lp += r["logprobs"]
            unknown += [[a, n] for a, n in r["unknown"]]
            for text, start, end, _ in text_rules.split(line):
                want_ids.append(index.get(text, index["<unk>"]))
                if text not in index:
                    want_unknown.append([start, end - start])
        check_eq(ids, want_ids, arch + ": the token ids are the reference text rules' words")
        check_eq(unknown, want_unknown, arch + ": the <unk> spans are the unknown words' bytes")
        check(0 < len(unknown) < len(ids) // 10, arch + ": a few words read as <unk>", len(unknown), len(ids))
        check_eq(ids.count(index["<eos>"]), AUSTEN_LINES, arch + ": an <eos> per paragraph")
        head = ids[:AUSTEN_REFERENCE_TOKENS]
        rows = logits(head, True)
        want = [log_softmax_at(rows[i], t) for i, t in enumerate(head)]
        close(lp[:len(head)], want, 1e-4, arch + ": logprobs against the numpy reference")
        served = math.exp(-sum(lp) / len(lp))
        p = subprocess.run([evaluate, path, "--task", "text", "--data", data, "--threads", "1"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
        check(p.returncode == 0, arch + ": fwm-eval's exit status", p.returncode, p.stdout[-2000:])
        m = re.search(r"^test perplexity ([0-9.]+) \((\d+) tokens", p.stdout, re.M)
        check(m is not None, arch + ": fwm-eval prints the test perplexity", p.stdout[-2000:])
        check_eq(int(m.group(2)), len(ids), arch + ": fwm-eval scores the tokens the server read")
        check(abs(float(m.group(1)) - served) <= 1e-4 * served,
              arch + ": the served perplexity is fwm-eval's", served, m.group(1))
        perplexities[arch] = served
    c.close()
    check_eq(server.stop(), 0, "server exit status")
    print("the opening of Persuasion (%d lines): perplexity %s" % (AUSTEN_LINES, perplexities))


if __name__ == "__main__":
    sys.exit(main({"reference": case_reference, "split": case_split, "over_limit": case_over_limit,
                   "unknown": case_unknown, "durable": case_durable,
                   "austen": case_austen}))
