#!/usr/bin/env python3
"""test_clients.py - fwm-cli (interactive and bAbI modes) and the Python client package against a real
fwm-serve with a random model made by fwm-init. One case per meson test:

  test_clients.py CASE --serve PATH --init PATH --cli PATH --babi DIR --source-root DIR
Exit 0 pass, 1 fail, 77 skip.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
from server_harness import PRIME, SKIP, Env, check, check_eq, read_stories, run_case  # noqa: E402


def case_cli_interactive(env, args):
    server = env.start([env.model()])
    script = "Mary moved to the bathroom.\nWhere is Mary?\n/topk 1\nJohn went to the hallway.\n/fork\n/stats\n/quit\n"
    p = subprocess.run([args.cli, "--connect", server.address], input=script, capture_output=True, text=True,
                       timeout=30)
    out = p.stdout
    check_eq(p.returncode, 0, "exit status")
    lines = out.splitlines()
    streamed = [line.split()[0] for line in lines if "->" in line]
    check_eq(streamed[:6], ["mary", "moved", "to", "the", "bathroom", "."], "streamed words")
    check(any(line.startswith("answer: ") for line in lines), "an answer line", out)
    check(len([line for line in lines if "->" in line and line.count(" 0.") == 1]) >= 6, "topk 1 honoured", out)
    check("(forked " in out and "sessions: 2" in out, "fork and stats", out)
    p = subprocess.run([args.cli, "--connect", server.address, "hello"], capture_output=True, text=True, timeout=30)
    check("fwm-serve" in p.stdout and "model test" in p.stdout, "hello", p.stdout)
    p = subprocess.run([args.cli, "--connect", "tcp://127.0.0.1:1", "hello"], capture_output=True, text=True,
                       timeout=30)
    check(p.returncode == 1 and "connect" in p.stderr, "a refused connection is reported", p.stderr)
    # /topk holds for answers too, also in a session made by /restore
    state = os.path.join(env.dir, "state.bin")
    script = ("Mary moved to the bathroom.\n/snapshot %s\n/restore %s\n/topk 4\nWhere is Mary?\n/topk 2\n"
              "Where is Mary?\n/quit\n" % (state, state))
    p = subprocess.run([args.cli, "--connect", server.address], input=script, capture_output=True, text=True,
                       timeout=30)
    answers = [line for line in p.stdout.splitlines() if line.startswith("answer: ")]
    check("(restored into session" in p.stdout and len(answers) == 2, "restored, two answers", p.stdout)
    check_eq([line.count(" 0.") + line.count("p=") for line in answers], [4, 2], "answer predictions per /topk")
    check_eq(server.stop(), 0, "server exit status")


def case_cli_commands(env, args):
    """fwm-cli's exit status (1 after a failed request, also when it went on; 2 for a usage error),
    `sessions` (each session where it is) and `close`."""
    from server_harness import Client
    server = env.start([env.model()])

    def cli(*argv, script=None):
        return subprocess.run([args.cli, "--connect", server.address] + list(argv), input=script,
                              capture_output=True, text=True, timeout=30)

    p = cli(script="Mary flew to the bathroom.\nJohn went to the hallway.\nWhere is John?\n")
    check_eq(p.returncode, 1, "exit status after an unknown word")
    check("unknown_word" in p.stderr and "flew" in p.stderr, "the error on stderr", p.stderr)
    check(any(line.startswith("answer: ") for line in p.stdout.splitlines()), "went on after it", p.stdout)
    check_eq(cli(script="Mary moved to the bathroom.\nWhere is Mary?\n").returncode, 0, "exit status, no errors")
    c = Client(server.address)
    a = c.call("open")["session"]
    b = c.call("open", prime=False)["session"]
    c.call("feed", session=a, text="Mary moved to the bathroom. Where is Mary?", notify=False)
    p = cli("sessions")
    check_eq(p.returncode, 0, "sessions: exit status " + p.stderr)
    listed = {line.split()[0]: line.split() for line in p.stdout.splitlines()}
    check_eq(sorted(listed), sorted([a, b]), "sessions lists both")
    check_eq([listed[a][1:4], listed[a][-1]], [["test", "pos", str(PRIME + 10)], "resident"], "session a's line")
    check_eq(listed[b][2:4], ["pos", "0"], "session b: unprimed, nothing read")
    check(listed[a][4] == "used" and listed[a][5].endswith("Z"), "last use in UTC", listed[a])
    p = cli("close", a)
    check_eq((p.returncode, p.stdout.strip()), (0, "closed " + a), "close")
    check_eq([line.split()[0] for line in cli("sessions").stdout.splitlines()], [b], "closed session gone")
    p = cli("close", a, b)
    check_eq(p.returncode, 1, "closing an unknown session fails")
    check("unknown_session" in p.stderr and ("closed " + b) in p.stdout, "names it, closes the other", p.stderr)
    check_eq(cli("sessions").stdout, "", "no sessions left")
    check_eq(cli("close").returncode, 2, "close without ids: usage error")
    check_eq(cli("frobnicate").returncode, 2, "unknown command: usage error")
    p = subprocess.run([args.cli, "--help"], capture_output=True, text=True, timeout=30)
    check("exit status" in p.stdout and "sessions" in p.stdout and "close ID" in p.stdout, "--help", p.stdout)
    check_eq(server.stop(), 0, "server exit status")


def case_cli_babi(env, args):
    files = [os.path.join(args.babi, "en-valid-10k", "qa%d_test.txt" % t) for t in (1, 5)]
    for f in files:
        if not os.path.exists(f):
            print("SKIP: no bAbI data at %s" % f)
            return SKIP
    server = env.start([env.model()])
    p = subprocess.run([args.cli, "--connect", server.address, "babi", "--stories", "20"] + files,
                       capture_output=True, text=True, timeout=60)
    check_eq(p.returncode, 0, "exit status: " + p.stderr)
    questions = sum(sum(1 for item in story if item[0] == "question") for f in files for story in
                    read_stories(f, limit=20))
    total = [line for line in p.stdout.splitlines() if line.startswith("total: ")]
    check(total, "a total line", p.stdout)
    right, _, asked = total[0][len("total: "):].split("=")[0].strip().partition(" / ")
    check_eq(int(asked), questions, "every question asked")
    check(0 <= int(right) <= questions, "right answers counted", total)
    st = env.servers[-1]
    check_eq(st.stop(), 0, "server exit status")
    print(p.stdout.strip())


def case_python_client(env, args):
    sys.path.insert(0, os.path.join(args.source_root, "clients", "python"))
    from fwm_client import Client, FwmError
    server = env.start([env.model()])
    with Client(server.address, timeout=10) as client:
        check_eq(client.hello()["server"], "fwm-serve", "hello")
        s = client.open(topk=2)
        events = list(s.stream("Mary moved to the bathroom."))
        check_eq([e["word"] for e in events], ["mary", "moved", "to", "the", "bathroom", "."], "stream words")
        check(all(len(e["topk"]) == 2 for e in events), "session topk", events)
        seen = []
        r = s.feed("John went to the hallway.", on_token=seen.append)
        check_eq((r["fed"], len(seen)), (6, 6), "feed with a callback")
        check_eq(s.feed("the")["pos"], PRIME + 13, "feed without notifications")
        a = s.ask("Where is Mary?", commit=True)
        check(a["answer"] and a["committed"], "ask with commit", a)
        check_eq(s.predict()["pos"], PRIME + 18, "position after the committed answer")
        blob = s.snapshot()
        r = client.restore(blob, topk=2)
        check_eq(r.predict(), {"session": r.id, "pos": PRIME + 18, "topk": []}, "no prediction until a token is read")
        s.feed("the")
        r.feed("the")
        check_eq(r.predict(), dict(s.predict(), session=r.id), "restored session continues alike")
        before = s.predict()
        t = s.trace("Where is Mary?", memory=True)
        S, R, T, N = t["shape"]
        check_eq((len(t["steps"]), [st["word"] for st in t["steps"]], len(t["memory"])),
                 (4, ["where", "is", "mary", "?"], 4 * S * R * T), "trace: one step per word, the memory")
        check_eq(len(t["steps"][-1]["reads"]), N, "trace: every read")
        check_eq(s.predict(), before, "trace leaves the session as it was")
        f = s.fork()
        f.feed("Sandra went to the garden.")
        check_eq(f.predict()["pos"], s.predict()["pos"] + 6, "fork diverges")
        try:
            s.feed("Mary flew.")
            raise AssertionError("unknown word accepted")
        except FwmError as e:
            check(e.name == "unknown_word" and e.word == "flew" and e.code == 5, "FwmError fields", vars(e))
        # sessions(): a list (sliceable, as documented), every page fetched, each at its position
        listed = client.sessions(page=1)
        check(isinstance(listed, list), "sessions() is a list", type(listed))
        check_eq(sorted(x["session"] for x in listed[:3]), sorted([s.id, r.id, f.id]), "every session, page by page")
        check_eq({x["session"]: x["pos"] for x in listed}, {x.id: x.predict()["pos"] for x in (s, r, f)},
                 "listed positions")
        again = Client(server.address).session(s.id)  # another connection, the same session
        check_eq(again.predict()["pos"], s.predict()["pos"], "reattach by id")
        again.client.close()
        s.reset()
        s.close()
        check_eq(client.stats()["sessions"], 2, "sessions after close")
    demo = subprocess.run([sys.executable, os.path.join(args.source_root, "clients", "python", "examples",
                                                         "dialogue_agent.py"), "--connect", server.address, "--demo",
                           "--memory", os.path.join(env.dir, "memory.bin")], capture_output=True, text=True,
                          timeout=30)
    check_eq(demo.returncode, 0, "dialogue_agent --demo: " + demo.stderr)
    check("agent:" in demo.stdout and "memory saved" in demo.stdout, "demo output", demo.stdout)
    demo2 = subprocess.run([sys.executable, os.path.join(args.source_root, "clients", "python", "examples",
                                                          "dialogue_agent.py"), "--connect", server.address,
                            "--memory", os.path.join(env.dir, "memory.bin")], input="Where is Daniel?\n!quit\n",
                           capture_output=True, text=True, timeout=30)
    check("memory restored" in demo2.stdout and "confidence" in demo2.stdout, "memory restored", demo2.stdout)
    # !whatif TEXT ? Q?: one "." after the supposition and one "?" after the question, as typed or not
    sys.path.insert(0, os.path.join(args.source_root, "clients", "python", "examples"))
    from dialogue_agent import parse_whatif
    for typed in ("Mary went to the kitchen. ? Where is Mary?", "Mary went to the kitchen ? Where is Mary",
                  "  Mary went to the kitchen.  ?  Where is Mary? "):
        check_eq(parse_whatif(typed), ("Mary went to the kitchen .", "Where is Mary?"), "parse_whatif(%r)" % typed)
    whatif = subprocess.run([sys.executable, os.path.join(args.source_root, "clients", "python", "examples",
                                                           "dialogue_agent.py"), "--connect", server.address],
                            input="Mary moved to the bathroom.\n!whatif Mary went to the kitchen. ? Where is Mary?\n"
                                  "!quit\n", capture_output=True, text=True, timeout=30)
    check(whatif.returncode == 0 and len(whatif.stdout.split()) >= 2, "!whatif answered", whatif.stdout, whatif.stderr)
    check_eq(server.stop(), 0, "server exit status")


def case_bundled_primed(env, args):
    """The bundled LM model through the Python client with its defaults, as a new user would use it:
    a new session is primed (it has read "<eos>", as every training story begins), so qa1's first 20
    test stories are answered as the evaluation answers them: every question right, by bAbI's own
    answers. fwm-cli babi gives the same count, and an unprimed session reads "<eos>" to match."""
    f = os.path.join(args.babi, "en-valid-10k", "qa1_test.txt")
    if not os.path.exists(f):
        print("SKIP: no bAbI data at %s" % f)
        return SKIP
    sys.path.insert(0, os.path.join(args.source_root, "clients", "python"))
    from fwm_client import Client
    server = env.start([os.path.join(args.source_root, "models", "fwm-babi-lm.gguf")])
    stories = read_stories(f, limit=20)
    with Client(server.address, timeout=10) as client:
        check_eq(client.hello()["models"][0]["prime"], ["<eos>"], "hello lists the prime words")
        right = asked = 0
        for story in stories:
            s = client.open()
            raw = client.open(prime=False)
            raw.feed("<eos>")
            for item in story:
                if item[0] == "statement":
                    s.feed(item[1])
                    raw.feed(item[1])
                else:
                    a = s.ask(item[1], commit=True)
                    check_eq(raw.ask(item[1], commit=True), dict(a, session=raw.id), "unprimed + '<eos>' = primed")
                    asked += 1
                    right += a["answer"] == item[2]
            s.close()
            raw.close()
    check_eq((right, asked), (100, 100), "qa1, 20 stories: every answer right")
    p = subprocess.run([args.cli, "--connect", server.address, "babi", "--stories", "20", f],
                       capture_output=True, text=True, timeout=60)
    check("total: 100 / 100" in p.stdout, "fwm-cli babi: the same count", p.stdout, p.stderr)
    check_eq(server.stop(), 0, "server exit status")


def case_logprobs(env, args):
    """The Python client's logprobs and unknown words, and fwm-cli --logprobs, on a tiny text model
    (fwm-train, as test_logprobs.py makes it): the log-probabilities agree with the full distributions
    the token notifications carry (topk = V), the unknown spans spell the words outside the vocabulary."""
    import math
    import re
    from test_logprobs import expected_tokens, reference_of, train
    sys.path.insert(0, os.path.join(args.source_root, "clients", "python"))
    from fwm_client import Client, FwmError, unknown_words
    path = train(env, "lstm", "cli_lstm")
    vocab, _, _ = reference_of(path)
    V = len(vocab)
    text = "The old woman walked to the café, and her sister was fond of the garden."
    ids, spans = expected_tokens(vocab, text)
    raw = text.encode()
    words = [raw[a:a + n].decode() for a, n in spans]
    check("café" in words and len(words) >= 3, "the text has unknown words", words)
    server = env.start([path], "--max-output-bytes", "4096")
    with Client(server.address, timeout=10) as client:
        m = client.hello()["models"][0]
        check_eq((m["tokenizer"], m["has_unknown_token"], m["logprobs"]), ("text", True, True), "hello's model")
        s = client.open()
        first = {w: p for w, p in s.predict(topk=V)["topk"]}
        events = []
        r = s.feed(text, topk=V, on_token=events.append, logprobs=True)
        check_eq(r["tokens"], ids, "the ids read")
        check_eq(r["unknown"], spans, "unknown spans")
        check_eq(unknown_words(text, r["unknown"]), words, "unknown_words spells them")
        dists = [first] + [{w: p for w, p in e["topk"]} for e in events[:-1]]
        worst = 0.0
        for lp, d, t in zip(r["logprobs"], dists, ids):
            worst = max(worst, abs(lp - math.log(d[vocab[t]])))
        check(worst < 1e-4, "logprobs agree with the streamed distributions", worst)
        streamed = s.stream("the garden", logprobs=True)
        try:
            while True:
                next(streamed)
        except StopIteration as stop:
            check_eq(len(stop.value["logprobs"]), 2, "stream returns feed's result with logprobs")
        a = s.ask("Where is the café")
        check_eq(unknown_words("Where is the café", a["unknown"])[-1:], ["café"], "ask's unknown words")
        pos = s.predict()["pos"]
        try:  # 400 tokens' ids and logprobs take more than 4096 bytes
            s.feed(" ".join(["the"] * 400), logprobs=True)
            check(False, "an over-limit logprobs feed is refused")
        except FwmError as e:
            check(e.name == "too_large" and "max-output-bytes 4096" in str(e), "too_large", e.name, str(e))
        check_eq(s.predict()["pos"], pos, "nothing fed")
        # fwm-cli --logprobs on a fresh session: the same numbers, printed to 4 decimals
        expected = client.open().feed(text, logprobs=True)["logprobs"]
    p = subprocess.run([args.cli, "--connect", server.address, "--logprobs", "--topk", "1"], input=text + "\n/quit\n",
                       capture_output=True, text=True, timeout=30)
    check_eq(p.returncode, 0, "fwm-cli exit status: " + p.stderr)
    printed = [float(x) for x in re.findall(r"ln p = +(-?[0-9.]+)  \(p=", p.stdout)]
    check_eq(len(printed), len(ids), "one line per token: " + p.stdout)
    check(all(abs(a - b) <= 1e-4 for a, b in zip(printed, expected)), "fwm-cli prints the logprobs", printed, expected)
    total = sum(expected)
    want = "(%d tokens: ln p = %.4f, perplexity %.3f)" % (len(ids), total, math.exp(-total / len(ids)))
    check(want in p.stdout, "the line's total and perplexity", want, p.stdout)
    check("(read as <unk>: %s)" % ", ".join(words) in p.stdout, "fwm-cli lists the unknown words", p.stdout)
    check_eq(server.stop(), 0, "server exit status")


CASES = {"cli_interactive": case_cli_interactive, "cli_commands": case_cli_commands, "cli_babi": case_cli_babi,
         "python_client": case_python_client, "bundled_primed": case_bundled_primed, "logprobs": case_logprobs}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES))
    for a in ("--serve", "--init", "--cli", "--babi", "--source-root"):
        ap.add_argument(a, required=True)
    args = ap.parse_args()
    env = Env(args)
    return run_case(env, args.case, lambda: CASES[args.case](env, args))


if __name__ == "__main__":
    sys.exit(main())
