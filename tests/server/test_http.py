#!/usr/bin/env python3
"""test_http.py - fwm-serve's HTTP port (--http): Prometheus metrics checked by Prometheus' own
promtool and against `stats`, health, the model list, static files, its limits, and msgpack-RPC over
WebSocket (python3-websocket as an independent client), one case per meson test:

  test_http.py CASE --serve PATH --init PATH --babi DIR --source-root DIR

Exit 0 pass, 1 fail, 77 skip.
"""
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

import msgpack

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_harness import main as harness_main  # noqa: E402
from server_harness import PRIME, SkipCase, Client, RpcError, check, check_eq, expect_error, tokenize  # noqa: E402

try:
    import websocket  # python3-websocket (websocket-client)
except ImportError:
    websocket = None

TEXT = "Mary moved to the bathroom. John went to the hallway."
TOKEN = "0123456789abcdef0123456789abcdef"


def http_address(server):
    for a in server.addresses:
        if a.startswith("http://"):
            return a[len("http://"):]
    raise AssertionError("no http:// line in the port file: %r" % server.addresses)


def get(server, path, method="GET", headers=None, body=None):
    """(status, headers dict, body bytes) of one request on a fresh connection."""
    host, port = http_address(server).rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request(method, path, body=body, headers=headers or {})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, data


def raw_request(server, data, seconds=5.0):
    """Send raw bytes on the HTTP port; everything the server answers until it closes (or `seconds`)."""
    host, port = http_address(server).rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=seconds)
    s.sendall(data)
    out = b""
    deadline = time.time() + seconds
    try:
        while time.time() < deadline:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    s.close()
    return out


