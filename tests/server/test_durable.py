#!/usr/bin/env python3
"""test_durable.py - durable sessions of fwm-serve (--data-dir), over real sockets, one case per test:

  test_durable.py CASE --serve PATH --init PATH --babi DIR --source-root DIR

Crash safety is tested by crashing: sessions stream real bAbI stories, the server is killed with
SIGKILL at random moments, restarted on the same data folder, and every session must be at least
at its last acknowledged position and predict, bit for bit, what a reference session fed exactly
the acknowledged operations (plus at most the one unacknowledged) predicts. The reference is a
second fwm-serve in memory-only mode, so the durable path (log, snapshots, replay) is compared with
plain stepping. Exit 0 pass, 1 fail, 77 skip.
"""
import os
import random
import signal
import subprocess
import sys
import threading
import time


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_harness import main as harness_main  # noqa: E402
from server_harness import (PRIME, Client, RpcError, babi_files, check, check_eq, expect_error,  # noqa: E402
                            SkipCase, read_stories, stored_count, tokenize)

TOPK = 12


# ---- helpers ----------------------------------------------------------------------------------------

def vocabulary(env):
    with open(env.vocab()) as f:
        words = f.read().split("\n")
    return {w: i for i, w in enumerate(words) if w}


def story_streams(env, count, seed):
    """`count` endless streams of bAbI test-story items (statements and questions), all 20 tasks."""
    rng = random.Random(seed)
    tasks = [read_stories(f, limit=40) for f in babi_files(env.babi, "test")]
    streams = []
    for i in range(count):
        task = tasks[i % len(tasks)]
        order = list(range(len(task)))
        rng.shuffle(order)
        items = []
        for k in order:
            items.append(("eos",))
            items += task[k]
        streams.append(items)
    return streams


class Reference:
    """A memory-only fwm-serve: a fresh session fed exactly a list of operations, then predict."""

    def __init__(self, env, model):
        self.vocab = vocabulary(env)
        self.server = env.start([model], "--max-sessions", "100000")
        self.client = Client(self.server.address)

    def predict(self, ops):
        c = self.client
        s = c.call("open")["session"]
        for op in ops:
            if op[0] in ("reset", "reset_raw"):
                c.call("reset", session=s, prime=op[0] == "reset")
            elif op[1]:
                c.call("feed", session=s, tokens=op[1], notify=False)
        p = c.call("predict", session=s, topk=TOPK)
        c.call("close", session=s)
        return p["pos"], p["topk"]

    def answer(self, ops, question):
        """The token `ask` with commit would answer after `ops`: the top prediction after the question."""
        c = self.client
        s = c.call("open")["session"]
        for op in ops + [("tokens", question)]:
            if op[0] in ("reset", "reset_raw"):
                c.call("reset", session=s, prime=op[0] == "reset")
            elif op[1]:
                c.call("feed", session=s, tokens=op[1], notify=False)
        top = c.call("predict", session=s, topk=1)["topk"][0][0]
        c.call("close", session=s)
        return self.vocab[top]


def ops_pos(ops):
    """The position after `ops`: a session starts primed, a reset primes again, a raw reset zeroes."""
    pos = PRIME
    for op in ops:
        pos = PRIME if op[0] == "reset" else 0 if op[0] == "reset_raw" else pos + len(op[1])
    return pos


class Stream:
    """One client session: what it was told happened (acked), and the request in flight (pending)."""

    def __init__(self, session, items, vocab, rng):
        self.session = session
        self.items = items
        self.next = 0
        self.vocab = vocab
        self.rng = rng
        self.acked = []
        self.pending = None  # (msgid, op) or None

    def request(self, client):
        """Send the next operation; returns its msgid."""
        r = self.rng.random()
        if r < 0.03:  # a reset: to the start state (primed), or to zero
            op = ("reset",) if r < 0.02 else ("reset_raw",)
            msgid = client.send("reset", session=self.session, prime=op[0] == "reset")
        else:
            item = self.items[self.next % len(self.items)]
            self.next += 1
            if item[0] == "eos":
                op = ("tokens", [self.vocab["<eos>"]])
                msgid = client.send("feed", session=self.session, tokens=op[1], notify=False)
            elif item[0] == "question" and r < 0.5:  # ask, committing the answer
                words = tokenize(item[1])
                op = ("ask", [self.vocab[w] for w in words])
                msgid = client.send("ask", session=self.session, question=item[1], commit=True, topk=1)
            else:
                text = item[1] + (" " + item[2] if item[0] == "question" else "")
                op = ("tokens", [self.vocab[w] for w in tokenize(text)])
                msgid = client.send("feed", session=self.session, text=text, notify=r < 0.2)
        self.pending = (msgid, op)
        return msgid

    def acknowledge(self, result):
        op = self.pending[1]
        if op[0] == "ask":  # the answer was read too
            op = ("tokens", op[1] + [self.vocab[result["answer"]]])
        self.acked.append(op)
        self.pending = None


def drive(client, streams, seconds):
    """Keep one request in flight per stream until `seconds` pass or the connection breaks."""
    by_id = {}
    for s in streams:
        by_id[s.request(client)] = s
    deadline = time.time() + seconds
    try:
        while time.time() < deadline:
            m = client.read_one()
            if m is None:
                return False
            if m[0] != 1:
                continue
            s = by_id.pop(m[1])
            if m[2] is not None:
                raise AssertionError("request failed: %r" % (m[2],))
            s.acknowledge(m[3])
            by_id[s.request(client)] = s
    except (ConnectionError, OSError):
        return False
    # settle what is in flight
    while by_id:
        m = client.read_one()
        if m is None or m[0] != 1:
            continue
        s = by_id.pop(m[1])
        s.acknowledge(m[3])
    return True


