#!/usr/bin/python3
"""A cache log whose header was crafted (or damaged with a good checksum)
is refused at start, at once, naming the log, the field and the reason,
and neither the log nor a member changes by a byte (issue 25 #12).

An md RAID 1 x2 (nbdraid create) with cache=log: writes, the last with
FUA, then kill -9, so that the log holds records.  Then, for each field of
the newer header slot (and the two slots disagreeing), a copy of that log
with the field set out of range and the slot's CRC-32C made good again:
  * nbdkit with cache=log over it exits non-zero within 20 s, its error
    naming the log's path and the field (before: a seq_limit near 2^64
    started, and the first FUA write then rewrote the header forever);
  * `nbdraid examine-log` refuses it too;
  * the log and the member files are unchanged (sha256).
Last, the untouched log starts the array and replays every write.
"""

import os
import shutil
import struct
import sys
import time

import nbd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    MiB, TempDir, check, file_state, make_members, run_main)
from raidtest.mdarray import cli, create, run  # noqa: E402
from raidtest.server import Server, run_expect_failure  # noqa: E402

BLOCK = 4096

# (field, offset in the 128-byte header, width, value, which slot:
#  "new" or "old")
CASES = [
    ("seq_limit", 88, 8, 2**64 - 5, "new"),
    ("seq_limit", 88, 8, 0, "new"),
    ("generation", 64, 8, 2**64 - 2, "new"),
    ("generation", 64, 8, 2**40 + 1, "old"),
    ("log_bytes", 56, 8, 2**63, "new"),
    ("log_bytes", 56, 8, 2 * MiB + 512, "new"),
    ("array_size", 48, 8, 0, "new"),
    ("tail", 72, 8, 4096, "new"),
    ("tail", 72, 8, 2**64 - 4096, "new"),
    ("tail_prev", 80, 8, 2**64 - 1, "new"),
    ("version", 8, 4, 7, "new"),
    ("block", 12, 4, 512, "new"),
    ("reserved", 112, 1, 1, "new"),
    ("log_uuid", 32, 1, 0xEE, "old"),
]


def crc32c(data, crc=0xFFFFFFFF):
    """CRC-32C, reflected polynomial 0x82f63b78 (docs/cache.md)."""
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc


def craft(path, slot, at, width, value):
    """Set a field of header slot `slot` and make its checksum good."""
    with open(path, "r+b") as f:
        f.seek(slot * BLOCK)
        h = bytearray(f.read(128))
        h[at:at + width] = value.to_bytes(width, "little")
        h[4:8] = bytes(4)
        struct.pack_into("<I", h, 4, crc32c(bytes(h)) ^ 0xFFFFFFFF)
        f.seek(slot * BLOCK)
        f.write(h)


def newer_slot(path):
    gens = []
    with open(path, "rb") as f:
        for slot in range(2):
            f.seek(slot * BLOCK + 64)
            gens.append(struct.unpack("<Q", f.read(8))[0])
    return 0 if gens[0] > gens[1] else 1


def main():
    with TempDir(prefix="nbdraid-clog-crafted-") as d:
        paths = make_members(d, [8 * MiB] * 2)
        create(paths, 1, name="crafted")
        log = os.path.join(d, "log")
        with open(log, "wb") as f:
            f.truncate(2 * MiB)
        params = ["member=" + p for p in paths] + [
            "cache=log", "cache-log=" + log]
        data = [os.urandom(BLOCK * (i + 1)) for i in range(4)]
        with Server(params) as srv:
            h = srv.connect()
            for i, b in enumerate(data):
                h.pwrite(b, i * MiB, flags=nbd.CMD_FLAG_FUA if i == 3 else 0)
            srv.kill9()
        good = os.path.join(d, "log.good")
        shutil.copyfile(log, good)
        new = newer_slot(good)
        members = [file_state(p) for p in paths]
        for field, at, width, value, which in CASES:
            shutil.copyfile(good, log)
            craft(log, new if which == "new" else 1 - new, at, width, value)
            before = file_state(log)
            t0 = time.monotonic()
            rc, err = run_expect_failure(params, timeout=20)
            took = time.monotonic() - t0
            check(rc != 0 and log in err and field in err,
                  "%s=%d: want a refusal naming %s and %s; exit %d:\n%s" % (
                      field, value, log, field, rc, err))
            r = run([cli(), "examine-log", log], ok=False)
            check(r.returncode != 0 and field in r.stderr,
                  "examine-log %s=%d: exit %d: %s%s" % (
                      field, value, r.returncode, r.stdout, r.stderr))
            check(file_state(log) == before,
                  "%s=%d: the log changed" % (field, value))
            check([file_state(p) for p in paths] == members,
                  "%s=%d: a member changed" % (field, value))
            print("ok %s=%d refused in %.2fs: %s" % (
                field, value, took, [ln for ln in err.splitlines()
                                     if field in ln][0].strip()))
        shutil.copyfile(good, log)
        with Server(params) as srv:
            h = srv.connect()
            for i, b in enumerate(data):
                check(h.pread(len(b), i * MiB) == b,
                      "write %d not replayed from the untouched log" % i)
            check("cache: replayed" in srv.stderr(), "no replay said")
    print("PASS")


run_main(main)
