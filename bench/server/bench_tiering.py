#!/usr/bin/env python3
"""bench_tiering.py - durable fwm-serve with far more sessions than it keeps in memory.

  bench/server/bench_tiering.py [--build DIR] [--model FILE] [--sessions N] [--resident R]
                                [--reloads K] [--connections C] [--babi DIR]

Starts fwm-serve with --data-dir (a temp folder) and --max-resident R, opens N sessions and feeds
each one bAbI sentence (pipelined over C connections), then prints: the time that took, the
server's resident memory (VmRSS) and the store's size; the latency of `predict` on K random
sessions (nearly all of them stored, not resident: each request waits for its session to be read
back and its log replayed) beside the same request on resident sessions in this run (the
reference); the server's own load-latency percentiles; and how long a restart with N stored
sessions takes until the first request is answered. Uses python3-msgpack; prints figures, never
fails on them (defaults: N = 100,000, R = 1,000, K = 2,000, the bundled model).
"""
import argparse
import glob
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time

import msgpack

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def connect(address):
    host, port = address[len("tcp://"):].rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=120)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


class Conn:
    def __init__(self, address):
        self.sock = connect(address)
        self.unpacker = msgpack.Unpacker(raw=False)
        self.next_id = 1

    def send(self, method, **params):
        msgid = self.next_id
        self.next_id += 1
        self.sock.sendall(msgpack.packb([0, msgid, method, [params]], use_bin_type=True))
        return msgid

    def responses(self):
        while True:
            for m in self.unpacker:
                if m[0] == 1:
                    if m[2] is not None:
                        raise RuntimeError("request %d failed: %r" % (m[1], m[2]))
                    yield m[1], m[3]
            data = self.sock.recv(1 << 20)
            if not data:
                raise RuntimeError("connection closed")
            self.unpacker.feed(data)

    def call(self, method, **params):
        msgid = self.send(method, **params)
        for got, result in self.responses():
            if got == msgid:
                return result


def pipelined(conns, requests, window=256):
    """Run (method, params) requests spread over the connections, `window` in flight on each."""
    results = [None] * len(requests)
    per = [list(range(i, len(requests), len(conns))) for i in range(len(conns))]
    for c, todo in zip(conns, per):
        pending, sent = {}, 0
        stream = c.responses()
        while sent < len(todo) or pending:
            while sent < len(todo) and len(pending) < window:
                method, params = requests[todo[sent]]
                pending[c.send(method, **params)] = todo[sent]
                sent += 1
            msgid, result = next(stream)
            results[pending.pop(msgid)] = result
    return results


def sentences(babi):
    out = []
    for path in sorted(glob.glob(os.path.join(babi, "en-valid-10k", "qa*_test.txt")))[:20]:
        with open(path) as f:
            for line in f:
                text = line.split(" ", 1)[1].split("\t")[0].strip()
                if text.endswith("."):
                    out.append(text)
                if len(out) > 5000:
                    return out
    return out


def percentile(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))] if v else 0.0


def rss_mb(pid, field="VmRSS"):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def memory(pid):
    """VmRSS, split into anonymous memory (sessions, buffers, the allocator's caches) and file pages
    (the model file when mapped and the LMDB store's pages read through its map)."""
    return "VmRSS %.1f MB (anonymous %.1f MB, file-backed %.1f MB)" % (
        rss_mb(pid), rss_mb(pid, "RssAnon"), rss_mb(pid, "RssFile"))


def start(serve, model, data, resident, work):
    port_file = os.path.join(work, "port")
    if os.path.exists(port_file):
        os.remove(port_file)
    t0 = time.time()
    proc = subprocess.Popen([serve, model, "--listen", "tcp://127.0.0.1:0", "--port-file", port_file, "--quiet",
                             "--data-dir", data, "--max-resident", str(resident), "--max-sessions", "10000000"])
    while not os.path.exists(port_file):
        if proc.poll() is not None:
            sys.exit("bench_tiering: fwm-serve exited with %s" % proc.returncode)
        time.sleep(0.005)
    with open(port_file) as f:
        return proc, f.read().split()[0], t0