def verify(client, ref, streams, what):
    """Every stream's session is at its acknowledged state, or that plus its pending operation."""
    for s in streams:
        p = client.call("predict", session=s.session, topk=TOPK)
        found = (p["pos"], p["topk"])
        acked_pos = ops_pos(s.acked)
        check(p["pos"] >= acked_pos or any(op[0].startswith("reset") for op in [s.pending and s.pending[1]] if op),
              "%s: session %s lost acknowledged work: pos %d < %d" % (what, s.session, p["pos"], acked_pos))
        expected = ref.predict(s.acked)
        if found == expected:
            s.pending = None
            continue
        if s.pending is not None:
            op = s.pending[1]
            if op[0] == "ask":  # all of it or nothing: the question and the committed answer
                op = ("tokens", op[1] + [ref.answer(s.acked, op[1])])
            if ref.predict(s.acked + [op]) == found:
                s.acked.append(op)
                s.pending = None
                continue
        raise AssertionError("%s: session %s: recovered pos %d, topk %r; acknowledged pos %d predicts %r "
                             "(pending %r)" % (what, s.session, p["pos"], p["topk"][:2], acked_pos,
                                               expected[1][:2], s.pending))


def store_flags(env, backend, name="data"):
    """The flags of a store: an LMDB folder, or a redis-server of the test's own (TCP or Unix socket)."""
    if backend == "lmdb":
        return ["--data-dir", os.path.join(env.dir, name)]
    return ["--store", env.redis(tcp=backend == "redis-tcp").location]


def crash_rounds(env, mode, rounds, sessions=12, backend="lmdb"):
    model = env.model()
    vocab = vocabulary(env)
    flags = store_flags(env, backend, "data-" + mode) + ["--fsync", mode, "--snapshot-tokens", "60",
                                                          "--max-resident", "8", "--workers", "2"]
    ref = Reference(env, model)
    rng = random.Random(1234)
    server = env.start([model], *flags)
    c = Client(server.address)
    streams = [Stream(c.call("open", topk=3)["session"], items, vocab, random.Random(i))
               for i, items in enumerate(story_streams(env, sessions, 7))]
    killed_mid_flight = 0
    for rnd in range(rounds):
        c = Client(server.address)
        delay = rng.uniform(0.05, 0.6)
        killer = threading.Timer(delay, lambda srv=server: srv.proc.send_signal(signal.SIGKILL))
        killer.start()
        finished = drive(c, streams, 5.0)
        killer.join()
        server.proc.wait(timeout=10)
        check(server.proc.returncode == -signal.SIGKILL, "the server was killed", server.proc.returncode)
        killed_mid_flight += sum(1 for s in streams if s.pending is not None)
        c.close()
        check(not finished, "round %d: the connection was cut by the kill" % rnd)
        server = env.start([model], *flags)
        c = Client(server.address)
        verify(c, ref, streams, "%s round %d" % (mode, rnd))
        # the session's own settings survive too: its default topk is 3
        check_eq(len(c.call("predict", session=streams[0].session)["topk"]) in (0, 3), True, "default topk kept")
        c.close()
    st = Client(server.address).call("stats")["durability"]
    print("%s: %d rounds, %d sessions, %d requests in flight at the kills, %d tokens acknowledged; "
          "loads %d, load p99 %.3f ms, fsyncs %d" % (
              mode, rounds, sessions, killed_mid_flight, sum(ops_pos_total(s.acked) for s in streams),
              st["loads"], st["load_latency_ms"]["p99"], st["fsyncs"]))
    check_eq(server.stop(), 0, "clean exit")
    # after a clean stop every session is in a snapshot: one more restart, same answers
    server = env.start([model], *flags)
    verify(Client(server.address), ref, streams, mode + " after a clean stop")
    check_eq(server.stop(), 0, "clean exit")


def ops_pos_total(ops):
    return sum(len(op[1]) for op in ops if not op[0].startswith("reset"))


# ---- cases ------------------------------------------------------------------------------------------

def case_crash_always(env):
    crash_rounds(env, "always", 12)


def case_crash_interval(env):
    crash_rounds(env, "interval", 12)


def case_crash_never(env):
    crash_rounds(env, "never", 6)


def case_redis_crash_always(env):
    crash_rounds(env, "always", 8, backend="redis-tcp")


def case_redis_crash_interval(env):
    crash_rounds(env, "interval", 6, backend="redis")


def case_redis_crash_never(env):
    crash_rounds(env, "never", 4, backend="redis")


