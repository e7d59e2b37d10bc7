#!/usr/bin/env python3
"""Test: the cache log format in docs/cache.md is the one nbdraid reads.

A log is written here in Python from the doc's tables alone (header slots,
record headers, CRC-32C, the chain of seq/prev/position, a skip record at
the end of the area), with the checkpoint near the end of the area so the
chain wraps, then a torn record and an intact stale one after it.
`nbdraid examine-log --json` must find exactly the records before the
torn one, and the header fields as written; a damaged newer header slot
falls back to the older one; a log with no records says clean.
"""

import json
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import KiB, MiB, TempDir, check, run_main  # noqa: E402
from raidtest.mdarray import cli  # noqa: E402

BLOCK = 4096
LOG_BYTES = 2 * MiB
AREA = 2 * BLOCK
ARRAY_UUID = bytes(range(0x10, 0x20))
LOG_UUID = bytes(range(0x40, 0x50))
ARRAY_SIZE = 64 * MiB
WRITE, ZERO, TRIM, SKIP = 1, 2, 3, 4


def crc32c(data, crc=0xFFFFFFFF):
    """CRC-32C, reflected polynomial 0x82f63b78 (the doc's checksum)."""
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc


def crc_final(header128, data=b""):
    return crc32c(data, crc32c(header128)) ^ 0xFFFFFFFF


def header(gen, tail, tail_prev, seq_limit):
    """A header slot's block, from the table 'The header'."""
    h = bytearray(128)
    struct.pack_into("<III", h, 0, 0x474C524E, 0, 1)
    struct.pack_into("<I", h, 12, BLOCK)
    h[16:32] = ARRAY_UUID
    h[32:48] = LOG_UUID
    struct.pack_into("<QQQQQQQQ", h, 48, ARRAY_SIZE, LOG_BYTES, gen, tail,
                     tail_prev, seq_limit, 1700000000, 1700000001 + gen)
    struct.pack_into("<I", h, 4, crc_final(bytes(h)))
    return bytes(h) + bytes(BLOCK - 128)


def record(typ, seq, prev, pos, offset=0, data=b"", length=None):
    """A record: its header block, then data padded to 4096."""
    length = len(data) if length is None else length
    h = bytearray(128)
    struct.pack_into("<IIIIQQQQ", h, 0, 0x4345524E, 0, typ, length, seq,
                     prev, pos, offset)
    h[48:64] = LOG_UUID
    struct.pack_into("<I", h, 4, crc_final(bytes(h), data))
    pad = (-len(data)) % BLOCK
    return bytes(h) + bytes(BLOCK - 128) + data + bytes(pad)


def examine(path, json_out=True):
    args = [cli(), "examine-log"] + (["--json"] if json_out else []) + [path]
    p = subprocess.run(args, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def main():
    # The CRC as the doc gives it.
    check(crc32c(b"123456789") ^ 0xFFFFFFFF == 0xE3069283, "crc32c check")
    with TempDir(prefix="nbdraid-clogfmt-") as d:
        path = os.path.join(d, "cache.log")
        tail = LOG_BYTES - 3 * BLOCK   # room for one 4K write, then a skip
        w1 = os.urandom(4096)
        w2 = os.urandom(10000)
        recs = []                      # (position, bytes)
        pos = tail
        recs.append((pos, record(WRITE, 42, 41, pos, 8 * KiB, w1)))
        pos += 2 * BLOCK
        recs.append((pos, record(SKIP, 43, 42, pos)))   # to the end
        pos = AREA
        recs.append((pos, record(ZERO, 44, 43, pos, 1 * MiB, length=MiB)))
        pos += BLOCK
        recs.append((pos, record(WRITE, 45, 44, pos, 3 * MiB + 5, w2)))
        pos += BLOCK + 12288
        torn = record(TRIM, 46, 45, pos, 0, length=BLOCK)
        torn = torn[:20] + b"\xff" + torn[21:]          # a byte wrong
        recs.append((pos, torn))
        pos += BLOCK
        # Intact and chained to the torn one: stale, never replayed.
        recs.append((pos, record(TRIM, 47, 46, pos, 0, length=BLOCK)))

        with open(path, "wb") as f:
            f.truncate(LOG_BYTES)
            f.write(header(0, AREA, 0, 1))        # slot 0: as formatted
            f.write(header(1, tail, 41, 100))     # slot 1: newer
            for p, b in recs:
                f.seek(p)
                f.write(b)

        rc, out, err = examine(path)
        check(rc == 0, "examine-log failed: %s" % err)
        info = json.loads(out)[0]
        want = {
            "version": 1, "array_size": ARRAY_SIZE, "log_bytes": LOG_BYTES,
            "generation": 1, "slot": 1, "other_slot_valid": True,
            "tail": tail, "tail_prev": 41, "seq_limit": 100,
            "records": 3, "first_lsn": 42, "last_lsn": 45,
            "record_bytes": 2 * BLOCK + BLOCK + BLOCK + BLOCK + 12288,
            "data_bytes": 4096 + 10000, "ctime": 1700000000,
            "utime": 1700000002,
        }
        for k, v in want.items():
            check(info[k] == v, "%s: %r, wrote %r" % (k, info[k], v))
        check(info["array_uuid"] == "10111213:14151617:18191a1b:1c1d1e1f",
              "array_uuid %s" % info["array_uuid"])
        rc, out, err = examine(path, json_out=False)
        check(rc == 0 and "dirty" in out and "Records : 3 (42 .. 45)" in out,
              "text: %s" % out)

        # The newer slot torn: the older one (empty log) is used.
        with open(path, "r+b") as f:
            f.seek(BLOCK + 72)
            f.write(b"\0" * 8)
        rc, out, err = examine(path)
        check(rc == 0, "examine-log failed: %s" % err)
        info = json.loads(out)[0]
        check(info["generation"] == 0 and info["slot"] == 0 and
              not info["other_slot_valid"] and info["records"] == 0 and
              info["tail"] == AREA, "fallback to slot 0: %r" % info)
        rc, out, err = examine(path, json_out=False)
        check(rc == 0 and "clean" in out, "text: %s" % out)

        # Both slots bad: refused, naming the path.
        with open(path, "r+b") as f:
            f.seek(100)
            f.write(b"\x01")
        rc, out, err = examine(path)
        check(rc == 1 and path in err and "damaged" in err,
              "both slots bad: rc %d, %s" % (rc, err))


run_main(main)
