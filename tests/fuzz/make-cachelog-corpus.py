#!/usr/bin/python3
"""make-cachelog-corpus.py: the seed corpus of tests/fuzz/fuzz_cachelog.c.

Each seed is the first bytes of a 1 MiB cache log (the target pads with
zeros), written from docs/cache.md's tables ("The log format"):

  empty          both header slots as a format leaves them, no record
  records        slot 1 newer, its checkpoint at 8192: a 4K write, a zero,
                 a 10000-byte write, a trim, chained by seq/prev
  torn           the same, the last record's data damaged
  stale-after    the chain, then an intact record that names another prev
  other-slot     the newer slot torn: the older (empty) one is used
  seq-limit-max  seq_limit near 2^64 in the newer slot (refused)
  gen-wrapped    a generation near 2^64 (refused)

Run it again after changing the list; the files are committed.  Beside
them, crash-* are inputs the fuzzer once failed on, kept as it wrote them
(fixed in src/, each with its unit test):

  crash-generation-at-bound  a header at generation 2^62 opened, and the
                             open's own header write made generation
                             2^62 + 1, which no open reads: the log was
                             unreadable after one start (now no header is
                             written past 2^62: test_cache_log.c
                             generation_edge)
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "cachelog")
BLOCK = 4096
LOG_BYTES = 1 << 20
ARRAY_UUID = bytes(range(0x10, 0x20))
LOG_UUID = bytes(range(0x40, 0x50))
ARRAY_SIZE = 64 << 20


def crc32c(data, crc=0xFFFFFFFF):
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc


def crc_final(h, data=b""):
    return crc32c(data, crc32c(h)) ^ 0xFFFFFFFF


def header(gen, tail, tail_prev, seq_limit):
    h = bytearray(128)
    struct.pack_into("<IIII", h, 0, 0x474C524E, 0, 1, BLOCK)
    h[16:32] = ARRAY_UUID
    h[32:48] = LOG_UUID
    struct.pack_into("<QQQQQQQQ", h, 48, ARRAY_SIZE, LOG_BYTES, gen, tail,
                     tail_prev, seq_limit, 1700000000,
                     (1700000001 + gen) % 2**64)
    struct.pack_into("<I", h, 4, crc_final(bytes(h)))
    return bytes(h) + bytes(BLOCK - 128)


def record(typ, seq, prev, pos, offset=0, data=b"", length=None):
    length = len(data) if length is None else length
    h = bytearray(128)
    struct.pack_into("<IIIIQQQQ", h, 0, 0x4345524E, 0, typ, length, seq,
                     prev, pos, offset)
    h[48:64] = LOG_UUID
    struct.pack_into("<I", h, 4, crc_final(bytes(h), data))
    return bytes(h) + bytes(BLOCK - 128) + data + bytes((-len(data)) % BLOCK)


def image(slots, recs):
    b = bytearray(slots[0] + slots[1])
    for pos, r in recs:
        if len(b) < pos + len(r):
            b += bytes(pos + len(r) - len(b))
        b[pos:pos + len(r)] = r
    return bytes(b)


def chain():
    recs, pos, prev = [], 8192, 41
    w1, w2 = bytes([0x5A]) * 4096, bytes(range(256)) * 39 + bytes(16)
    for typ, off, data, n in ((1, 8192, w1, None), (2, 1 << 20, b"", 65536),
                              (1, 3 << 20, w2, None), (3, 0, b"", 4096)):
        r = record(typ, prev + 1, prev, pos, off, data, n)
        recs.append((pos, r))
        pos += len(r)
        prev += 1
    return recs, pos, prev


def main():
    os.makedirs(OUT, exist_ok=True)
    empty = [header(0, 8192, 0, 1), header(1, 8192, 0, 1)]
    newer = [header(0, 8192, 0, 1), header(1, 8192, 41, 100)]
    recs, pos, prev = chain()
    seeds = {"empty": image(empty, []), "records": image(newer, recs)}
    torn = list(recs)
    p, r = torn[-2]
    torn[-2] = (p, r[:BLOCK + 100] + b"\xff" + r[BLOCK + 101:])
    seeds["torn"] = image(newer, torn)
    seeds["stale-after"] = image(newer, recs + [
        (pos, record(3, prev + 2, prev + 5, pos, 0, b"", 4096))])
    bad = bytearray(newer[1])
    bad[72] ^= 1
    seeds["other-slot"] = image([empty[0], bytes(bad)], recs)
    seeds["seq-limit-max"] = image(
        [empty[0], header(1, 8192, 41, 2**64 - 5)], recs)
    seeds["gen-wrapped"] = image(
        [header(2**64 - 2, 8192, 41, 100), empty[1]], recs)
    for name, b in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(b)


main()