def case_restart(env, backend="lmdb"):
    """A clean restart keeps ids, state, top-k and model; unserved models' sessions stay stored."""
    a, b = env.model("alpha", seed=3), env.model("beta", seed=4)
    store = store_flags(env, backend)
    server = env.start([a, b], *store)
    c = Client(server.address)
    check_eq(c.call("hello")["durability"], {"fsync": "interval", "max_resident": 10000, "snapshot_tokens": 1024,
                                             "session_ttl_s": 0.0}, "hello says sessions are durable")
    s1 = c.call("open", topk=7)["session"]
    s2 = c.call("open", model="beta")["session"]
    c.call("feed", session=s1, text="Mary moved to the bathroom. John went to the hallway.")
    c.call("feed", session=s2, text="Sandra went to the garden.")
    fork = c.call("fork", session=s1)["session"]
    c.call("feed", session=fork, text="Where is Mary ?")
    snap = c.call("snapshot", session=s1)["state"]
    restored = c.call("restore", state=snap, topk=2)["session"]
    closed = c.call("open")["session"]
    c.call("feed", session=closed, text="Mary")
    c.call("close", session=closed)
    # how each session started is kept: primed (the default), unprimed, and resets of either kind
    primed = c.call("open")["session"]
    raw = c.call("open", prime=False)["session"]
    c.call("feed", session=raw, text="Mary moved")
    reset_raw = c.call("open")["session"]
    c.call("feed", session=reset_raw, text="Mary moved")
    c.call("reset", session=reset_raw, prime=False)
    c.call("feed", session=reset_raw, text="John")
    reset_primed = c.call("open", prime=False)["session"]
    c.call("feed", session=reset_primed, text="Mary moved")
    c.call("reset", session=reset_primed)
    starts = (primed, raw, reset_raw, reset_primed)
    before = {s: c.call("predict", session=s, topk=TOPK) for s in (s1, s2, fork, restored) + starts}
    check_eq([before[s]["pos"] for s in starts], [PRIME, 2, 1, PRIME], "positions before the restart")
    before_default = c.call("predict", session=s1)
    time.sleep(0.5)  # --fsync interval (the default): the commits are forced to disk within 100 ms
    d = c.call("stats")["durability"]
    check(d["fsync"] == "interval" and d["commits"] >= 8 and d["fsyncs"] >= 1, "interval fsyncs happen", d)
    check_eq(server.stop(), 0, "clean exit")

    server = env.start([a, b], *store)
    c = Client(server.address)
    for s, p in before.items():
        check_eq(c.call("predict", session=s, topk=TOPK), p, "session %s after restart" % s)
    check_eq(c.call("predict", session=s1), before_default, "default topk 7 kept")
    expect_error("unknown_session", c.call, "predict", session=closed)
    listing = c.call("sessions")
    ids = sorted(x["session"] for x in listing["sessions"])
    check_eq(ids, sorted([s1, s2, fork, restored] + list(starts)), "sessions lists every stored session")
    check_eq(listing["next"], None, "one page")
    page = c.call("sessions", limit=2)
    check_eq(len(page["sessions"]), 2, "page of 2")
    rest = c.call("sessions", after=page["next"], limit=10)
    check_eq(sorted(x["session"] for x in page["sessions"] + rest["sessions"]), ids, "pages cover all")
    models = {x["session"]: x["model"] for x in listing["sessions"]}
    check_eq(models[s2], "beta", "model recorded")
    check_eq({x["session"]: x["pos"] for x in listing["sessions"]}[s1], before[s1]["pos"], "pos listed")
    check_eq(server.stop(), 0, "clean exit")

    # beta is not served: its session is refused with unknown_model and stays stored
    server = env.start([a], *store)
    c = Client(server.address)
    e = expect_error("unknown_model", c.call, "predict", session=s2)
    check("beta" in e.message, "the message names the model", e.message)
    check_eq(c.call("predict", session=s1, topk=TOPK), before[s1], "alpha's session still served")
    check_eq(len(c.call("sessions")["sessions"]), 8, "nothing deleted implicitly")
    check_eq(server.stop(), 0, "clean exit")
    server = env.start([b, a], *store)  # other order: matched by fingerprint, not position
    c = Client(server.address)
    check_eq(c.call("predict", session=s2, topk=TOPK), before[s2], "beta's session back")
    check_eq(c.call("predict", session=s1, topk=TOPK), before[s1], "alpha's session, model now second")
    st = c.call("stats")
    check_eq(st["durability"]["sessions_stored"], 8, "stored count")
    check(st["durability"]["loads"] >= 2, "loaded on first use", st["durability"])
    check_eq(server.stop(), 0, "clean exit")


def case_stm_restart(env):
    """An STM model in sentence mode (fwm-init --arch stm) with a store: what the token log cannot
    say survives a restart: an answer slot closed by `ask` without commit (recorded as a snapshot),
    one still open, a half-read sentence; predictions stay empty where nothing is predicted."""
    path = os.path.join(env.dir, "stm.gguf")
    subprocess.run([env.init, "--arch", "stm", "--out", path, "--vocab", env.vocab(), "--embedding", "12",
                    "--memory-size", "8", "--queries", "3", "--sentence-length", "6", "--answer-hidden", "10",
                    "--seed", "5"], check=True, stdout=subprocess.DEVNULL, timeout=60)
    store = store_flags(env, "lmdb")
    story = "Mary moved to the bathroom. John went to the hallway."
    server = env.start([path], *store)
    c = Client(server.address)
    asked, fresh, waiting, half = (c.call("open", topk=3)["session"] for _ in range(4))
    for s in (asked, fresh, waiting, half):
        c.call("feed", session=s, text=story, notify=False)
    answer = c.call("ask", session=asked, question="Where is John?")
    c.call("feed", session=waiting, text="Where is Mary?", notify=False)
    c.call("feed", session=half, text="Sandra went", notify=False)
    before = {s: c.call("predict", session=s) for s in (asked, fresh, waiting, half)}
    check_eq([len(before[s]["topk"]) for s in (asked, fresh, waiting, half)], [0, 0, 3, 0],
             "only the open question predicts")
    check_eq(server.stop(), 0, "clean exit")

    server = env.start([path], *store)
    c = Client(server.address)
    for s, p in before.items():
        check_eq(c.call("predict", session=s), p, "session %s after the restart" % s)
    for s in (asked, fresh):
        c.call("feed", session=s, text="Where is John?", notify=False)
    check_eq(c.call("predict", session=asked)["topk"], c.call("predict", session=fresh)["topk"],
             "the closed slot survived: the question reads as in a session that never asked")
    check_eq(c.call("predict", session=fresh)["topk"], answer["topk"], "and answers as the ask did")
    c.call("feed", session=half, text="to the garden.", notify=False)
    check_eq(c.call("predict", session=half)["topk"], [], "the half-read sentence ends and predicts nothing")
    check_eq(server.stop(), 0, "clean exit")


def case_redis_restart(env):
    case_restart(env, backend="redis")