def parse_metrics(text):
    """{(name, frozenset(labels)): value} of the exposition text (independent of promtool)."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? (\S+)$', line)
        check(m is not None, "metric line", line)
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        out[(m.group(1), labels)] = float(m.group(4))
    return out


def value(metrics, name, **labels):
    key = (name, frozenset(labels.items()))
    check(key in metrics, "metric %s%s present" % (name, labels))
    return metrics[key]


def need_websocket():
    if websocket is None:
        raise SkipCase("python3-websocket is not installed (scripts/setup.sh installs it)")


class WsClient:
    """msgpack-RPC over WebSocket: one binary message per msgpack-RPC message."""

    def __init__(self, server, header=None, suppress_origin=False):
        self.ws = websocket.create_connection("ws://%s/rpc" % http_address(server), timeout=10, header=header or [],
                                              suppress_origin=suppress_origin)
        self.next_id = 1
        self.responses, self.notifications = {}, []

    def send(self, method, **params):
        msgid = self.next_id
        self.next_id += 1
        self.ws.send_binary(msgpack.packb([0, msgid, method, [params]], use_bin_type=True))
        return msgid

    def read_one(self):
        """(opcode, payload) of the next message; opcode 8 (close) when the server closes."""
        op, data = self.ws.recv_data(control_frame=True)
        return op, data

    def pump(self):
        op, data = self.read_one()
        check_eq(op, websocket.ABNF.OPCODE_BINARY, "the server sends binary messages")
        m = msgpack.unpackb(data, raw=False)  # exactly one msgpack message per WebSocket message
        if m[0] == 1:
            self.responses[m[1]] = m
        else:
            self.notifications.append(m)
        return m

    def call(self, method, **params):
        msgid = self.send(method, **params)
        while msgid not in self.responses:
            self.pump()
        _, _, error, result = self.responses.pop(msgid)
        if error is not None:
            raise RpcError(error)
        return result

    def expect_failure(self, what):
        """The connection fails: an `error` notification naming `what`, then a close frame."""
        m = self.pump()
        check(m[0] == 2 and m[1] == "error", "an error notification", m)
        check_eq(m[2][0]["name"], "protocol", "error name")
        check(what in m[2][0]["message"], "the error says why (%s)" % what, m[2][0]["message"])
        op, data = self.read_one()
        check_eq(op, websocket.ABNF.OPCODE_CLOSE, "then the server closes")
        return m[2][0]["message"]


# ---- /metrics ----------------------------------------------------------------------------------

def case_metrics(env):
    promtool = shutil.which("promtool")
    if not promtool:
        raise SkipCase("promtool is not installed (Debian package prometheus; scripts/setup.sh installs it)")
    server = env.start([env.model(), env.model(name="second", seed=4)], "--http", "tcp://127.0.0.1:0",
                       "--workers", "1")
    c = Client(server.address)
    names = [m["name"] for m in c.call("hello")["models"]]
    c.call("open", model=names[1])
    s = c.call("open")["session"]
    c.call("feed", session=s, text=TEXT)
    c.call("ask", session=s, question="Where is Mary?")
    expect_error("unknown_word", c.call, "feed", session=s, text="Mary zyzzyva")
    expect_error("bad_params", c.call, "feed", session=s)
    expect_error("unknown_session", c.call, "feed", session="0" * 32, text="Mary")
    stats = c.call("stats")
    status, headers, body = get(server, "/metrics")
    check_eq(status, 200, "status")
    check(headers["content-type"].startswith("text/plain; version=0.0.4"), "content type", headers["content-type"])
    text = body.decode()
    lint = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    check_eq((lint.returncode, lint.stdout + lint.stderr), (0, ""), "promtool check metrics")
    m = parse_metrics(text)
    # what this test did, counted independently ...
    fed = len(tokenize(TEXT))
    check(value(m, "fwm_tokens_total") >= fed, "tokens counted", value(m, "fwm_tokens_total"))
    for code, n in (("unknown_word", 1), ("bad_params", 1), ("unknown_session", 1), ("overloaded", 0)):
        check_eq(value(m, "fwm_errors_total", code=code), n, "errors with code %s" % code)
    check_eq(value(m, "fwm_sessions_opened_total"), 2, "sessions opened")
    check_eq([value(m, "fwm_sessions_resident", model=n) for n in names], [1, 1], "sessions per model")
    # ... and the same values as `stats` on the same server
    check_eq(value(m, "fwm_tokens_total"), stats["tokens"], "tokens = stats")
    check_eq(value(m, "fwm_batch_size_count"), stats["batches"], "batches = stats")
    check_eq(value(m, "fwm_batch_size_sum") / value(m, "fwm_batch_size_count"), stats["batch_size_mean"],
             "mean batch size = stats")
    check_eq(value(m, "fwm_batch_size_max"), stats["batch_size_max"], "largest batch = stats")
    check_eq(sum(value(m, "fwm_model_tokens_total", model=n) for n in names), stats["tokens"], "tokens per model")
    check_eq(value(m, "fwm_model_tokens_total", model=names[1]), 0, "the second model stepped nothing")
    check_eq(value(m, "fwm_requests_total"), stats["requests"], "requests = stats")
    check_eq(value(m, "fwm_connections"), stats["connections"], "connections = stats")
    check_eq(value(m, "fwm_memory_sessions_bytes"), stats["memory"]["sessions_bytes"], "session memory = stats")
    check_eq(sum(v for (n, _), v in m.items() if n == "fwm_sessions_resident"), stats["sessions"], "sessions = stats")
    for name, n in stats["errors_by_code"].items():
        check_eq(value(m, "fwm_errors_total", code=name), n, "errors %s = stats" % name)
    check_eq(value(m, "fwm_token_latency_seconds_count"), stats["token_latency_ms"]["count"], "token latency count")
    # the stats request itself is timed after its reply was packed
    check_eq(value(m, "fwm_request_latency_seconds_count"), stats["request_latency_ms"]["count"] + 1,
             "request latency count")
    for h in ("fwm_token_latency_seconds", "fwm_request_latency_seconds", "fwm_batch_size"):
        buckets = sorted((float(dict(k[1])["le"]), v) for k, v in m.items() if k[0] == h + "_bucket")
        counts = [v for _, v in buckets]
        check(counts == sorted(counts), "%s buckets are cumulative" % h, counts)
        check_eq(buckets[-1], (float("inf"), value(m, h + "_count")), "%s +Inf bucket = count" % h)
        check(value(m, h + "_sum") > 0, "%s sum" % h)
    check_eq(value(m, "fwm_batch_size_bucket", le="1"), stats["batches"], "one session per batch here")
    check(value(m, "fwm_token_latency_seconds_sum") < value(m, "fwm_token_latency_seconds_count") * 10,
          "latencies are in seconds")
    check_eq(value(m, "fwm_http_connections"), 1, "HTTP connections: this one")
    check(not re.search(r"[0-9a-f]{32}", text), "no session ids in the metrics")
    # durable mode adds the store's metrics: promtool again, and the stored sessions = stats
    durable = env.start([env.model()], "--http", "tcp://127.0.0.1:0", "--data-dir", os.path.join(env.dir, "data"))
    d = Client(durable.address)
    sessions = [d.call("open")["session"] for _ in range(8)]
    for msgid in [d.send("feed", session=x, text=" ".join([TEXT] * 20)) for x in sessions]:  # pipelined:
        d.wait(msgid)  # sessions stepped together
    stats = d.call("stats")
    text = get(durable, "/metrics")[2].decode()
    lint = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    check_eq((lint.returncode, lint.stdout + lint.stderr), (0, ""), "promtool check metrics, durable")
    m = parse_metrics(text)
    check_eq(value(m, "fwm_sessions_stored"), 8, "stored sessions")
    largest = stats["batch_size_max"]
    check(largest > 1, "batches of several sessions", largest)
    edge = 1 << (largest - 1).bit_length()  # the smallest power of two >= the largest batch
    check_eq(value(m, "fwm_batch_size_bucket", le=str(edge)), stats["batches"], "every batch at most %d" % edge)
    check(value(m, "fwm_batch_size_bucket", le=str(edge // 2)) < stats["batches"], "the largest is above %d" % (edge // 2))
    check_eq(value(m, "fwm_sessions_stored"), stats["durability"]["sessions_stored"], "stored sessions = stats")
    check_eq(value(m, "fwm_store_commits_total"), stats["durability"]["commits"], "commits = stats")
    check_eq(value(m, "fwm_store_healthy"), 1, "store healthy")


# ---- /health, /v1/models, errors, authentication -----------------------------------------------

def health(server, headers=None):
    status, _, body = get(server, "/health", headers=headers)
    return status, json.loads(body)


def case_health(env):
    model = env.model()
    server = env.start([model], "--http", "tcp://127.0.0.1:0", "--max-sessions", "2", "--drain-timeout", "20")
    status, h = health(server)
    check_eq((status, h["status"], h["reason"]), (200, "ready", None), "ready")
    c = Client(server.address)
    first = c.call("open")["session"]
    c.call("open")
    status, h = health(server)
    check_eq((status, h["status"]), (503, "overloaded"), "full")
    check("max-sessions 2" in h["reason"], "the reason names the limit", h["reason"])
    c.call("close", session=first)
    check_eq(health(server)[0], 200, "ready again")
    # draining: a reader that takes nothing keeps work in flight after SIGTERM
    slow = Client(server.address)
    s = slow.call("open")["session"]
    slow.send("feed", session=s, text=" ".join([TEXT] * 5000))  # megabytes of notifications nobody reads
    time.sleep(0.5)
    server.signal()
    time.sleep(0.3)
    status, h = health(server)
    check_eq((status, h["status"]), (503, "draining"), "draining after SIGTERM")
    check("shutting down" in h["reason"], "reason", h["reason"])
    server.kill()


def case_endpoints(env):
    model = env.model()
    server = env.start([model], "--http", "tcp://127.0.0.1:0")
    hello = Client(server.address).call("hello")
    status, headers, body = get(server, "/v1/models")
    check_eq((status, headers["content-type"]), (200, "application/json"), "models")
    data = json.loads(body)["data"]
    check_eq([(d["id"], d["fingerprint"], d["vocab_size"], d["default"]) for d in data],
             [(m["name"], m["fingerprint"], m["vocab_size"], m["default"]) for m in hello["models"]], "models = hello")
    status, _, body = get(server, "/nope")
    check_eq(status, 404, "unknown path")
    check(b"not found" in body, "404 body says so", body)
    status, headers, body = get(server, "/metrics", method="POST", body=b"x" * 100)
    check_eq((status, headers.get("allow")), (405, "GET"), "POST")
    check(b"GET only" in body, "405 body", body)
    status, _, body = get(server, "/rpc")
    check_eq(status, 426, "/rpc without an upgrade")
    # a header larger than the limit: refused, not buffered
    answer = raw_request(server, b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n")
    check(not answer.startswith(b"HTTP/1.1 200"), "an oversized header is refused", answer[:80])
    # without a token, a request must name this machine (DNS rebinding), and a browser page of another
    # origin cannot open the WebSocket (cross-site WebSocket hijacking); the server's own page can
    status, _, body = get(server, "/health", headers={"Host": "rebind.example:8080"})
    check_eq(status, 403, "a foreign Host without a token")
    check(b"Host" in body, "403 says why", body)
    check_eq(get(server, "/health", headers={"Host": "localhost:1"})[0], 200, "Host localhost")
    if websocket is not None:
        here = http_address(server)
        for header, what in ((["Origin: http://evil.example"], "another site's page"),
                             (["Host: rebind.example", "Origin: http://rebind.example"], "a rebound name")):
            try:
                WsClient(server, header=header, suppress_origin=True)
                raise AssertionError("a WebSocket from %s was accepted" % what)
            except (websocket.WebSocketException, OSError):
                pass
        own = WsClient(server, header=["Origin: http://" + here], suppress_origin=True)
        check_eq(own.call("hello")["server"], "fwm-serve", "the server's own page may")
    # not a loopback address without a token: refused at startup, as --listen
    bad = env.start([model], "--http", "tcp://0.0.0.0:0", wait=False)
    check_eq(bad.wait(15), 1, "exit status for a non-loopback --http without a token")
    check("--http" in bad.stderr() and "auth-token-file" in bad.stderr(), "says why", bad.stderr())


def case_auth(env):
    token_file = os.path.join(env.dir, "token")
    with open(token_file, "w") as f:
        f.write(TOKEN + "\n")
    os.chmod(token_file, 0o600)
    server = env.start([env.model()], "--http", "tcp://127.0.0.1:0", "--auth-token-file", token_file)
    for path in ("/metrics", "/health", "/v1/models"):
        status, headers, body = get(server, path)
        check_eq((status, headers.get("www-authenticate")), (401, "Bearer"), path + " without a token")
        check(b"Authorization: Bearer" in body, "401 says how", body)
        status, _, _ = get(server, path, headers={"Authorization": "Bearer wrong-token-0123456789"})
        check_eq(status, 401, path + " with a wrong token")
        status, _, _ = get(server, path, headers={"Authorization": "Bearer " + TOKEN})
        check_eq(status, 200, path + " with the token")
    status, _, body = get(server, "/metrics", headers={"Authorization": "Bearer " + TOKEN})
    check(value(parse_metrics(body.decode()), "fwm_auth_failures_total") >= 6, "failures counted")
    if websocket is None:
        return
    ws = WsClient(server)  # no header: hello {token} first, as on the msgpack port
    try:
        ws.call("open")
        raise AssertionError("open before hello succeeded")
    except RpcError as e:
        check_eq(e.name, "unauthorized", "open before hello")
    check_eq(ws.call("hello", token=TOKEN)["authenticated"], True, "hello with the token")
    check_eq(len(ws.call("open")["session"]), 32, "then open")
    ws = WsClient(server, header=["Authorization: Bearer " + TOKEN])  # or the header
    check_eq(ws.call("hello")["authenticated"], True, "authenticated by the header")
    try:
        WsClient(server, header=["Authorization: Bearer wrong-token-0123456789"])
        raise AssertionError("a wrong token in the header was accepted")
    except (websocket.WebSocketException, OSError):
        pass


# ---- static files ------------------------------------------------------------------------------

def case_static_files(env):
    root = os.path.join(env.dir, "www")
    os.makedirs(os.path.join(root, "js"))
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("<!doctype html><title>fwm</title>\n")
    with open(os.path.join(root, "js", "app.js"), "w") as f:
        f.write("export const answer = 42;\n")
    with open(os.path.join(env.dir, "secret.txt"), "w") as f:
        f.write("SECRET\n")
    os.symlink(os.path.join(env.dir, "secret.txt"), os.path.join(root, "link.txt"))
    server = env.start([env.model()], "--http", "tcp://127.0.0.1:0", "--http-root", root)
    status, headers, body = get(server, "/")
    check_eq((status, body), (200, b"<!doctype html><title>fwm</title>\n"), "/ is index.html")
    check(headers["content-type"].startswith("text/html"), "html type", headers["content-type"])
    status, headers, body = get(server, "/js/app.js")
    check_eq((status, body), (200, b"export const answer = 42;\n"), "a file in a folder")
    check("javascript" in headers["content-type"], "js type", headers["content-type"])
    for path in (b"/../secret.txt", b"/js/../../secret.txt", b"/%2e%2e/secret.txt", b"/js/%2e%2e/%2e%2e/secret.txt",
                 b"/link.txt", b"/..%2fsecret.txt", b"//etc/passwd", b"/js"):
        answer = raw_request(server, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        check(b"SECRET" not in answer and b"root:" not in answer, "nothing outside the root for %r" % path, answer[:200])
        check(not answer.startswith(b"HTTP/1.1 200"), "refused: %r" % path, answer[:100])


# ---- limits ------------------------------------------------------------------------------------

def case_limits(env):
    server = env.start([env.model()], "--http", "tcp://127.0.0.1:0", "--message-timeout", "2",
                       "--max-connections", "3")
    host, port = http_address(server).rsplit(":", 1)
    # a request whose headers never end is cut off after the timeout
    slow = socket.create_connection((host, int(port)), timeout=10)
    slow.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
    start = time.time()
    try:
        while slow.recv(4096):
            pass
    except (socket.timeout, ConnectionResetError):
        pass
    elapsed = time.time() - start
    check(elapsed < 8, "an unfinished request is closed within the timeout", elapsed)
    slow.close()
    # the connection limit covers the HTTP port too: the fourth is refused with 503
    held = [socket.create_connection((host, int(port)), timeout=10) for _ in range(3)]
    time.sleep(0.3)
    answer = raw_request(server, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    check(answer.startswith(b"HTTP/1.1 503") and b"max-connections 3" in answer, "fourth connection refused",
          answer[:200])
    for s in held:
        s.close()
    time.sleep(0.5)
    status, _, _ = get(server, "/health")
    check_eq(status, 200, "served again once they closed")
    if websocket is not None:  # a WebSocket message left unfinished: --message-timeout, as on TCP
        ws = WsClient(server)
        ws.ws.send_frame(websocket.ABNF(0, 0, 0, 0, websocket.ABNF.OPCODE_BINARY, 1, b"\x94\x00\x01"))
        start = time.time()
        ws.expect_failure("no complete message within message-timeout 2s")
        check(time.time() - start < 6, "within the timeout", time.time() - start)
    check_eq(server.stop(), 0, "clean exit")
    check("stopped cleanly" in server.stderr(), "stopped cleanly", server.stderr())


def case_hostile_input(env):
    """Garbage, broken requests and broken WebSocket frames: answered or closed, never a crash, and
    the log stays short."""
    import random
    rng = random.Random(7)
    server = env.start([env.model()], "--http", "tcp://127.0.0.1:0", "--message-timeout", "2")
    upgrade = (b"GET /rpc HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    payloads = [b"\x00\xff" * 100, b"GET / HTTP/9.9\r\n\r\n", b"FOO /x HTTP/1.1\r\n\r\n",
                b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
                b"GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
                b"GET /rpc HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
                upgrade + b"\x82\x7f" + b"\xff" * 8,  # a 2^64-1 byte frame
                upgrade + b"\x82\x05hello",  # unmasked client frame
                upgrade + b"\x89\x80\x00\x00\x00\x00" * 50]  # pings
    payloads += [upgrade + bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 3000))) for _ in range(10)]
    payloads += [bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 2000))) for _ in range(20)]
    for p in payloads:
        raw_request(server, p, seconds=1)
    check_eq(get(server, "/health")[0], 200, "still serving HTTP")
    check_eq(Client(server.address).call("hello")["server"], "fwm-serve", "still serving msgpack-RPC")
    check_eq(server.stop(), 0, "clean exit")
    lws_lines = [line for line in server.stderr().splitlines() if "http: " in line]
    check(len(lws_lines) <= 4, "libwebsockets' errors are rate-limited in the log", lws_lines)


# ---- msgpack-RPC over WebSocket ----------------------------------------------------------------

def case_websocket(env):
    need_websocket()
    # a memory of 20^3 floats: a snapshot (32 KB) takes several of the server's 16 KB frames
    server = env.start([env.model(sizes=(32, 32, 20))], "--http", "tcp://127.0.0.1:0", "--max-message-bytes", "4096",
                       "--max-output-bytes", "65536")
    ws = WsClient(server)
    check_eq(ws.call("hello")["server"], "fwm-serve", "hello")
    s = ws.call("open")["session"]
    r = ws.call("feed", session=s, text=TEXT)
    notes = [n[2][0] for n in ws.notifications if n[1] == "token"]
    ws.notifications = []
    words = tokenize(TEXT)
    check_eq((r["fed"], [n["word"] for n in notes]), (len(words), words), "streamed words")
    answer = ws.call("ask", session=s, question="Where is Mary?")
    # the same over the TCP port: the same stream and the same answer
    c = Client(server.address)
    s2 = c.call("open")["session"]
    c.call("feed", session=s2, text=TEXT)
    check_eq([(n["token"], n["topk"]) for n in c.take_tokens(s2)], [(n["token"], n["topk"]) for n in notes],
             "WebSocket stream = TCP stream")
    check_eq(c.call("ask", session=s2, question="Where is Mary?")["answer"], answer["answer"], "same answer")
    # the same errors
    for method, params, name in (("nope", {}, "unknown_method"), ("feed", {"session": s}, "bad_params"),
                                 ("feed", {"session": s, "text": "zyzzyva"}, "unknown_word")):
        try:
            ws.call(method, **params)
            raise AssertionError("%s succeeded" % method)
        except RpcError as e:
            check_eq(e.name, name, "error of %s" % method)
    # a snapshot larger than one WebSocket frame of the server's comes back whole
    state = ws.call("snapshot", session=s)["state"]
    check(len(state) > 16384, "a large reply", len(state))
    check_eq(c.call("snapshot", session=s)["state"], state, "the same bytes as over TCP")
    # one message split over several WebSocket frames is one message
    msg = msgpack.packb([0, 99, "predict", [{"session": s}]], use_bin_type=True)
    ws.ws.send_frame(websocket.ABNF(0, 0, 0, 0, websocket.ABNF.OPCODE_BINARY, 1, msg[:5]))
    ws.ws.send_frame(websocket.ABNF(1, 0, 0, 0, websocket.ABNF.OPCODE_CONT, 1, msg[5:]))
    while 99 not in ws.responses:
        ws.pump()
    check(ws.responses[99][2] is None, "fragmented request answered", ws.responses[99])
    # hostile messages: each fails the connection with a protocol error, then a close
    bad = WsClient(server)
    bad.ws.send("hello")
    bad.expect_failure("text WebSocket message")
    bad = WsClient(server)
    bad.ws.send_binary(b"\x91" + msgpack.packb("x" * 5000))
    bad.expect_failure("max-message-bytes 4096")
    bad = WsClient(server)
    bad.ws.send_binary(msgpack.packb([0, 1, "hello", [{}]]) * 2)
    bad.expect_failure("more than one msgpack-RPC message")
    bad = WsClient(server)
    bad.ws.send_binary(msgpack.packb([0, 1, "hello", [{}]])[:-3])
    bad.expect_failure("ends inside a msgpack-RPC message")
    status, _, body = get(server, "/metrics")
    m = parse_metrics(body.decode())
    check_eq(value(m, "fwm_errors_total", code="protocol"), 4, "protocol errors counted")
    check_eq(value(m, "fwm_websocket_connections"), 1, "the one good WebSocket is still open")
    # backpressure: a WebSocket client that does not read holds at most --max-output-bytes (plus a reply)
    slow = WsClient(server)
    s3 = slow.call("open")["session"]
    # 24 feeds of 249 tokens (each request under --max-message-bytes 4096), x topk 100: about 9 MB of
    # notifications, more than the kernel's socket buffers hold
    chunk = " ".join(["the kitchen ."] * 83)
    msgids = [slow.send("feed", session=s3, text=chunk, topk=100) for _ in range(24)]
    parked, peak, deadline = 0, 0, time.time() + 15
    while time.time() < deadline and not parked:
        st = c.call("stats")
        parked, peak = st["parked_sessions"], max(peak, st["memory"]["output_queued_bytes"])
        time.sleep(0.05)
    check_eq(parked, 1, "the non-reading client's session is parked")
    check(peak <= 65536 + 16384, "queued output bounded by max-output-bytes", peak)
    while msgids[-1] not in slow.responses:
        slow.pump()
    check_eq([slow.responses[m][3]["fed"] for m in msgids], [249] * 24, "everything arrives once read")
    notes = [n[2][0] for n in slow.notifications if n[1] == "token"]
    check_eq([n["pos"] for n in notes], list(range(PRIME + 1, PRIME + 24 * 249 + 1)), "every notification, in order")
    # a clean shutdown with a WebSocket open
    check_eq(server.stop(), 0, "clean exit with a WebSocket open")
    check("stopped cleanly" in server.stderr(), "stopped cleanly", server.stderr())


CASES = {
    "metrics": case_metrics,
    "health": case_health,
    "endpoints": case_endpoints,
    "auth": case_auth,
    "static_files": case_static_files,
    "limits": case_limits,
    "hostile_input": case_hostile_input,
    "websocket": case_websocket,
}

if __name__ == "__main__":
    sys.exit(harness_main(CASES, needs_babi=lambda case: True))
