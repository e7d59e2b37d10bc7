#!/usr/bin/python3
"""cache=log (docs/cache.md) survives kill -9 of nbdkit: what was flushed
or written with FUA before the kill reads back exact after the restart.

An md RAID 5 x4 (nbdraid create) over member files on tmpfs, the log on
tmpfs too (a few MiB: it fills, writers wait for write-back and retire),
a small cache (write-back runs all the time).  Each round:
  * start nbdkit with cache=log: it replays the log onto the members;
  * read the whole array: every 4K block must hold the value guaranteed
    before the last kill (its last write acknowledged with FUA, or before
    an acknowledged flush), or one of the values written to it since
    (acknowledged or only sent), never anything else (each write's blocks
    carry its number and their own, repeated: a torn block is no value);
  * 4 connections write (FUA one time in 6), zero, read (their own
    blocks, exact) and flush, each in its own blocks, for a random while;
  * kill -9 in the middle of it.
From the middle round on, when this runs as root, the log is the same
file as a block device (losetup): the battery-backed card's log as a
device, its records read through it from then on.
Every third round nbdkit is also killed 3 times while it starts, at a
random moment of the time the last start took, much of it replay (a kill
there leaves the log's records in place: the next start replays them
again), then started again.  After the first kill, starts that must be
refused, each saying why: the log in a member's file, the log of
another array, cache=log over a raw array, and cache=ram naming the log
while it holds records.  After the last round a clean stop (SIGTERM,
once the resync md owes after a crash has run): `nbdraid check` finds no
stripe whose parity is wrong, the log is empty (`nbdraid examine-log`:
clean), and a start replays nothing.

$NBDRAID_SEED replays a run; $NBDRAID_ROUNDS sets the number of rounds.
"""

import json
import os
import random
import signal
import struct
import subprocess
import sys
import threading
import time

import nbd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    KiB, MiB, TempDir, check, fail, make_members, plugin, run_main, seed)
from raidtest.mdarray import Control, cli, create, run  # noqa: E402
from raidtest.server import Server, run_expect_failure  # noqa: E402

BLK = 4096
CONNS = 4
SLICE = 64 * KiB          # writes stay in one slice; slice s is conn s % 4
MAX_BLOCKS = 16
MEMBER = 5 * MiB
LOG = 3 * MiB


