"""fwm_client - a Python client of fwm-serve (msgpack-RPC over TCP or a Unix socket).

Uses only the standard library and python3-msgpack. The protocol is specified in docs/PROTOCOL.md.

    from fwm_client import Client
    with Client("tcp://127.0.0.1:7411") as client:
        session = client.open()
        for event in session.stream("Mary moved to the bathroom."):
            print(event["word"], event["topk"][0])
        print(session.ask("Where is Mary?")["answer"])

A Client is one connection used by one thread at a time. Sessions live on the server, not in the
connection: keep `session.id` and reattach later with `client.session(id)`.

Clusters (docs/CLUSTER.md): when several fwm-serve nodes share sessions through Redis, a node that
does not own a session answers `moved` with the owner's address. The client follows it (opening a
connection to that node), remembers the owner of the last sessions it used, and spreads `open` over
the live nodes that `hello` lists. When a node cannot be reached, a request for its sessions goes to
another node, which takes them over once the dead node's lease expires; the client keeps trying
for `failover_timeout` seconds. A request whose connection broke while it was in flight raises
FwmError("io"): it may or may not have been applied, and the client never repeats it by itself.
"""
import collections
import os
import socket
import time

import msgpack

__all__ = ["Client", "Session", "FwmError", "DEFAULT_ADDRESS", "unknown_words", "__version__"]

__version__ = "0.3.0"  # the project's version (meson.build; the `versions` test checks they agree)

DEFAULT_ADDRESS = "tcp://127.0.0.1:7411"


def unknown_words(text, spans):
    """The words of `text` (a str, as sent) at the byte spans a reply's `unknown` lists."""
    raw = text.encode("utf-8")
    return [raw[start:start + length].decode("utf-8", "replace") for start, length in spans]


class FwmError(Exception):
    """An error answered by the server (`code`, `name`, `message`, and `word` for unknown_word),
    or a client-side failure (name "io", "protocol", "bad_response")."""

    def __init__(self, name, message, code=None, word=None, address=None):
        super().__init__("%s: %s" % (name, message))
        self.name = name
        self.message = message
        self.code = code
        self.word = word
        self.address = address  # moved: the node that serves the session


def _connect(address, timeout):
    if address.startswith("unix:"):
        path = address[len("unix://"):] if address.startswith("unix://") else address[len("unix:"):]
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        sock.connect(path)
        return sock
    if address.startswith("tcp://"):
        address = address[len("tcp://"):]
    host, _, port = address.rpartition(":")
    sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class _Connection:
    def __init__(self, address, timeout):
        self.address = address
        self.sock = _connect(address, timeout)
        self.unpacker = msgpack.Unpacker(raw=False, max_buffer_size=64 << 20)

    def close(self):
        self.sock.close()


