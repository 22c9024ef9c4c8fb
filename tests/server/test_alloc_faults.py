#!/usr/bin/env python3
"""test_alloc_faults.py - allocation-failure injection across fwm-serve's request paths (SQLite's
way), one case per test:

  test_alloc_faults.py CASE --serve PATH --init PATH --babi DIR --source-root DIR

A first run of a representative request mix (open, feed, ask with commit, predict, trace, snapshot,
restore, fork, reset, sessions, stats, close, durable writes with snapshots and evictions, HTTP
/metrics and /health) records every code address that allocates (FWM_ALLOC_SITES,
server/alloc_faults.c). Then, for each such site, a fresh server runs the same mix with the first
allocation at that site failing, once (FWM_ALLOC_FAIL_SITE: the same place whatever order the
threads allocate in). Every run must: answer every
request (an error is fine: the failure is the point), keep serving (hello and stats answer after the
mix), stop cleanly on SIGTERM (exit 0: in the sanitizer build that includes no leak and no memory
error), and leave every session it acknowledged intact: restarted on the same data folder, each one
predicts, bit for bit, what a memory-only reference fed exactly its acknowledged requests predicts
(plus, when the server closed a connection for want of memory while a request was in flight, that
request or not: like a broken connection, it may have run; and of a feed or ask that failed after
stepping, what it had read: docs/PROTOCOL.md).
Exit 0 pass, 1 fail, 77 skip.
"""
import http.client
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_harness import main as harness_main  # noqa: E402
from server_harness import Client, RpcError, check, check_eq, tokenize  # noqa: E402

TOPK = 8
STORY = ["mary moved to the bathroom .", "john went to the hallway .", "daniel went back to the kitchen ."]


def http_get(server, path):
    for a in server.addresses:
        if a.startswith("http://"):
            host, port = a[len("http://"):].rsplit(":", 1)
            conn = http.client.HTTPConnection(host, int(port), timeout=10)
            try:
                conn.request("GET", path)
                r = conn.getresponse()
                r.read()
                return r.status
            finally:
                conn.close()
    raise AssertionError("no http:// address: %r" % server.addresses)


def mix(server):
    """The request mix. Returns (answers, histories): each request's outcome (its error's name, or
    "ok"), and per session the requests it acknowledged, in order, to replay on the reference."""
    conn = [Client(server.address, timeout=20)]
    answers, histories = [], {}

    def call(method, session=None, record=True, **params):
        if session is not None:
            params["session"] = session
        try:
            result = conn[0].call(method, **params)
        except RpcError as e:
            answers.append((method, e.name))
            if record and session is not None and method in ("feed", "ask") and e.name in ("internal", "storage"):
                # a feed or ask that fails after stepping keeps what it read (docs/PROTOCOL.md)
                text = params.get("text") or params.get("question")
                words = tokenize(text) + (["?"] if method == "ask" and not text.endswith("?") else [])
                histories.setdefault(session, []).append(("partial", words))
            return None
        except (AssertionError, OSError) as e:  # the server closed the connection (out of memory reading)
            if "closed" not in str(e) and not isinstance(e, OSError):
                raise
            answers.append((method, "closed"))
            conn[0] = Client(server.address, timeout=20)
            if record and session is not None:  # in flight when the connection closed: it may have run
                histories.setdefault(session, []).append(("maybe " + method, params))
            return None
        answers.append((method, "ok"))
        if record and session is not None:
            histories.setdefault(session, []).append((method, params))
        return result

    sessions = []
    for _ in range(3):
        opened = call("open")
        if opened:
            sessions.append(opened["session"])
            histories[opened["session"]] = []
    for i, s in enumerate(sessions):  # three sessions, --max-resident 2: evictions and loads
        for text in STORY[: i + 1]:
            call("feed", s, text=text, notify=False)
    for s in sessions[:1]:
        call("ask", s, question="where is mary", commit=True)
        call("predict", s, record=False, topk=TOPK)
        call("trace", s, record=False, text="where is john ?")
        snap = call("snapshot", s, record=False)
        if snap:
            restored = call("restore", state=snap["state"])
            if restored:
                histories[restored["session"]] = [("snapshot_of", s, len(histories.get(s, [])))]
                call("feed", restored["session"], text=STORY[1], notify=False)
        forked = call("fork", s, record=False)
        if forked:
            histories[forked["session"]] = [("fork_of", s, len(histories.get(s, [])))]
            call("reset", forked["session"])
            call("feed", forked["session"], text=STORY[2], notify=False)
    if len(sessions) > 2:
        if call("close", sessions[2], record=False):
            histories.pop(sessions[2], None)
    call("sessions")
    call("stats")
    call("hello")
    for path in ("/metrics", "/health"):
        try:
            answers.append((path, http_get(server, path)))
        except OSError as e:
            answers.append((path, "io: %s" % e))
    return answers, histories


def expand(histories, session):
    """The requests that made `session`, from its origin (a fork or a restore copies its parent as of
    the requests it had then)."""
    ops = histories[session]
    if ops and ops[0][0] in ("snapshot_of", "fork_of"):
        _, parent, count = ops[0]
        before = expand(histories, parent) if parent in histories else None
        return None if before is None else before[:count] + ops[1:]
    return ops