def case_redis_unreachable(env):
    """Redis stops: state-changing requests get `storage` naming Redis and the reason, reads of resident
    sessions still answer, nothing hangs; Redis comes back: the server notices by itself, and nothing
    acknowledged was lost. A server started while Redis is down says so and exits."""
    model = env.model()
    vocab = vocabulary(env)
    redis = env.redis(tcp=True)
    flags = ["--store", redis.location, "--fsync", "always"]
    ref = Reference(env, model)
    server = env.start([model], *flags)
    c = Client(server.address)
    s = c.call("open")["session"]
    ops = [("tokens", [vocab[w] for w in "mary moved to the bathroom .".split()])]
    c.call("feed", session=s, tokens=ops[0][1], notify=False)
    other = c.call("open")["session"]
    c.call("feed", session=other, tokens=ops[0][1], notify=False)
    redis.stop()
    started = time.time()
    try:
        c.call("feed", session=s, tokens=ops[0][1], notify=False)
        e = None
    except RpcError as err:
        e = err
    # refused; `outcome_unknown` when the write had reached Redis as it shut down (it may have applied it)
    check(e is not None and e.name in ("storage", "outcome_unknown"), "the write is refused", e)
    maybe_applied = e.name == "outcome_unknown"
    check(redis.location in e.message, "the refusal names Redis", e.message)
    check(time.time() - started < 8, "refused within the command timeout, not hung", time.time() - started)
    e = expect_error("storage", c.call, "open")
    check("Redis" in e.message, "later writes are refused at once, saying why", e.message)
    check_eq((lambda p: (p["pos"], p["topk"]))(c.call("predict", session=other, topk=TOPK)), ref.predict(ops),
             "a resident session still answers, as of its acknowledged history")
    # the session whose write failed is rebuilt from the store (its memory was ahead): not while Redis is down
    e = expect_error("storage", c.call, "predict", session=s)
    check("unreachable" in e.message, "says Redis is unreachable", e.message)
    st = c.call("stats")["durability"]
    check(st["healthy"] is False and redis.location in (st["error"] or ""), "stats says why", st)
    redis.start()
    deadline = time.time() + 20
    while time.time() < deadline and not c.call("stats")["durability"]["healthy"]:
        time.sleep(0.2)
    check(c.call("stats")["durability"]["healthy"], "reconnected by itself")
    if c.call("predict", session=s)["pos"] == PRIME + 12:
        check(maybe_applied, "a write refused with storage was not applied")
        ops.append(ops[0])  # Redis applied the write whose outcome was unknown: the position tells
    c.call("feed", session=s, tokens=ops[0][1], notify=False)
    ops.append(ops[0])
    server.proc.kill()
    server.proc.wait()
    server = env.start([model], *flags)
    p = Client(server.address).call("predict", session=s, topk=TOPK)
    check_eq((p["pos"], p["topk"]), ref.predict(ops), "after reconnecting and a crash, nothing acknowledged lost")
    check_eq(server.stop(), 0, "clean exit")
    redis.stop()
    down = env.start([model], *flags, wait=False)
    check_eq(down.wait(), 1, "Redis down at start: exit 1")
    check(redis.location in down.stderr() and "unreachable" in down.stderr(), "says Redis is unreachable",
          down.stderr())
    bad = env.start([model], "--store", "redis://127.0.0.1:notaport", wait=False)
    check_eq(bad.wait(), 1, "bad location: exit 1")
    check("port" in bad.stderr(), "says what is wrong with it", bad.stderr())


def case_redis_stall(env):
    """Redis stalls (SIGSTOP) past the command timeout while a feed is being written: the feed is refused
    with `outcome_unknown` (not `storage`): the store may still apply it; Redis goes on
    (SIGCONT) and applies what it had received; the server recovers by itself and the session is
    exactly its history with that feed, as the refusal warned, before and after a crash. With
    --fsync interval the write runs on the journal thread, so the event loop answers meanwhile."""
    model = env.model()
    vocab = vocabulary(env)
    redis = env.redis(tcp=True)
    flags = ["--store", redis.location, "--fsync", "interval"]
    ref = Reference(env, model)
    server = env.start([model], *flags)
    c = Client(server.address, timeout=60)
    s = c.call("open")["session"]
    ops = [("tokens", [vocab[w] for w in "mary moved to the bathroom .".split()])]
    c.call("feed", session=s, tokens=ops[0][1], notify=False)
    pos = c.call("predict", session=s)["pos"]
    stalled = [vocab[w] for w in "john went to the hallway .".split()]
    redis.proc.send_signal(signal.SIGSTOP)
    try:
        msgid = c.send("feed", session=s, tokens=stalled, notify=False)
        time.sleep(0.5)
        started = time.time()
        other = Client(server.address)
        other.call("hello")
        check(time.time() - started < 2, "the loop answers while Redis stalls", time.time() - started)
        started = time.time()
        st = other.call("stats")["durability"]
        check(time.time() - started < 2, "stats too: the store's figures are read off the loop", time.time() - started)
        check_eq(st["sessions_stored"], 1, "as last read")
        e = expect_error("outcome_unknown", c.wait, msgid)
    finally:
        redis.proc.send_signal(signal.SIGCONT)
    check("may still apply" in e.message and "read the session's pos" in e.message,
          "the refusal says the outcome is unknown and how to find out", e.message)
    check("not applied" not in e.message, "and does not claim it was not applied", e.message)
    deadline = time.time() + 20
    while time.time() < deadline and not c.call("stats")["durability"]["healthy"]:
        time.sleep(0.2)
    check(c.call("stats")["durability"]["healthy"], "recovered by itself")
    got = c.call("predict", session=s, topk=TOPK)
    check_eq(got["pos"], pos + len(stalled), "Redis applied the stalled feed after all (pos tells)")
    ops.append(("tokens", stalled))
    check_eq((got["pos"], got["topk"]), ref.predict(ops), "the session is its history with the stalled feed")
    server.proc.kill()
    server.proc.wait()
    server = env.start([model], *flags)
    p = Client(server.address).call("predict", session=s, topk=TOPK)
    check_eq((p["pos"], p["topk"]), ref.predict(ops), "and so it stays after a crash")
    check_eq(server.stop(), 0, "clean exit")


def state_of(client, session):
    p = client.call("predict", session=session, topk=TOPK)
    return p["pos"], p["topk"]