class Client:
    """A connection to fwm-serve (and, in a cluster, to the other nodes as needed). `timeout`
    (seconds) bounds every wait for bytes."""

    OWNER_CACHE = 4096  # sessions whose node is remembered

    def __init__(self, address=DEFAULT_ADDRESS, timeout=30.0, token=None, failover_timeout=30.0):
        """`token`: the server's authentication token (fwm-serve --auth-token-file), presented once
        with `hello` before anything else; default: the FWM_AUTH_TOKEN environment variable, if set.
        `failover_timeout`: how long a request keeps looking for a live node that serves its session."""
        self.address = address
        self._timeout = timeout
        self._failover_timeout = failover_timeout
        self._token = token if token is not None else os.environ.get("FWM_AUTH_TOKEN")
        self._connections = {}
        self._owners = collections.OrderedDict()  # session id -> node address, least recent first
        self._nodes = None  # the live nodes hello listed, or [] outside a cluster
        self._spread = 0
        self._down = {}  # address -> until when it is not tried
        self._next_id = 1
        self._closed = False
        self._learning = False
        self._current = self._connection(address)

    def _connection(self, address):
        c = self._connections.get(address)
        if c is None:
            c = _Connection(address, self._timeout)
            self._connections[address] = c
            if self._token:
                self._call_on(c, "hello", {"token": self._token})
        return c

    @property
    def _sock(self):
        return self._current.sock if self._current else None

    @property
    def _unpacker(self):
        return self._current.unpacker

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        for c in self._connections.values():
            c.close()
        self._connections = {}
        self._current = None
        self._closed = True

    def _drop(self, address):
        c = self._connections.pop(address, None)
        if c:
            c.close()
        if self._current is c:
            self._current = None

    def nodes(self):
        """The live nodes of the cluster (their addresses), or [] when the server is not in one."""
        cluster = self.hello().get("cluster")
        self._nodes = [n["address"] for n in cluster["nodes"]] if cluster else []
        return list(self._nodes)

    def owner(self, session_id):
        """The node this client last saw serving the session, or None."""
        return self._owners.get(session_id)

    def _remember(self, session_id, address):
        self._owners[session_id] = address
        self._owners.move_to_end(session_id)
        while len(self._owners) > self.OWNER_CACHE:
            self._owners.popitem(last=False)

    def _pick(self, avoid=None):
        """The next live node for an `open` (round robin), or this client's first address."""
        if self._nodes is None and not self._learning:
            self._learning = True  # a hello that itself needs another node must not ask again
            try:
                self.nodes()
            except FwmError:
                self._nodes = []
            finally:
                self._learning = False
        now = time.monotonic()
        candidates = [a for a in (self._nodes or []) if a != avoid and self._down.get(a, 0) <= now]
        if not candidates:
            others = [a for a in (self._nodes or []) + [self.address] if a != avoid]
            return others[0] if others else self.address
        self._spread += 1
        return candidates[self._spread % len(candidates)]

    # -- the wire --
    def _read(self):
        while True:
            for message in self._unpacker:
                return message
            try:
                data = self._sock.recv(1 << 16)
            except socket.timeout:
                raise FwmError("timeout", "no answer from the server") from None
            except OSError as e:
                raise FwmError("io", "connection to %s lost: %s" % (self._current.address, e)) from None
            if not data:
                raise FwmError("io", "the server closed the connection")
            self._unpacker.feed(data)

    def call_stream(self, method, **params):
        """Send one request; yield each `token` notification's params, then return the result
        (as the generator's return value; `call` is the usual way). Follows `moved`."""
        if self._closed:
            raise FwmError("io", "the connection is closed")
        params = {k: v for k, v in params.items() if v is not None}
        session = params.get("session") if isinstance(params.get("session"), str) else None
        if session:
            target = self._owners.get(session, self.address)
        elif method == "open" and self._nodes != []:
            target = self._pick()
        elif self._down.get(self.address, 0) > time.monotonic() and self._nodes:
            target = self._pick(avoid=self.address)  # the first node is down: any live one answers
        else:
            target = self.address
        deadline = time.monotonic() + self._failover_timeout
        hops = 0
        while True:
            try:
                connection = self._connection(target)
            except OSError as e:  # that node is gone: another one answers (or redirects) meanwhile
                self._drop(target)
                self._down[target] = time.monotonic() + 1.0
                if session:
                    self._owners.pop(session, None)
                if time.monotonic() > deadline:
                    raise FwmError("connect", "cannot reach %s: %s" % (target, e)) from None
                time.sleep(0.05)
                target = self._pick(avoid=target)
                continue
            try:
                result = yield from self._request(connection, method, params)
            except FwmError as e:
                if e.name == "moved" and e.address and hops < 32 and time.monotonic() < deadline:
                    hops += 1
                    if e.address == target:
                        time.sleep(0.02)  # the node is taking it over: ask again
                    target = e.address
                    if session:
                        self._remember(session, target)
                    continue
                if e.name in ("io", "timeout"):
                    self._drop(target)
                    self._down[target] = time.monotonic() + 1.0
                    if session:
                        self._owners.pop(session, None)
                raise
            if session:
                self._remember(session, target)
            elif isinstance(result, dict) and isinstance(result.get("session"), str):
                self._remember(result["session"], target)
            if self._nodes is None and not self._learning and method != "hello":
                self._pick()  # learn the other nodes while this one answers, for when it does not
            return result

    def _call_on(self, connection, method, params):
        stream = self._request(connection, method, params)
        while True:
            try:
                next(stream)
            except StopIteration as done:
                return done.value

    def _request(self, connection, method, params):
        """One request on one connection; yields notifications, returns the result."""
        self._current = connection
        msgid = self._next_id
        self._next_id += 1
        try:
            connection.sock.sendall(msgpack.packb([0, msgid, method, [params]], use_bin_type=True))
        except OSError as e:
            raise FwmError("io", "cannot send to %s: %s" % (connection.address, e)) from None
        while True:
            message = self._read()
            if message[0] == 2:
                if message[1] == "token":
                    yield message[2][0]
                elif message[1] == "error":
                    error = message[2][0]
                    raise FwmError("protocol", error.get("message", ""), error.get("code"))
                continue
            if message[0] != 1 or message[1] != msgid:
                continue
            error, result = message[2], message[3]
            if error is not None:
                raise FwmError(error.get("name", "unknown"), error.get("message", ""), error.get("code"),
                               error.get("word"), error.get("address"))
            return result

    def call(self, method, on_token=None, **params):
        """One request; `on_token(event)` sees each `token` notification. Returns the result."""
        stream = self.call_stream(method, **params)
        while True:
            try:
                event = next(stream)
            except StopIteration as done:
                return done.value
            if on_token:
                on_token(event)

    # -- methods --
    def hello(self):
        return self.call("hello")

    def stats(self):
        return self.call("stats")

    def open(self, model=None, topk=None, prime=True):
        """A new session, primed as the model says (for the bundled models it has read "<eos>", as
        every training story begins); prime=False starts from the zero state."""
        return Session(self, self.call("open", model=model, topk=topk, prime=None if prime else False)["session"])

    def session(self, session_id):
        """Attach to an existing session (opened on any connection)."""
        return Session(self, session_id)

    def restore(self, state, model=None, topk=None):
        return Session(self, self.call("restore", state=bytes(state), model=model, topk=topk)["session"])

    def sessions(self, page=100):
        """Every session on the server (stored ones too, with --data-dir), in id order, as a list of
        dicts with session, model, pos, last_used_ms, resident; fetched `page` (1..1000) at a time."""
        items = []
        after = None
        while True:
            reply = self.call("sessions", after=after, limit=page)
            items.extend(reply["sessions"])
            after = reply["next"]
            if after is None:
                return items


