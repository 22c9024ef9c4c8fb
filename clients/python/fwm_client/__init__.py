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
"""
import os
import socket

import msgpack

__all__ = ["Client", "Session", "FwmError", "DEFAULT_ADDRESS"]

DEFAULT_ADDRESS = "tcp://127.0.0.1:7411"


class FwmError(Exception):
    """An error answered by the server (`code`, `name`, `message`, and `word` for unknown_word),
    or a client-side failure (name "io", "protocol", "bad_response")."""

    def __init__(self, name, message, code=None, word=None):
        super().__init__("%s: %s" % (name, message))
        self.name = name
        self.message = message
        self.code = code
        self.word = word


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


class Client:
    """One connection to fwm-serve. `timeout` (seconds) bounds every wait for bytes."""

    def __init__(self, address=DEFAULT_ADDRESS, timeout=30.0, token=None):
        """`token`: the server's authentication token (fwm-serve --auth-token-file), presented once
        with `hello` before anything else; default: the FWM_AUTH_TOKEN environment variable, if set."""
        self.address = address
        self._sock = _connect(address, timeout)
        self._unpacker = msgpack.Unpacker(raw=False, max_buffer_size=64 << 20)
        self._next_id = 1
        token = token if token is not None else os.environ.get("FWM_AUTH_TOKEN")
        if token:
            self.call("hello", token=token)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self._sock:
            self._sock.close()
            self._sock = None

    # -- the wire --
    def _read(self):
        while True:
            for message in self._unpacker:
                return message
            try:
                data = self._sock.recv(1 << 16)
            except socket.timeout:
                raise FwmError("timeout", "no answer from the server") from None
            if not data:
                raise FwmError("io", "the server closed the connection")
            self._unpacker.feed(data)

    def call_stream(self, method, **params):
        """Send one request; yield each `token` notification's params, then return the result
        (as the generator's return value; `call` is the usual way)."""
        if self._sock is None:
            raise FwmError("io", "the connection is closed")
        msgid = self._next_id
        self._next_id += 1
        params = {k: v for k, v in params.items() if v is not None}
        self._sock.sendall(msgpack.packb([0, msgid, method, [params]], use_bin_type=True))
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
                               error.get("word"))
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
        """Every session on the server (stored ones too, with --data-dir), in id order, fetched `page`
        at a time: dicts with session, model, pos, last_used_ms, resident."""
        after = None
        while True:
            reply = self.call("sessions", after=after, limit=page)
            for item in reply["sessions"]:
                yield item
            after = reply["next"]
            if after is None:
                return


class Session:
    """A session on the server: its state (what it has read) persists between calls."""

    def __init__(self, client, session_id):
        self.client = client
        self.id = session_id

    def __repr__(self):
        return "Session(%s)" % self.id

    def feed(self, text=None, tokens=None, topk=None, on_token=None, notify=None):
        """Read text (or token ids); returns {session, pos, fed}."""
        if notify is None:
            notify = None if on_token else False
        return self.client.call("feed", on_token=on_token, session=self.id, text=text, tokens=tokens, topk=topk,
                                notify=notify)

    def stream(self, text=None, tokens=None, topk=None):
        """Read text, yielding each token's event {pos, token, word, topk: [[word, prob], ...]}."""
        result = yield from self.client.call_stream("feed", session=self.id, text=text, tokens=tokens, topk=topk)
        return result

    def ask(self, question, commit=False, topk=None):
        """Closed-book question answering over what the session has read: {answer, prob, topk, pos}."""
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