def case_redis_data_loss(env):
    """Redis restarted empty under a single node (no --advertise): the node writes nothing into the
    emptied store (its sessions' logs would land there without their start, to be replayed wrong
    later), refuses writes with `storage` saying the store lost its data, and a restart starts a new
    store there: new sessions are served, the lost ones are unknown."""
    import shutil
    model = env.model()
    vocab = vocabulary(env)
    redis = env.redis()
    flags = ["--store", redis.location]
    ref = Reference(env, model)
    server = env.start([model], *flags)
    c = Client(server.address)
    s = c.call("open")["session"]
    ops = [("tokens", [vocab[w] for w in "mary moved to the bathroom .".split()])]
    c.call("feed", session=s, tokens=ops[0][1], notify=False)
    redis.kill()
    shutil.rmtree(os.path.join(redis.dir, "appendonlydir"), ignore_errors=True)
    redis.start()
    check_eq(redis.command("DBSIZE"), 0, "redis-server came back empty")
    deadline = time.time() + 10
    e = None
    while time.time() < deadline:  # the first write may meet the connection Redis' restart broke
        try:
            c.call("feed", session=s, tokens=ops[0][1], notify=False)
            raise AssertionError("a write went into the emptied store")
        except RpcError as err:
            e = err
            if "lost its data" in err.message:
                break
        time.sleep(0.2)
    check(e is not None and e.name == "storage" and "lost its data" in e.message and redis.location in e.message,
          "the write is refused, saying the store lost its data", e)
    e = expect_error("storage", c.call, "open")
    check("lost its data" in e.message, "new sessions too, saying why", e.message)
    st = c.call("stats")["durability"]
    check(not st["healthy"] and "lost its data" in (st["error"] or ""), "stats says so", st)
    time.sleep(1.5)  # a probe runs meanwhile: it must not call the emptied store healthy
    check(not c.call("stats")["durability"]["healthy"], "the probe does not take the emptied store for healthy")
    check_eq(redis.command("EXISTS", "fwm:log:" + s), 0, "nothing of the session was written into the empty store")
    check_eq(redis.command("EXISTS", "fwm:meta:" + s), 0, "its meta record neither")
    check_eq(server.stop(), 0, "clean exit")
    server = env.start([model], *flags)
    c = Client(server.address)
    expect_error("unknown_session", c.call, "predict", session=s)
    fresh = c.call("open")["session"]
    c.call("feed", session=fresh, tokens=ops[0][1], notify=False)
    check_eq(state_of(c, fresh), ref.predict(ops), "a restart starts a new store: new sessions are served")
    check_eq(server.stop(), 0, "clean exit")


def case_redis_listing(env):
    """The Redis store lists sessions in id order across its internal pages (256 ids a page); it
    refuses a store of another format, naming it; a closed session leaves no key behind."""
    model = env.model()
    redis = env.redis()
    server = env.start([model], "--store", redis.location, "--max-resident", "50")
    c = Client(server.address)
    ids = []
    for i in range(300):
        ids.append(c.send("open"))
    ids = [c.wait(m)["session"] for m in ids]
    listed, after = [], None
    while True:
        page = c.call("sessions", after=after, limit=70)
        listed += [x["session"] for x in page["sessions"]]
        after = page["next"]
        if after is None:
            break
    check_eq(listed, sorted(ids), "every session, once, in id order, page by page")
    check_eq(stored_count(c, 300), 300, "counted")
    gone = ids[0]
    c.call("feed", session=gone, text="Mary moved to the bathroom.")
    c.call("close", session=gone)
    keys = redis.command("KEYS", "fwm:*" + gone + "*")
    check_eq(keys, [], "a closed session leaves no key")
    check_eq(redis.command("ZSCORE", "fwm:sessions", gone), None, "nor an entry in the listing")
    check_eq(server.stop(), 0, "clean exit")
    redis.command("SET", "fwm:format", "fwm-session-store 9")
    newer = env.start([model], "--store", redis.location, wait=False)
    check_eq(newer.wait(), 1, "another format: exit 1")
    check("written in format 'fwm-session-store 9'" in newer.stderr() and redis.location in newer.stderr(),
          "names the store and the format", newer.stderr())


def case_store_refused(env):
    """A store that cannot be opened stops the server at start with a message naming the file."""
    model = env.model()
    data = os.path.join(env.dir, "data")
    first = env.start([model], "--data-dir", data)
    second = env.start([model], "--data-dir", data, wait=False)
    check_eq(second.wait(), 1, "second server on the same folder exits 1")
    check("in use by another fwm-serve (pid %d)" % first.proc.pid in second.stderr(), "names the holder",
          second.stderr())
    c = Client(first.address)
    s = c.call("open")["session"]
    c.call("feed", session=s, text="Mary moved to the bathroom.")
    check_eq(first.stop(), 0, "clean exit")
    # another format version (the version string rewritten in place)
    path = os.path.join(data, "data.mdb")
    check_eq(corrupt_all_replace(path, b"fwm-session-store 1", b"fwm-session-store 9"), 1, "format key found")
    newer = env.start([model], "--data-dir", data, wait=False)
    check_eq(newer.wait(), 1, "other format version: exit 1")
    check("written in format 'fwm-session-store 9'" in newer.stderr() and path in newer.stderr(),
          "names the file and the version", newer.stderr())
    corrupt_all_replace(path, b"fwm-session-store 9", b"fwm-session-store 1")
    again = env.start([model], "--data-dir", data)
    check_eq(Client(again.address).call("predict", session=s)["pos"], PRIME + 6, "the store is fine again")
    check_eq(again.stop(), 0, "clean exit")
    # damaged: the file's first pages overwritten
    with open(path, "r+b") as f:
        f.write(b"\xa5" * 8192)
    broken = env.start([model], "--data-dir", data, wait=False)
    check_eq(broken.wait(), 1, "damaged store: exit 1")
    check(path in broken.stderr() and "cannot open the session store" in broken.stderr(), "names the file",
          broken.stderr())
    # not a folder
    plain = os.path.join(env.dir, "plain-file")
    open(plain, "w").close()
    bad = env.start([model], "--data-dir", plain, wait=False)
    check_eq(bad.wait(), 1, "not a folder: exit 1")
    check(plain in bad.stderr(), "names the path", bad.stderr())