def variants(ops):
    """The histories a session may have: a request whose connection closed while it was in flight
    may or may not have run."""
    out = [[]]
    for method, params in ops:
        if method == "partial":  # any prefix of these words was read
            out = [v + ([("feed", {"text": " ".join(params[:k]), "notify": False})] if k else [])
                   for v in out for k in range(len(params) + 1)]
        elif method.startswith("maybe "):
            out = [v + [(method[6:], params)] for v in out] + [list(v) for v in out]
        else:
            out = [v + [(method, params)] for v in out]
    return out


def reference_state(ref, ops):
    s = ref.call("open")["session"]
    for method, params in ops:
        params = dict(params)
        params["session"] = s
        ref.call(method, **params)
    p = ref.call("predict", session=s, topk=TOPK)
    ref.call("close", session=s)
    return p["pos"], p["topk"]


def read_sites(path):
    sites = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                raise AssertionError("the site table overflowed: %s" % line.strip())
            n, name = line.split()
            sites[name] = int(n)
    return sites


def case_sweep(env):
    """Every allocation site the mix reaches fails once, each in a run of its own."""
    model = env.model()
    ref = Client(env.start([model], "--max-sessions", "100000").address, timeout=20)
    sites_path = os.path.join(env.dir, "sites")
    flags = ["--fsync", "never", "--snapshot-tokens", "8", "--max-resident", "2", "--http", "tcp://127.0.0.1:0"]
    data = os.path.join(env.dir, "count")
    counting = env.start([model], "--data-dir", data, *flags, env={"FWM_ALLOC_SITES": sites_path})
    answers, _ = mix(counting)
    check(all(a[1] in ("ok", 200) for a in answers), "the mix succeeds without injection", answers)
    check_eq(counting.stop(), 0, "clean exit")
    sites = read_sites(sites_path)
    check(len(sites) > 20, "the mix reaches the server's allocation sites", len(sites))
    covered, not_reached, errors_seen = set(), [], {}
    started = time.time()
    for i, (name, n) in enumerate(sorted(sites.items(), key=lambda x: x[1])):
        data = os.path.join(env.dir, "run-%d" % i)
        report = os.path.join(env.dir, "report-%d" % i)
        server = env.start([model], "--data-dir", data, *flags,
                           env={"FWM_ALLOC_FAIL_SITE": name, "FWM_ALLOC_REPORT": report})
        what = "the allocation at %s (first made as allocation %d)" % (name, n)
        answers, histories = mix(server)
        check(server.proc.poll() is None, "%s: the server survives the mix" % what, server.stderr()[-2000:])
        for attempt in range(2):  # the failure may fall on this connection's first read: then it closes
            try:
                c = Client(server.address, timeout=20)
                c.call("hello")
                c.call("stats")
                break
            except (AssertionError, RpcError) as e:
                check(attempt == 0, "%s: the server keeps serving after the mix" % what, e)
        for a in answers:
            if a[1] not in ("ok", 200):
                errors_seen[a[1]] = errors_seen.get(a[1], 0) + 1
        check_eq(server.stop(timeout=30), 0, "%s: clean exit (no leak, no memory error)" % what)
        with open(report) as f:
            hit = f.read().split()[-1]
        if hit == name:
            covered.add(name)
        else:
            not_reached.append(name)  # this run did not allocate there (a path taken by chance)
        # the stored sessions are intact: restarted, each predicts its acknowledged history
        again = env.start([model], "--data-dir", data, *flags)
        c = Client(again.address, timeout=20)
        for s in histories:
            ops = expand(histories, s)
            if ops is None:
                continue
            try:
                p = c.call("predict", session=s, topk=TOPK)
            except RpcError as e:
                raise AssertionError("%s: acknowledged session %s is not served after a restart: %s" % (what, s, e))
            expected = [reference_state(ref, v) for v in variants(ops)]
            check((p["pos"], p["topk"]) in expected, "%s: session %s after a restart: pos %d, expected %s from its "
                  "acknowledged requests %s; the mix's answers: %s" % (what, s, p["pos"], [e[0] for e in expected],
                                                                      [o[0] for o in ops], answers))
        check_eq(again.stop(timeout=30), 0, "%s: clean exit after the restart" % what)
        for done in env.servers[2:]:  # stopped: their port files go, so the next runs' names are free
            os.unlink(done.port_file)
        env.servers = env.servers[:2]
    print("allocation failures: %d allocation sites reached by the mix, %d of them made to fail (each in a run of "
          "its own; not reached again: %s); errors answered: %s; %.0f s" % (
              len(sites), len(covered), not_reached or "none", errors_seen, time.time() - started))
    check(len(covered) >= len(sites) - 2, "every site (but at most two reached by chance) was made to fail",
          len(covered), len(sites), not_reached)


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


if __name__ == "__main__":
    sys.exit(harness_main(CASES, needs_babi=lambda case: True))
