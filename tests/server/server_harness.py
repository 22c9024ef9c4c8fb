"""server_harness.py - helpers for the fwm-serve tests: test models made with fwm-init, the catbAbI
vocabulary and stories from the bAbI files, a server process on OS-chosen ports, and a small
independent msgpack-RPC client (python3-msgpack) that can also send raw bytes.

Every wait is bounded: sockets time out, processes are killed when a test ends.
"""
import argparse
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import msgpack

SKIP = 77

# Tokens a new session has read: the test models are fwm-init's, whose files leave out
# fwm.session.prime_tokens, so `open` and `reset` prime with the documented default, one "<eos>".
PRIME = 1


class RpcError(Exception):
    def __init__(self, error):
        self.code = error.get("code")
        self.name = error.get("name")
        self.message = error.get("message")
        self.error = error
        super().__init__("%s (%s): %s" % (self.name, self.code, self.message))


def tokenize(text):
    """catbAbI tokenization: lower-case, split on white space, a final '.' or '?' is its own token."""
    out = []
    for w in text.lower().split():
        if len(w) > 1 and w[-1] in ".?":
            out += [w[:-1], w[-1]]
        else:
            out.append(w)
    return out


def babi_files(babi_dir, split="test"):
    return sorted(glob.glob(os.path.join(babi_dir, "en-valid-10k", "qa*_%s.txt" % split)),
                  key=lambda p: int(os.path.basename(p)[2:].split("_")[0]))


def read_stories(path, limit=None):
    """Stories of one bAbI file: lists of ("statement", text) and ("question", text, answer)."""
    stories, story = [], None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip():
                continue
            number, _, rest = line.partition(" ")
            if number == "1":
                if story:
                    stories.append(story)
                    if limit and len(stories) >= limit:
                        return stories
                story = []
            parts = rest.split("\t")
            if len(parts) > 1:
                story.append(("question", parts[0].strip(), parts[1].strip().lower()))
            else:
                story.append(("statement", parts[0].strip()))
    if story and (not limit or len(stories) < limit):
        stories.append(story)
    return stories


def story_text(story):
    """The story as catbAbI reads it: statements, questions and their answers."""
    words = []
    for item in story:
        words += tokenize(item[1])
        if item[0] == "question":
            words.append(item[2])
    return " ".join(words)


def write_vocab(babi_dir, path):
    """A catbAbI-style vocabulary (<pad>, <eos>, then words in order of first appearance) of the test
    split: the tests only feed test stories to the random models made with it."""
    words, seen = ["<pad>", "<eos>"], {"<pad>", "<eos>"}
    for split in ("test",):
        for f in babi_files(babi_dir, split):
            for story in read_stories(f):
                for w in tokenize(story_text(story)):
                    if w not in seen:
                        seen.add(w)
                        words.append(w)
    with open(path, "w") as f:
        f.write("\n".join(words) + "\n")
    return words


class SkipCase(Exception):
    """Raised when what a case needs is absent (the bAbI data): run_case reports a skip (77)."""


class Env:
    """Paths from the command line and a temp dir that disappears with the test."""

    def __init__(self, args):
        self.serve = args.serve
        self.init = args.init
        self.babi = args.babi
        self.source_root = args.source_root
        self.tmp = tempfile.TemporaryDirectory(prefix="fwm-test-server-")
        self.dir = self.tmp.name
        self._vocab = None
        self.servers = []
        self.redises = []

    def vocab(self):
        if not self._vocab:
            if not babi_files(self.babi):
                raise SkipCase("no bAbI data at %s (the test vocabulary comes from its test stories; "
                               "meson setup -Dbabi_dir=DIR)" % self.babi)
            self._vocab = os.path.join(self.dir, "vocab.txt")
            write_vocab(self.babi, self._vocab)
        return self._vocab

    def model(self, name="test", seed=3, read_policy="always", sizes=(32, 32, 8)):
        path = os.path.join(self.dir, name + ".gguf")
        e, h, m = sizes
        cmd = [self.init, "--out", path, "--vocab", self.vocab(), "--embedding", str(e), "--hidden", str(h),
               "--memory-s", str(m), "--memory-r", str(m), "--memory-t", str(m), "--seed", str(seed),
               "--read-policy", read_policy]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, timeout=60)
        return path

    def redis(self, tcp=False):
        r = Redis(self, tcp)
        self.redises.append(r)
        return r

    def start(self, models, *flags, listen=None, env=None, wait=True, wrap=()):
        """Start fwm-serve; `wrap`: a command it runs under (e.g. nsenter into a mount namespace)."""
        server = Server(self, models, flags, listen, env, wait, wrap)
        self.servers.append(server)
        return server

    def close(self):
        for s in self.servers:
            s.kill()
        for r in self.redises:
            r.kill()
        self.tmp.cleanup()


