"""The HTTP/2 half of the nginx differential test (tests/differential_nginx.rs): the same
frames go to a server, case by case, each on a new connection, and what it made of each
stream is printed as tokens, one line per case: `NAME<TAB>TOKENS`.

    h2.py PORT TLS CAFILE

A stream's token is what the server answered on it: the fixture file's name for a 200
whose body is one (`hello`, `digits`), `404`, `3xx`, `ok` (another 2xx), `rej` (another
4xx or 5xx, or the stream reset with PROTOCOL_ERROR: RFC 9113 §8.1.1 lets a server
refuse a malformed request either way), `rst:CODE` (another reset), or `-` (nothing by
the end: 2 s of silence). Then `goaway:CODE` if the server ended the connection with an error, and
`closed` if it closed without a GOAWAY. Run with Debian's /usr/bin/python3 (python3-hpack).
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "h2"))
from client import (  # noqa: E402
    CONTINUATION, DATA, END_HEADERS, END_STREAM, GOAWAY, HEADERS, RST, Client, frame)

import hpack  # noqa: E402

HELLO = b"hello, spidey\n"
NAMED = {HELLO: "hello", b"0123456789": "digits"}


def fields(path="/hello.txt", method="GET", extra=(), scheme=None, drop=()):
    """A request's field block: the four pseudo-fields (less `drop`), then `extra`."""
    pseudo = [(":method", method), (":scheme", scheme), (":authority", "localhost"), (":path", path)]
    return [(n, v) for n, v in pseudo if n not in drop] + list(extra)


def cases(scheme):
    """(name, [(stream id, field list, body chunks or None, trailers or None)]), or a
    name with raw frames (`bytes`) for what a field list cannot say."""
    f = lambda **kw: fields(scheme=scheme, **kw)  # noqa: E731
    post = lambda cl, body, **kw: (1, f(method="POST", extra=[("content-length", cl)], **kw), [body], None)  # noqa: E731
    return [
        ("get", [(1, f(), None, None)]),
        ("missing", [(1, f(path="/nope.txt"), None, None)]),
        ("head", [(1, f(method="HEAD"), None, None)]),
        ("two streams", [(1, f(), None, None), (3, f(path="/digits.txt"), None, None)]),
        ("range", [(1, f(path="/digits.txt", extra=[("range", "bytes=2-4")]), None, None)]),
        ("query", [(1, f(path="/hello.txt?a=1&b=%20"), None, None)]),
        ("cookies split", [(1, f(extra=[("cookie", "a=1"), ("cookie", "b=2")]), None, None)]),
        ("te trailers", [(1, f(extra=[("te", "trailers")]), None, None)]),
        ("te gzip", [(1, f(extra=[("te", "gzip")]), None, None)]),
        ("connection field", [(1, f(extra=[("connection", "keep-alive")]), None, None)]),
        ("keep-alive field", [(1, f(extra=[("keep-alive", "timeout=5")]), None, None)]),
        ("transfer-encoding field", [(1, f(extra=[("transfer-encoding", "chunked")]), None, None)]),
        ("upgrade field", [(1, f(extra=[("upgrade", "h2c")]), None, None)]),
        ("uppercase name", [(1, f(extra=[("X-Upper", "1")]), None, None)]),
        ("name with a space", [(1, f(extra=[("x a", "1")]), None, None)]),
        ("name with a colon", [(1, f(extra=[("x:a", "1")]), None, None)]),
        ("value with CR LF", [(1, f(extra=[("x-a", "1\r\nx-b: 2")]), None, None)]),
        ("value with NUL", [(1, f(extra=[("x-a", "1\x002")]), None, None)]),
        ("no :path", [(1, f(drop=(":path",)), None, None)]),
        ("empty :path", [(1, f(path=""), None, None)]),
        ("relative :path", [(1, f(path="hello.txt"), None, None)]),
        ("no :method", [(1, f(drop=(":method",)), None, None)]),
        ("no :scheme", [(1, f(drop=(":scheme",)), None, None)]),
        ("no :authority, a host", [(1, f(drop=(":authority",), extra=[("host", "localhost")]), None, None)]),
        ("no :authority, no host", [(1, f(drop=(":authority",)), None, None)]),
        ("duplicate :path", [(1, f(extra=[(":path", "/digits.txt")]), None, None)]),
        ("unknown pseudo-field", [(1, f(extra=[(":foo", "bar")]), None, None)]),
        ("response pseudo-field", [(1, f(extra=[(":status", "200")]), None, None)]),
        ("pseudo-field after a field", [(1, [(":method", "GET"), (":scheme", scheme), ("x-a", "1"),
                                             (":authority", "localhost"), (":path", "/hello.txt")], None, None)]),
        ("lowercase method", [(1, f(method="get"), None, None)]),
        ("dot-dot", [(1, f(path="/../hello.txt"), None, None)]),
        ("encoded dot-dot", [(1, f(path="/%2e%2e/hello.txt"), None, None)]),
        ("encoded NUL", [(1, f(path="/hello.txt%00"), None, None)]),
        ("space in :path", [(1, f(path="/hello .txt"), None, None)]),
        ("OPTIONS *", [(1, f(method="OPTIONS", path="*"), None, None)]),
        ("POST, length agrees", [post("3", b"abc")]),
        ("POST, body longer than its length", [post("2", b"abc")]),
        ("POST, body shorter than its length", [post("5", b"abc")]),
        ("POST with trailers", [(1, f(method="POST"), [b"abc"], [("x-t", "1")])]),
        ("trailers with a pseudo-field", [(1, f(method="POST"), [b"abc"], [(":path", "/digits.txt")])]),
        ("even stream id", [(2, f(), None, None)]),
        ("stream ids going down", [(5, f(), None, None), (3, f(path="/digits.txt"), None, None)]),
        ("DATA on an idle stream", frame(DATA, END_STREAM, 1, b"abc")),
        ("CONTINUATION without HEADERS", frame(CONTINUATION, END_HEADERS, 1, b"")),
        ("RST_STREAM on an idle stream", frame(RST, 0, 1, b"\0\0\0\x08")),
    ]


