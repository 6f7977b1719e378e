"""A chunk store's files read from their documented format (docs/store.md,
"On disk"), independently of the C++ code, for the shell tests that damage
stores: the log's records ([u32 magic][u32 length][u32 crc][JSON]) and a
byte flipped in a file."""
import json
import struct


def crc32c(data):
    """CRC-32C (Castagnoli), as common/crc32c.h computes it."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def records(store):
    """[(byte offset, record JSON)] of every record of STORE/log, in order."""
    log = open(f"{store}/log", "rb").read()
    out, p = [], 0
    while p + 12 <= len(log):
        _, n, _ = struct.unpack("<III", log[p:p + 12])
        out.append((p, json.loads(log[p + 12:p + 12 + n])))
        p += 12 + n
    return out


def chunk_offset(record, chunk_id, layer):
    """Where (chunk_id, layer) of a commit record lies in chunks.dat."""
    return next(c["off"] for c in record["chunks"] if c["id"] == chunk_id and c["layer"] == layer)


def flip(path, at):
    """XORs the byte at offset `at` of `path` with 0x5a."""
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x5a]))