class Session:
    """A session on the server: its state (what it has read) persists between calls."""

    def __init__(self, client, session_id):
        self.client = client
        self.id = session_id

    def __repr__(self):
        return "Session(%s)" % self.id

    def feed(self, text=None, tokens=None, topk=None, on_token=None, notify=None, logprobs=False):
        """Read text (or token ids); returns {session, pos, fed, unknown}: `unknown` lists the
        [start, length] byte spans of the text's words read as <unk> (unknown_words() spells them).
        With logprobs=True also `tokens` (the ids read) and `logprobs` (each one's natural-log
        probability given everything the session read before it). A reply that would pass the
        server's max-output-bytes is refused (FwmError "too_large": feed fewer tokens per call), as
        is logprobs on a model whose hello entry says `logprobs: False`; nothing is fed then."""
        if notify is None:
            notify = None if on_token else False
        return self.client.call("feed", on_token=on_token, session=self.id, text=text, tokens=tokens, topk=topk,
                                notify=notify, logprobs=True if logprobs else None)

    def stream(self, text=None, tokens=None, topk=None, logprobs=False):
        """Read text, yielding each token's event {pos, token, word, topk: [[word, prob], ...]}; returns
        feed's result (with logprobs=True, each token's log-probability too)."""
        result = yield from self.client.call_stream("feed", session=self.id, text=text, tokens=tokens, topk=topk,
                                                    logprobs=True if logprobs else None)
        return result

    def ask(self, question, commit=False, topk=None):
        """Closed-book question answering over what the session has read: {answer, prob, topk, pos,
        unknown} (`unknown`: the question's words read as <unk>, as feed's)."""
        return self.client.call("ask", session=self.id, question=question, commit=commit, topk=topk)

    def predict(self, topk=None):
        return self.client.call("predict", session=self.id, topk=topk)

    def reset(self, prime=True):
        """Back to the start state (primed, as a new session), or to zero with prime=False."""
        return self.client.call("reset", session=self.id, prime=None if prime else False)

    def fork(self):
        return Session(self.client, self.client.call("fork", session=self.id)["session"])

    def trace(self, text=None, tokens=None, topk=None, memory=False):
        """What reading `text` would write into the memory and what each chained read retrieves, on
        a copy (this session is not changed): {pos, shape: [S, R, T, N_r], steps, memory}. Vectors
        are bytes of little-endian float32 (numpy.frombuffer(b, "<f4"))."""
        return self.client.call("trace", session=self.id, text=text, tokens=tokens, topk=topk,
                                memory=True if memory else None)

    def snapshot(self):
        """The session's state as bytes (restore with Client.restore)."""
        return self.client.call("snapshot", session=self.id)["state"]

    def close(self):
        return self.client.call("close", session=self.id)