def timed_predicts(conn, sessions):
    out = []
    for s in sessions:
        t = time.perf_counter()
        conn.call("predict", session=s, topk=1)
        out.append((time.perf_counter() - t) * 1000.0)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "fwm-babi-lm.gguf"))
    ap.add_argument("--babi", default=os.environ.get("FWM_BABI_DIR", os.path.join(ROOT, "..", "shared", "data",
                                                                                 "babi-v1.2")))
    ap.add_argument("--sessions", type=int, default=100000)
    ap.add_argument("--resident", type=int, default=1000)
    ap.add_argument("--reloads", type=int, default=2000)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--long", type=int, default=2000, help="sessions that also read a long story")
    ap.add_argument("--long-tokens", type=int, default=200, help="tokens each long session reads")
    args = ap.parse_args()
    serve = os.path.join(args.build, "server", "fwm-serve")
    texts = sentences(args.babi)
    with tempfile.TemporaryDirectory(prefix="fwm-bench-tiering-", dir=os.environ.get("TMPDIR")) as work:
        data = os.path.join(work, "data")
        proc, address, _ = start(serve, args.model, data, args.resident, work)
        try:
            conns = [Conn(address) for _ in range(args.connections)]
            t = time.time()
            opened = pipelined(conns, [("open", {})] * args.sessions)
            ids = [r["session"] for r in opened]
            t_open = time.time() - t
            t = time.time()
            pipelined(conns, [("feed", {"session": s, "text": texts[i % len(texts)], "notify": False})
                              for i, s in enumerate(ids)])
            t_feed = time.time() - t
            # long sessions: over 64 tokens each, so their eviction writes a snapshot
            long_ids = ids[:args.long]
            t = time.time()
            fed = 0
            while fed < args.long_tokens:
                pipelined(conns, [("feed", {"session": s, "text": texts[(i + fed) % len(texts)], "notify": False})
                                  for i, s in enumerate(long_ids)])
                fed += len(texts[fed % len(texts)].split()) + 1
            t_long = time.time() - t
            time.sleep(2.5)  # let housekeeping evict what is over --max-resident
            st = conns[0].call("stats")
            d = st["durability"]
            print("machine: %d CPUs, %s" % (os.cpu_count(), open("/proc/cpuinfo").read().split("model name")[1]
                                            .split("\n")[0].strip(": ")))
            print("model %s, %d sessions, max resident %d" % (os.path.basename(args.model), args.sessions,
                                                               args.resident))
            print("populate: %d opens in %.1f s, %d one-sentence feeds in %.1f s; %d sessions fed ~%d tokens more "
                  "in %.1f s" % (args.sessions, t_open, args.sessions, t_feed, len(long_ids), args.long_tokens, t_long))
            print("stored %d, resident %d (%.1f MB of session state), evictions %d; server %s; store %.1f MB on disk" % (
                d["sessions_stored"], d["sessions_resident"], st["memory"]["sessions_bytes"] / 1e6, d["evictions"],
                memory(proc.pid), d["store_file_bytes"] / 1e6))
            rng = random.Random(1)
            c = conns[0]
            # the reference: predict on sessions that are resident (the most recently used)
            recent = [x["session"] for x in c.call("sessions", limit=1000)["sessions"] if x["resident"]]
            hot = timed_predicts(c, [rng.choice(recent) for _ in range(min(args.reloads, 2000))]) if recent else []
            loads_before = c.call("stats")["durability"]["loads"]
            short_ids = ids[args.long:]
            cold = timed_predicts(c, [rng.choice(short_ids) for _ in range(args.reloads)])
            loads_mid = c.call("stats")["durability"]["loads"]
            cold_long = timed_predicts(c, [rng.choice(long_ids) for _ in range(min(args.reloads, len(long_ids)))]) \
                if long_ids else []
            d = c.call("stats")["durability"]
            print("predict on a resident session (reference): p50 %.3f ms, p99 %.3f ms (%d requests)" % (
                percentile(hot, 0.5), percentile(hot, 0.99), len(hot)))
            print("predict on a random one-sentence session (%d of %d loaded from the store: log replay): "
                  "p50 %.3f ms, p99 %.3f ms; ratio to resident p50 %.2f" % (
                      loads_mid - loads_before, len(cold), percentile(cold, 0.5), percentile(cold, 0.99),
                      percentile(cold, 0.5) / max(percentile(hot, 0.5), 1e-9)))
            if cold_long:
                print("predict on a random long session (%d of %d loaded: snapshot read and restored): "
                      "p50 %.3f ms, p99 %.3f ms; ratio to resident p50 %.2f" % (
                          d["loads"] - loads_mid, len(cold_long), percentile(cold_long, 0.5),
                          percentile(cold_long, 0.99), percentile(cold_long, 0.5) / max(percentile(hot, 0.5), 1e-9)))
            print("server load latency, all loads of the run, populate churn included (submit -> rebuilt): "
                  "p50 %.3f ms, p99 %.3f ms, max %.3f ms (%d loads)" % (
                d["load_latency_ms"]["p50"], d["load_latency_ms"]["p99"], d["load_latency_ms"]["max"], d["loads"]))
            print("after the reloads: %s, resident %d" % (memory(proc.pid), d["sessions_resident"]))
            for cn in conns:
                cn.sock.close()
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
            proc, address, t0 = start(serve, args.model, data, args.resident, work)
            first = Conn(address).call("predict", session=ids[0], topk=1)
            print("restart with %d stored sessions: %.3f s from exec to the first answer (pos %d)" % (
                args.sessions, time.time() - t0, first["pos"]))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)


if __name__ == "__main__":
    main()