class Redis:
    """A redis-server of the test's own: temp folder, loopback port (tcp=True) or Unix socket, append-only
    file forced to disk on every write (appendonly yes, appendfsync always), stopped with the test."""

    def __init__(self, env, tcp=False):
        exe = shutil.which("redis-server")
        if not exe:
            raise SkipCase("redis-server is not installed (scripts/setup.sh installs it: Debian redis-server)")
        self.dir = os.path.join(env.dir, "redis-%d" % len(env.servers))
        os.makedirs(self.dir)
        self.socket = os.path.join(self.dir, "redis.sock")
        self.exe = exe
        self.tcp = tcp
        self.port = free_port() if tcp else 0
        self.proc = None
        self.start()

    @property
    def location(self):
        return "redis://127.0.0.1:%d" % self.port if self.tcp else "unix:" + self.socket

    def start(self):
        conf = ["--dir", self.dir, "--port", str(self.port), "--bind", "127.0.0.1", "--unixsocket", self.socket,
                "--unixsocketperm", "700", "--appendonly", "yes", "--appendfsync", "always", "--save", "",
                "--logfile", os.path.join(self.dir, "redis.log"), "--daemonize", "no"]
        self.proc = subprocess.Popen([self.exe] + conf, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 15
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("redis-server exited at start: %s" % self.log())
            try:
                if self.command("PING") == "PONG":
                    return
            except OSError:
                pass
            time.sleep(0.02)
        raise RuntimeError("redis-server did not answer: %s" % self.log())

    def log(self):
        try:
            with open(os.path.join(self.dir, "redis.log")) as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    def command(self, *args):
        """One command over the Unix socket (RESP by hand: the tests need no Redis client library)."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        try:
            s.connect(self.socket)
            out = b"*%d\r\n" % len(args)
            for a in args:
                a = a if isinstance(a, bytes) else str(a).encode()
                out += b"$%d\r\n%s\r\n" % (len(a), a)
            s.sendall(out)
            buf = b""
            while True:
                value, rest = parse_resp(buf)
                if rest is not None:
                    return value
                data = s.recv(1 << 16)
                if not data:
                    raise OSError("redis-server closed the connection")
                buf += data
        finally:
            s.close()

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=15)

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def parse_resp(buf):
    """(value, rest) of one RESP reply at the start of buf; rest None when incomplete."""
    end = buf.find(b"\r\n")
    if end < 0:
        return None, None
    kind, line, rest = buf[:1], buf[1:end], buf[end + 2:]
    if kind == b"+":
        return line.decode(), rest
    if kind == b"-":
        return RuntimeError(line.decode()), rest
    if kind == b":":
        return int(line), rest
    if kind == b"$":
        n = int(line)
        if n < 0:
            return None, rest
        if len(rest) < n + 2:
            return None, None
        return rest[:n], rest[n + 2:]
    if kind == b"*":
        n, items = int(line), []
        if n < 0:
            return None, rest
        for _ in range(n):
            value, rest = parse_resp(rest)
            if rest is None:
                return None, None
            items.append(value)
        return items, rest
    raise ValueError("not RESP: %r" % buf[:20])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, env, models, flags, listen, extra_env, wait, wrap=()):
        self.port_file = os.path.join(env.dir, "port-%d-%d" % (os.getpid(), len(env.servers)))
        listen = listen or ["tcp://127.0.0.1:0"]
        cmd = list(wrap) + [env.serve] + list(models)
        for a in listen:
            cmd += ["--listen", a]
        cmd += ["--port-file", self.port_file] + list(flags)
        self.stderr_path = self.port_file + ".stderr"
        self.stderr_file = open(self.stderr_path, "w")
        run_env = dict(os.environ)
        run_env.update(extra_env or {})
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.stderr_file, env=run_env)
        self.addresses = []
        if wait:
            deadline = time.time() + 15
            while time.time() < deadline and self.proc.poll() is None and not os.path.exists(self.port_file):
                time.sleep(0.01)
            if not os.path.exists(self.port_file):
                self.kill()
                raise RuntimeError("fwm-serve did not start: %s" % self.stderr())
            with open(self.port_file) as f:
                self.addresses = f.read().split()

    @property
    def address(self):
        return self.addresses[0]

    def stderr(self):
        self.stderr_file.flush()
        with open(self.stderr_path) as f:
            return f.read()

    def signal(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)

    def wait(self, timeout=15):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("fwm-serve did not exit within %ss; stderr:\n%s" % (timeout, self.stderr()))

    def stop(self, timeout=15):
        if self.proc.poll() is None:
            self.signal(signal.SIGTERM)
        return self.wait(timeout)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def connect(address, timeout=10.0):
    if address.startswith("unix:"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(address[5:])
    else:
        host, port = address[len("tcp://"):].rsplit(":", 1)
        s = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


class Client:
    """A msgpack-RPC client that keeps notifications per session and can pipeline."""

    def __init__(self, address, timeout=10.0):
        self.sock = connect(address, timeout)
        self.unpacker = msgpack.Unpacker(raw=False, max_buffer_size=64 << 20)
        self.next_id = 1
        self.responses = {}
        self.notifications = []
        self.closed = False

    def close(self):
        self.sock.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, method, **params):
        msgid = self.next_id
        self.next_id += 1
        self.sock.sendall(msgpack.packb([0, msgid, method, [params]], use_bin_type=True))
        return msgid

    def notify(self, method, **params):
        self.sock.sendall(msgpack.packb([2, method, [params]], use_bin_type=True))

    def read_one(self):
        """Next message, or None at end of stream."""
        while True:
            for m in self.unpacker:
                return m
            data = self.sock.recv(1 << 16)
            if not data:
                self.closed = True
                return None
            self.unpacker.feed(data)

    def pump(self):
        m = self.read_one()
        if m is None:
            raise AssertionError("connection closed by the server")
        if m[0] == 1:
            self.responses[m[1]] = m
        else:
            self.notifications.append(m)
        return m

    def wait(self, msgid):
        while msgid not in self.responses:
            self.pump()
        _, _, error, result = self.responses.pop(msgid)
        if error is not None:
            raise RpcError(error)
        return result

    def call(self, method, **params):
        return self.wait(self.send(method, **params))

    def take_tokens(self, session=None):
        """Drain collected `token` notifications (of one session)."""
        keep, out = [], []
        for n in self.notifications:
            if n[1] == "token" and (session is None or n[2][0]["session"] == session):
                out.append(n[2][0])
            else:
                keep.append(n)
        self.notifications = keep
        return out


def expect_error(name, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except RpcError as e:
        if e.name != name:
            raise AssertionError("expected error %s, got %s: %s" % (name, e.name, e.message))
        return e
    raise AssertionError("expected error %s, the call succeeded" % name)


def stored_count(client, expected, within=3.0):
    """stats.durability.sessions_stored once it equals `expected`, or as it is after `within` seconds: a
    Redis store's figures are read once a second, off the event loop."""
    deadline = time.time() + within
    while True:
        count = client.call("stats")["durability"]["sessions_stored"]
        if count == expected or time.time() > deadline:
            return count
        time.sleep(0.1)


def check(cond, what, *values):
    if not cond:
        raise AssertionError(what + ("" if not values else ": " + " | ".join(repr(v) for v in values)))


def check_eq(found, expected, what):
    if found != expected:
        raise AssertionError("%s: found %r, expected %r" % (what, found, expected))


def run_case(env, name, case, failures=(AssertionError, OSError)):
    """Run one test case (a callable taking no arguments) in `env`: its verdict line, the servers'
    stderr on failure, and the exit status (0 passed, 1 failed, SKIP skipped); closes env."""
    try:
        if case() == SKIP:
            return SKIP
        print("%s: passed" % name)
        return 0
    except SkipCase as e:
        print("SKIP: %s" % e)
        return SKIP
    except failures as e:
        print("%s: FAILED: %s" % (name, e))
        for s in env.servers:
            print("--- server stderr ---\n" + s.stderr())
        return 1
    finally:
        env.close()


def main(cases, needs_babi=lambda case: False):
    """The command line every test script of this folder takes:
    SCRIPT CASE --serve PATH --init PATH --babi DIR --source-root DIR. Runs the case (skips it with
    77 when it needs the bAbI data and there is none) and returns the exit status."""
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(cases))
    ap.add_argument("--serve", required=True)
    ap.add_argument("--init", required=True)
    ap.add_argument("--babi", required=True)
    ap.add_argument("--source-root", required=True)
    args = ap.parse_args()
    if needs_babi(args.case) and not os.path.isdir(args.babi):
        print("SKIP: no bAbI data at %s" % args.babi)
        return SKIP
    env = Env(args)
    return run_case(env, args.case, lambda: cases[args.case](env),
                    failures=(AssertionError, RpcError, OSError, msgpack.ExtraData, UnicodeDecodeError, ValueError))