def send(c, enc, streams):
    out = b""
    for stream, block, body, trailers in streams:
        end = END_STREAM if body is None and trailers is None else 0
        out += frame(HEADERS, END_HEADERS | end, stream, enc.encode(block))
        for i, chunk in enumerate(body or []):
            last = i == len(body) - 1 and trailers is None
            out += frame(DATA, END_STREAM if last else 0, stream, chunk)
        if trailers is not None:
            out += frame(HEADERS, END_HEADERS | END_STREAM, stream, enc.encode(trailers))
    c.send(out)
    return [s[0] for s in streams]


def outcome(c, ids):
    dec = hpack.Decoder()
    status, body, done, ending = {}, {}, {}, []
    for f in c.frames(time.monotonic() + 10):
        if f is None:
            ending.append("closed")
            break
        kind, flags, stream, payload = f
        if kind == GOAWAY:
            code = int.from_bytes(payload[4:8], "big")
            if code:
                ending.append("goaway:%d" % code)
            break
        if kind == RST and stream in ids:
            code = int.from_bytes(payload[:4], "big")
            done[stream] = "rej" if code == 1 else "rst:%d" % code
        if kind == HEADERS:
            block = dict(dec.decode(payload))
            status.setdefault(stream, int(block.get(":status", 0)))
        if kind == DATA:
            body[stream] = body.get(stream, b"") + payload
        if kind in (HEADERS, DATA) and flags & END_STREAM and stream in ids:
            done[stream] = token(status.get(stream, 0), body.get(stream, b""))
        if all(i in done for i in ids):
            break
    return " ".join([done.get(i, "-") for i in ids] + ending)


def token(status, body):
    if status == 200:
        return NAMED.get(body, "ok")
    if status == 404:
        return "404"
    if 300 <= status < 400:
        return "3xx"
    if 200 <= status < 300:
        return "ok"
    return "rej"


def main():
    port, tls, ca = int(sys.argv[1]), sys.argv[2] == "1", sys.argv[3]
    for name, what in cases("https" if tls else "http"):
        c = Client(port, tls, ca)
        c.s.settimeout(2)  # a server that ignores a frame: its silence, after 2 s
        if isinstance(what, bytes):
            c.send(what)
            ids = [1]
        else:
            ids = send(c, hpack.Encoder(), what)
        print("%s\t%s" % (name, outcome(c, ids)), flush=True)
        c.s.close()


main()