def case_lock_removed(env):
    """The folder stays locked when its lock file is removed (a temp-file cleaner, an operator clearing
    a "stale lock"): a second fwm-serve on it is refused, naming the holder, and the first keeps
    serving and keeps every acknowledged write, through a kill -9."""
    model = env.model()
    data = os.path.join(env.dir, "data")
    first = env.start([model], "--data-dir", data)
    c = Client(first.address)
    s = c.call("open")["session"]
    c.call("feed", session=s, text="Mary moved to the bathroom.")
    for attempt in range(2):  # removed, then replaced by an unlocked file of the same name
        if attempt == 0:
            os.unlink(os.path.join(data, "fwm-serve.lock"))
        else:
            with open(os.path.join(data, "fwm-serve.lock"), "w") as f:
                f.write("1\n")
        second = env.start([model], "--data-dir", data, wait=False)
        check_eq(second.wait(), 1, "second server on the folder exits 1 (lock file removed, attempt %d)" % attempt)
        check("in use by another fwm-serve (pid %d)" % first.proc.pid in second.stderr() and data in second.stderr(),
              "names the folder and the holder", second.stderr())
        if attempt == 0:
            check("fwm-serve.lock was removed" in second.stderr(), "says the lock file was removed", second.stderr())
        check_eq(c.call("feed", session=s, text="John went to the hallway.")["pos"], PRIME + 6 * (attempt + 2),
                 "the first server keeps serving")
    first.kill()
    again = env.start([model], "--data-dir", data)
    check_eq(Client(again.address).call("predict", session=s)["pos"], PRIME + 18, "one history, all of it")
    check_eq(again.stop(), 0, "clean exit")


def corrupt_all_replace(path, old, new):
    with open(path, "r+b") as f:
        data = f.read()
        count = data.count(old)
        f.seek(0)
        f.write(data.replace(old, new))
    return count


def corrupt_all(path, pattern, offset):
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        count, at = 0, data.find(pattern)
        while at >= 0:
            data[at + offset] ^= 0xFF
            count += 1
            at = data.find(pattern, at + 1)
        f.seek(0)
        f.write(data)
    return count


def case_damaged_log(env):
    """A damaged log record (as a torn tail would be) is detected by its checksum and dropped with
    everything after it, never replayed; the session comes back as of the record before."""
    model = env.model()
    vocab = vocabulary(env)
    data = os.path.join(env.dir, "data")
    flags = ["--data-dir", data, "--fsync", "always"]
    ref = Reference(env, model)
    server = env.start([model], *flags)
    c = Client(server.address)
    s = c.call("open")["session"]
    parts = ["mary moved to the bathroom .", "john went to the hallway .", "daniel journeyed to the office ."]
    ops = [("tokens", [vocab[w] for w in p.split()]) for p in parts]
    for op in ops:
        c.call("feed", session=s, tokens=op[1], notify=False)
    server.proc.kill()  # no final snapshot: the log holds all three
    server.proc.wait()
    third = ops[2][1]
    pattern = b"WLOG\x01\x00\x00\x00\x01\x00\x00\x00" + len(third).to_bytes(4, "little") + b"".join(
        t.to_bytes(4, "little") for t in third)
    n = corrupt_all(os.path.join(data, "data.mdb"), pattern, 16)
    check(n >= 1, "found the third record in the file", n)
    server = env.start([model], *flags)
    c = Client(server.address)
    p = c.call("predict", session=s, topk=TOPK)
    check_eq((p["pos"], p["topk"]), ref.predict(ops[:2]), "recovered as of the second record")
    c.call("feed", session=s, tokens=ops[2][1], notify=False)  # the log continues where it was cut
    server.proc.kill()
    server.proc.wait()
    server = env.start([model], *flags)
    c = Client(server.address)
    p = c.call("predict", session=s, topk=TOPK)
    check_eq((p["pos"], p["topk"]), ref.predict(ops), "re-fed after the cut, replayed again")
    check_eq(server.stop(), 0, "clean exit")


def case_tiering(env):
    """Far more sessions than --max-resident: each still answers exactly as a resident one would."""
    model = env.model()
    vocab = vocabulary(env)
    data = os.path.join(env.dir, "data")
    ref = Reference(env, model)
    server = env.start([model], "--data-dir", data, "--max-resident", "4", "--snapshot-tokens", "1000")
    c = Client(server.address)
    streams = story_streams(env, 40, 11)
    sessions, history = [], []
    for items in streams:
        s = c.call("open")["session"]
        words = []
        for item in items[1:12]:
            if item[0] == "eos":
                break
            words += tokenize(item[1]) + ([item[2]] if item[0] == "question" else [])
        c.call("feed", session=s, tokens=[vocab[w] for w in words], notify=False)
        sessions.append(s)
        history.append([("tokens", [vocab[w] for w in words])])
    st = c.call("stats")
    check(st["sessions_resident"] <= 4 + 2, "resident sessions bounded by --max-resident", st["sessions_resident"])
    # every session, in another order, twice (each comes back from the store)
    for rnd in range(2):
        order = list(range(len(sessions)))
        random.Random(rnd).shuffle(order)
        for i in order:
            p = c.call("predict", session=sessions[i], topk=TOPK)
            check_eq((p["pos"], p["topk"]), ref.predict(history[i]), "session %d round %d" % (i, rnd))
            c.call("feed", session=sessions[i], tokens=[vocab["<eos>"]], notify=False)
            history[i].append(("tokens", [vocab["<eos>"]]))
    d = c.call("stats")["durability"]
    check(d["evictions"] >= 60 and d["loads"] >= 60, "sessions went out and came back", d)
    check_eq(d["sessions_stored"], 40, "all stored")
    print("tiering: 40 sessions, max resident 4: %d evictions, %d loads, load p50 %.3f ms p99 %.3f ms" % (
        d["evictions"], d["loads"], d["load_latency_ms"]["p50"], d["load_latency_ms"]["p99"]))
    check_eq(server.stop(), 0, "clean exit")