def block(wid, b):
    """Write wid's content for block b (0: zeros)."""
    if wid == 0:
        return bytes(BLK)
    return struct.pack("<QQ", wid, b) * (BLK // 16)


def block_id(data, b):
    """The write whose content data is (0: zeros), or None."""
    if data == bytes(BLK):
        return 0
    wid, at = struct.unpack_from("<QQ", data)
    if at != b or data != block(wid, b):
        return None
    return wid


class Model:
    """Per block: the write guaranteed (g), the newest acknowledged (cur),
    and the writes sent since g (any may have landed)."""

    def __init__(self, nblocks):
        self.g = [0] * nblocks
        self.cur = [0] * nblocks
        self.since = [set() for _ in range(nblocks)]
        self.lock = threading.Lock()
        self.next_id = 1

    def new_id(self):
        with self.lock:
            self.next_id += 1
            return self.next_id - 1

    def sent(self, b0, n, wid):
        for b in range(b0, b0 + n):
            self.since[b].add(wid)

    def acked(self, b0, n, wid, durable):
        for b in range(b0, b0 + n):
            self.cur[b] = wid
            if durable:
                self.g[b] = wid
                self.since[b] = set()

    def flushed(self, blocks):
        for b in blocks:
            self.g[b] = self.cur[b]
            self.since[b] = set()

    def check_and_rebase(self, data, label):
        bad = []
        for b in range(len(self.g)):
            got = block_id(data[b * BLK:(b + 1) * BLK], b)
            if got is None or (got != self.g[b] and got not in self.since[b]):
                bad.append((b, got))
                continue
            self.g[b] = self.cur[b] = got
            self.since[b] = set()
        if bad:
            b, got = bad[0]
            fail("%s: %d blocks hold neither their guaranteed write nor one "
                 "sent since; first: block %d holds %s, guaranteed %d, "
                 "sent since %s" % (label, len(bad), b,
                                    "garbage" if got is None else got,
                                    self.g[b], sorted(self.since[b])[:8]))


def read_all(h, size):
    out = bytearray()
    for off in range(0, size, MiB):
        out += h.pread(min(MiB, size - off), off)
    return out


def conn_main(i, h, model, rng, stop, counts):
    """Connection i: its slices only, until stop is set (or the server
    dies: then it returns)."""
    nblocks = len(model.g)
    per = SLICE // BLK
    slices = [s for s in range(nblocks // per) if s % CONNS == i]
    mine = [b for s in slices for b in range(s * per, (s + 1) * per)]
    try:
        while not stop.is_set():
            s = rng.choice(slices)
            n = rng.randint(1, MAX_BLOCKS)
            b0 = s * per + rng.randint(0, per - n)
            op = rng.randrange(20)
            if op < 12:
                fua = op < 2
                wid = model.new_id()
                data = b"".join(block(wid, b) for b in range(b0, b0 + n))
                model.sent(b0, n, wid)
                h.pwrite(data, b0 * BLK,
                         flags=nbd.CMD_FLAG_FUA if fua else 0)
                model.acked(b0, n, wid, fua)
                counts["fua" if fua else "write"] += 1
            elif op < 13:
                model.sent(b0, n, 0)
                h.zero(n * BLK, b0 * BLK)
                model.acked(b0, n, 0, False)
                counts["zero"] += 1
            elif op < 17:
                data = h.pread(n * BLK, b0 * BLK)
                for b in range(b0, b0 + n):
                    got = block_id(data[(b - b0) * BLK:(b - b0 + 1) * BLK],
                                   b)
                    check(got == model.cur[b], "connection %d: block %d "
                          "reads as write %s, want %d" % (
                              i, b, got, model.cur[b]))
                counts["read"] += 1
            else:
                h.flush()
                model.flushed(mine)
                counts["flush"] += 1
    except nbd.Error:
        if not stop.is_set():
            raise


def start(params, took=None):
    """nbdkit serving params; took[0]: how long it took to start."""
    t = time.monotonic()
    srv = Server(params, timeout=30)
    if took is not None:
        took[0] = time.monotonic() - t
    return srv


def quick_kills(rng, params, log, took, counts):
    """Start nbdkit and kill -9 it before it serves: at a random moment of
    the time the last start took (much of it replay)."""
    for _ in range(3):
        srv = Server(params, start=False)
        err = open(srv.errfile, "wb")
        srv.proc = subprocess.Popen(srv.argv(), stdin=subprocess.DEVNULL,
                                    stdout=err, stderr=err)
        err.close()
        time.sleep(rng.uniform(0, took[0]))
        srv.kill9()
        srv.__exit__(None, None, None)
        out = run([cli(), "examine-log", log]).stdout
        counts["kills at start"] += 1
        if "Records : none" not in out:
            counts["kills before retire"] += 1


def refusals(d, params, paths, log, has_records):
    """Starts that must be refused, each naming why."""
    other = make_members(d, [MEMBER] * 3, prefix="o")
    create(other, 5, chunk=64 * KiB, name="other")
    cases = [
        ([p for p in params if not p.startswith("cache-log=")] +
         ["cache-log=" + paths[1]], "shares bytes with a member", paths[1]),
        (["member=" + p for p in other] + ["cache=log", "cache-log=" + log],
         "the cache log of another array", log),
        (["level=5", "metadata=none", "chunk=64K"] +
         ["member=" + p for p in other] + ["cache=log", "cache-log=" + log],
         "cache=log needs md superblocks", ""),
    ]
    if has_records:
        cases.append(([p for p in params if not p.startswith("cache")] +
                      ["cache=ram", "cache-log=" + log],
                      "holds writes this array has not written", log))
    for ps, why, path in cases:
        rc, err = run_expect_failure(ps)
        check(rc != 0 and why in err and path in err,
              "start with %s: want a refusal saying '%s' (and %s), got "
              "%d:\n%s" % (" ".join(ps), why, path, rc, err))
    for p in other:
        os.unlink(p)
    return len(cases)


def attach_loop(path):
    """path as a block device (losetup), or None where that cannot be (not
    root, no loop devices)."""
    if os.geteuid() != 0:
        return None
    try:
        r = subprocess.run(["losetup", "-f", "--show", path],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    dev = r.stdout.strip()
    return dev if r.returncode == 0 and dev.startswith("/dev/") else None


def main():
    loops = []
    try:
        crash_test(loops)
    finally:
        for dev in loops:
            subprocess.run(["losetup", "-d", dev], capture_output=True)


def crash_test(loops):
    rng = random.Random(seed("test-cache-crash"))
    plugin()
    rounds = int(os.environ.get("NBDRAID_ROUNDS", "20"))
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    with TempDir(base=base) as d:
        paths = make_members(d, [MEMBER] * 4)
        create(paths, 5, chunk=64 * KiB, name="crash")
        log = os.path.join(d, "log")
        with open(log, "wb") as f:
            f.truncate(LOG)
        ctl = os.path.join(d, "ctl")
        params = ["member=" + p for p in paths] + [
            "cache=log", "cache-log=" + log, "cache-size=2M",
            "cache-hold=50"]
        with start(params) as srv:
            size = srv.connect().get_size()
            srv.stop()
        model = Model(size // BLK)
        counts = {k: 0 for k in ("write", "fua", "zero", "read", "flush",
                                 "kills at start", "kills before retire",
                                 "replayed", "refused")}
        t0 = time.monotonic()
        took = [0.05]
        for rnd in range(rounds):
            if rnd == rounds // 2:
                dev = attach_loop(log)
                if dev:
                    loops.append(dev)
                    log = dev
                    params = [p for p in params
                              if not p.startswith("cache-log=")] + [
                                  "cache-log=" + dev]
                    counts["log on a block device"] = rounds - rnd
            if rnd % 3 == 2:
                quick_kills(rng, params, log, took, counts)
            with start(params, took) as srv:
                if "cache: replayed" in srv.stderr():
                    counts["replayed"] += 1
                h = srv.connect()
                model.check_and_rebase(read_all(h, size),
                                       "round %d, after the restart" % rnd)
                stop = threading.Event()
                errors = []
                hs = [srv.connect() for _ in range(CONNS)]
                rngs = [random.Random(rng.random()) for _ in range(CONNS)]

                def body(i):
                    try:
                        conn_main(i, hs[i], model, rngs[i], stop, counts)
                    except BaseException as e:
                        errors.append("connection %d: %s" % (i, e))
                threads = [threading.Thread(target=body, args=(i,))
                           for i in range(CONNS)]
                for th in threads:
                    th.start()
                time.sleep(rng.uniform(0.2, 1.5))
                stop.set()
                srv.kill9()
                for th in threads:
                    th.join()
                if errors:
                    fail("round %d: %s\nstderr:\n%s" % (
                        rnd, "; ".join(errors), srv.stderr()))
            if rnd == 0:
                out = run([cli(), "examine-log", log]).stdout
                counts["refused"] = refusals(d, params, paths, log,
                                             "Records : none" not in out)
        # The last restart, then a clean stop once the resync ran.
        with start(params + ["control=" + ctl]) as srv:
            h = srv.connect()
            model.check_and_rebase(read_all(h, size), "after the last kill")
            Control(ctl).wait_clean(timeout=30)
            rc = srv.stop()
            check(rc == 0, "nbdkit exited %d at SIGTERM" % rc)
        r = run([cli(), "check", "--json"] + paths)
        res = json.loads(r.stdout)
        check(res["mismatched"] == 0, "nbdraid check after the clean stop: "
              "%s" % r.stdout)
        out = run([cli(), "examine-log", log]).stdout
        check("clean" in out and "Records : none" in out,
              "the log is not empty after a clean stop:\n%s" % out)
        with start(params + ["control=" + ctl]) as srv:
            st = Control(ctl).status()["cache"]
            check(st["mode"] == "log" and st["log"]["replayed"] == 0 and
                  st["log"]["used_bytes"] == 0,
                  "after a clean stop, a start finds records: %s" % st)
            model.check_and_rebase(read_all(srv.connect(), size),
                                   "after the clean stop")
            srv.stop()
        print("ok %d rounds in %.1fs: %s" % (
            rounds, time.monotonic() - t0,
            " ".join("%s=%d" % kv for kv in sorted(counts.items()))),
            flush=True)


run_main(main)
