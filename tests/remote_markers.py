#!/usr/bin/env python3
"""Rewrites the KV codec byte of chunk markers in a Redis Cluster, keeping
each value's frame valid (its CRC-32C recomputed), so that a reader sees a
whole, well-formed marker that names another codec: the case a reader must
refuse. Markers are imp:{KEY}:m = [CRC-32C, 4 bytes LE][parent key 16][tokens
4 each][codec 1] (docs/remote.md).

Usage: remote_markers.py FROM_CODEC TO_CODEC PORT... (codec bytes: 0 fp16,
1 int8, 2 int4). Prints how many markers it rewrote.
"""
import socket
import sys

from store_files import crc32c


class Resp:
    """A minimal binary-safe RESP client for one node."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.f = self.s.makefile("rb")

    def call(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.s.sendall(out)
        return self.reply()

    def reply(self):
        line = self.f.readline()[:-2]
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b":"):
            return rest
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.f.read(n + 2)[:-2]
        if kind == b"*":
            return [self.reply() for _ in range(int(rest))]
        raise RuntimeError("unexpected reply %r" % line)


def main():
    src, dst, ports = int(sys.argv[1]), int(sys.argv[2]), [int(p) for p in sys.argv[3:]]
    rewritten = 0
    for port in ports:
        node = Resp(port)
        cursor = b"0"
        while True:
            cursor, keys = node.call("SCAN", cursor, "MATCH", "imp:*:m", "COUNT", 1000)
            for key in keys:
                value = node.call("GET", key)
                if value is None or len(value) < 5:
                    continue
                body = value[4:]
                if int.from_bytes(value[:4], "little") != crc32c(body) or body[-1] != src:
                    continue
                body = body[:-1] + bytes([dst])
                node.call("SET", key, crc32c(body).to_bytes(4, "little") + body)
                rewritten += 1
            if cursor == b"0":
                break
    print(rewritten)


if __name__ == "__main__":
    main()