def case_disk_full(env):
    """A full store refuses state-changing requests with `storage`, keeps answering the rest,
    corrupts nothing, and recovers by itself once space returns."""
    model = env.model()
    vocab = vocabulary(env)
    data = os.path.join(env.dir, "data")
    flags = ["--data-dir", data, "--store-max-bytes", str(256 * 1024), "--snapshot-tokens", "40"]
    ref = Reference(env, model)
    server = env.start([model], *flags)
    c = Client(server.address)
    words = tokenize("Mary moved to the bathroom. John went to the hallway. Where is Mary? bathroom")
    tokens = [vocab[w] for w in words]
    sessions, history, refused = [], {}, 0
    for i in range(2000):
        try:
            s = c.call("open")["session"]
        except RpcError as e:
            check_eq(e.name, "storage", "open refused by the full store")
            refused += 1
            break
        sessions.append(s)
        history[s] = []
        try:
            c.call("feed", session=s, tokens=tokens, notify=False)
            history[s].append(("tokens", tokens))
        except RpcError as e:
            check_eq(e.name, "storage", "feed refused by the full store")
            refused += 1
            break
    check(refused == 1, "the store filled up", len(sessions))
    st = c.call("stats")
    check_eq(st["durability"]["healthy"], False, "stats says writes fail")
    check("store-max-bytes" in (st["durability"]["error"] or ""), "and why", st["durability"]["error"])
    c.call("hello")
    e = expect_error("storage", c.call, "open")
    check("cannot write" in e.message, "the refusal names the problem", e.message)
    # reads still work, and nothing was corrupted: every session predicts as its acknowledged history
    alive = [s for s in sessions if s in history]
    for s in alive[-5:]:
        p = c.call("predict", session=s, topk=TOPK)
        exp = ref.predict(history[s])
        if (p["pos"], p["topk"]) != exp:
            raise AssertionError("session %s: %r != %r" % (s, p["pos"], exp[0]))
    # free space: closing is allowed while writes fail
    for s in alive[: len(alive) - 20]:
        try:
            c.call("close", session=s)
            del history[s]
        except RpcError as e:
            check_eq(e.name, "storage", "close refused only by storage")
    deadline = time.time() + 20
    while time.time() < deadline and not c.call("stats")["durability"]["healthy"]:
        time.sleep(0.2)
    check(c.call("stats")["durability"]["healthy"], "recovered by itself once space returned")
    s = c.call("open")["session"]
    c.call("feed", session=s, tokens=tokens, notify=False)
    history[s] = [("tokens", tokens)]
    # a crash now loses nothing acknowledged
    server.proc.kill()
    server.proc.wait()
    server = env.start([model], *flags)
    c = Client(server.address)
    for s, ops in history.items():
        p = c.call("predict", session=s, topk=TOPK)
        check_eq((p["pos"], p["topk"]), ref.predict(ops), "session %s after the crash" % s)
    print("disk full: %d sessions fitted in a 256 KiB store; %d survive the closes and a crash" % (
        len(sessions), len(history)))
    check_eq(server.stop(), 0, "clean exit")


def case_listing_resident(env):
    """With --data-dir, `sessions` lists a resident session where it is now (not where its last
    snapshot left it), and a session written out of memory where its record says."""
    model = env.model()
    data = os.path.join(env.dir, "data")
    server = env.start([model], "--data-dir", data)
    c = Client(server.address)
    text = "Mary moved to the bathroom. John went to the hallway. Where is Mary?"
    s = c.call("open")["session"]
    fed = c.call("feed", session=s, text=text, notify=False)["pos"]
    check_eq(fed, PRIME + len(tokenize(text)), "fed")
    fork = c.call("fork", session=s)["session"]
    c.call("feed", session=fork, text="bathroom", notify=False)
    listing = c.call("sessions")["sessions"]
    check_eq({x["session"]: (x["pos"], x["resident"]) for x in listing},
             {s: (fed, True), fork: (fed + 1, True)}, "resident sessions listed where they are")
    check(all(time.time() * 1000 - x["last_used_ms"] < 60000 for x in listing), "last use: now", listing)
    check_eq(server.stop(), 0, "clean exit")
    server = env.start([model], "--data-dir", data)
    c = Client(server.address)
    listing = c.call("sessions")["sessions"]
    check_eq({x["session"]: (x["pos"], x["resident"]) for x in listing},
             {s: (fed, False), fork: (fed + 1, False)}, "stored sessions listed where their records say")
    c.call("feed", session=s, text="bathroom .", notify=False)
    check_eq({x["session"]: x["pos"] for x in c.call("sessions")["sessions"]}[s], fed + 2, "loaded and fed")
    check_eq(server.stop(), 0, "clean exit")


def mount_tmpfs(path, size):
    """A tmpfs of `size` bytes at `path` in a mount namespace of its own (unshare: no privilege needed
    beyond user namespaces), held by a sleeping process. Returns (holder, wrap, seen): the holder
    process, the command prefix that runs a program in that namespace (nsenter), and where the test
    itself reaches the file system (through the holder's /proc root). Skips when the machine allows
    no such namespace."""
    import shutil
    if not shutil.which("unshare") or not shutil.which("nsenter"):
        raise SkipCase("unshare/nsenter (util-linux) are not installed: no tmpfs of the test's own")
    os.makedirs(path)
    holder = subprocess.Popen(["unshare", "-rm", "sh", "-c",
                               'mount -t tmpfs -o size=%d fwm-full "$0" && echo ready && exec sleep 3600' % size,
                               path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if holder.stdout.readline().strip() != b"ready":
        holder.kill()
        raise SkipCase("cannot mount a tmpfs in a mount namespace of the test's own: %s" %
                       holder.stderr.read().decode(errors="replace").strip())
    wrap = ["nsenter", "-t", str(holder.pid), "-U", "-m", "--preserve-credentials"]
    return holder, wrap, "/proc/%d/root%s" % (holder.pid, os.path.abspath(path))


def case_disk_full_fs(env):
    """A full file system (a 4 MiB tmpfs of the test's own) is reported as a full disk, not as a
    failing one: the refusal and stats.durability.error say `disk full`, name the data file and what
    to do; reads still answer, nothing acknowledged is damaged, writes resume by themselves once the
    file system has room, and a kill -9 after all that loses nothing acknowledged."""
    model = env.model()
    vocab = vocabulary(env)
    data = os.path.join(env.dir, "full")
    holder, wrap, seen = mount_tmpfs(data, 4 << 20)
    try:
        flags = ["--data-dir", data, "--snapshot-tokens", "40"]
        ref = Reference(env, model)
        server = env.start([model], *flags, wrap=wrap)
        c = Client(server.address)
        # leave about 192 KiB free: the store fills it within a few hundred sessions
        st = os.statvfs(seen)
        with open(os.path.join(seen, "ballast"), "wb") as f:
            f.write(b"\0" * max(0, st.f_bavail * st.f_frsize - (192 << 10)))
        words = tokenize("Mary moved to the bathroom. John went to the hallway. Where is Mary? bathroom")
        tokens = [vocab[w] for w in words]
        sessions, history, refusal = [], {}, None
        for _ in range(5000):
            try:
                s = c.call("open")["session"]
            except RpcError as e:
                refusal = e
                break
            sessions.append(s)
            history[s] = []
            try:
                c.call("feed", session=s, tokens=tokens, notify=False)
                history[s].append(("tokens", tokens))
            except RpcError as e:
                refusal = e
                break
        check(refusal is not None, "the file system filled up", len(sessions))
        path = os.path.join(data, "data.mdb")
        check_eq(refusal.name, "storage", "the request that did not fit is refused with storage")
        check("disk full" in refusal.message and path in refusal.message, "the refusal names the cause and the file",
              refusal.message)
        error = c.call("stats")["durability"]["error"] or ""
        check(not c.call("stats")["durability"]["healthy"], "stats says writes fail")
        check("disk full" in error and path in error and "free space" in error and "Input/output" not in error,
              "stats.durability.error says disk full, the file and what to do", error)
        e = expect_error("storage", c.call, "open")
        check("disk full" in e.message, "later writes are refused naming the cause", e.message)
        for s in [s for s in sessions if history.get(s)][-5:]:
            p = c.call("predict", session=s, topk=TOPK)
            check_eq((p["pos"], p["topk"]), ref.predict(history[s]), "session %s reads as acknowledged" % s)
        os.unlink(os.path.join(seen, "ballast"))
        deadline = time.time() + 20
        while time.time() < deadline and not c.call("stats")["durability"]["healthy"]:
            time.sleep(0.2)
        check(c.call("stats")["durability"]["healthy"], "writes resume by themselves once there is room")
        s = c.call("open")["session"]
        c.call("feed", session=s, tokens=tokens, notify=False)
        history[s] = [("tokens", tokens)]
        server.kill()
        server = env.start([model], *flags, wrap=wrap)
        c = Client(server.address)
        for s, ops in history.items():
            p = c.call("predict", session=s, topk=TOPK)
            check_eq((p["pos"], p["topk"]), ref.predict(ops), "session %s after the crash" % s)
        print("full file system: %d sessions fitted; refused with: %s" % (len(sessions), refusal.message))
        check_eq(server.stop(), 0, "clean exit")
    finally:
        holder.kill()
        holder.wait()


def case_session_ttl(env):
    """--session-ttl deletes stored sessions unused that long; resident ones are kept."""
    model = env.model()
    data = os.path.join(env.dir, "data")
    server = env.start([model], "--data-dir", data, "--max-resident", "1", "--session-ttl", "2")
    c = Client(server.address)
    ids = []
    for text in ("Mary moved to the bathroom.", "John went to the hallway.", "Sandra went to the garden."):
        ids.append(c.call("open")["session"])
        c.call("feed", session=ids[-1], text=text)
    deadline = time.time() + 15
    while time.time() < deadline and c.call("stats")["sessions_expired"] < 2:
        time.sleep(0.25)
    check_eq(c.call("stats")["sessions_expired"], 2, "the two written-out sessions expired")
    listing = c.call("sessions")["sessions"]
    check_eq([x["session"] for x in listing], [ids[2]], "the resident one is kept")
    for s in ids[:2]:
        expect_error("unknown_session", c.call, "predict", session=s)
    check_eq(c.call("predict", session=ids[2])["pos"], PRIME + 6, "resident session intact")
    check("deleted (session-ttl)" in server.stderr(), "logged", server.stderr())
    check_eq(server.stop(), 0, "clean exit")


def case_unloadable_fork(env):
    """A stored session that cannot be loaded back (here: a restored state of finite but huge floats
    whose next steps overflow, so its snapshot holds non-finite floats that the import refuses) is
    answered with `storage` naming the problem; forking it, again and again, fails the same way and
    gives each fork's reserved session slot back, so the other sessions' --max-sessions is intact."""
    try:
        import struct
        import xxhash
    except ImportError:
        raise SkipCase("python3-xxhash is not installed")
    model = env.model()
    data = os.path.join(env.dir, "data")
    server = env.start([model], "--data-dir", data, "--max-resident", "1", "--max-sessions", "8",
                       "--snapshot-tokens", "4")
    c = Client(server.address)
    blob = bytearray(c.call("snapshot", session=c.call("open")["session"])["state"])
    floats = (len(blob) - 48) // 4  # version 1: a 40-byte header, h, c, F, an 8-byte checksum
    blob[40:40 + 4 * floats] = struct.pack("<%df" % floats, *([3e38] * floats))
    blob[-8:] = struct.pack("<Q", xxhash.xxh64(bytes(blob[:-8]), seed=0).intdigest())
    hot = c.call("restore", state=bytes(blob))["session"]
    c.call("feed", session=hot, text="mary moved to the bathroom . john went to the hallway .", notify=False)
    other = c.call("open")["session"]  # hot is written out (max-resident 1)
    c.call("feed", session=other, text="mary moved to the bathroom .", notify=False)
    e = expect_error("storage", c.call, "predict", session=hot)
    check("not finite" in e.message and hot in e.message, "the refusal names the session and the problem", e.message)
    for _ in range(12):
        e = expect_error("storage", c.call, "fork", session=hot)
        check(hot in e.message, "a fork of it is refused naming it", e.message)
    stored = stored_count(c, 3)
    check_eq(stored, 3, "the first session, hot and other are stored")
    opened = 0
    for _ in range(8):
        try:
            c.call("open")
            opened += 1
        except RpcError as err:
            check_eq(err.name, "session_limit", "refused by the session limit")
            break
    check_eq(opened, 5, "the refused forks took no session slot (8 - 3 stored)")
    c.call("close", session=hot)
    check_eq(c.call("predict", session=other)["pos"], PRIME + 6, "the other session is intact")
    check_eq(server.stop(), 0, "clean exit")


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


if __name__ == "__main__":
    sys.exit(harness_main(CASES, needs_babi=lambda case: True))
