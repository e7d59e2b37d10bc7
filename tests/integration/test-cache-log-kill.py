#!/usr/bin/python3
"""kill -9 at chosen points of cache=log's log, then a restart: every
acknowledged write reads back (issue 25, the fault-point harness).

An md RAID 1 x2 (nbdraid create) with cache=log and a small cache.  The
fault injector stops nbdkit at one point of the log's I/O (fault=log:...,
latency=3600s, error=none: the I/O waits an hour, and says so in the
error log at its first hit); the test waits for that line, then kill -9:
  * before the Nth record write (N = 1, 2, 9, 40: the first record of a
    run, the next ones, and where write-back and retire have run);
  * before the Kth header write of the run (K = 1, 2: the write-back
    thread's retires);
  * before a sync of the log (a FUA write's, or a FLUSH's), the Mth.
One connection writes 4K blocks at random places, one at a time (every
4th with FUA, a FLUSH after every 7th); the write in flight at the stop
is not acknowledged.  After the kill nbdkit starts again without the
fault and replays the log: every acknowledged write (flushed or not: kill
-9 keeps the page cache, and a write is acknowledged only after its
record was written) reads back exactly, the one in flight reads as
before or after it, and every other block as it was.  Rounds follow
each other over the same members and log, so the later ones start from
a replay.  $NBDRAID_SEED replays a run.
"""

import os
import random
import sys
import time

import nbd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    MiB, TempDir, check, fail, make_members, run_main, seed)
from raidtest.mdarray import create  # noqa: E402
from raidtest.server import Server  # noqa: E402

BLK = 4096
LOG = 8 * MiB
AREA = 8192                  # the record area starts here
REC = 2 * BLK                # a 4K write's record: header block and data
STOP = "latency=3600s,error=none,count=1"

POINTS = [
    ("record 1", "range=%d+%d" % (AREA, LOG - AREA)),
    ("record 2", "range=%d+%d,after=%d" % (AREA, LOG - AREA, REC)),
    ("record 9", "range=%d+%d,after=%d" % (AREA, LOG - AREA, 8 * REC)),
    ("record 40", "range=%d+%d,after=%d" % (AREA, LOG - AREA, 39 * REC)),
    ("header 1", "range=0+%d" % AREA),
    ("header 2", "range=0+%d,after=%d" % (AREA, BLK)),
    # A sync: a rule with no range sees writes (their bytes counted by
    # after=) and syncs; the record writes here are 8K, so past 20 records
    # the next I/O is a record write, a header write or a sync; the
    # trigger file, made once a FUA write or FLUSH is sent, narrows it.
    ("sync", "after=%d,trigger=TRIGGER" % (20 * REC)),
]


def wait_hit(srv, h, cookie, deadline):
    """Poll h until the log's fault says it hit (True) or the write in
    flight completes (False)."""
    while time.monotonic() < deadline:
        if "fault 'log:" in srv.stderr():
            return True
        h.poll(10)
        if h.aio_command_completed(cookie):
            return False
    fail("no stop within the time:\n%s" % srv.stderr())


def one_round(rng, name, rule, params, blocks, model, trigger):
    rule = rule.replace("TRIGGER", trigger)
    if os.path.exists(trigger):
        os.unlink(trigger)
    fault = "fault=log:ops=write,%s,%s" % (rule, STOP)
    inflight = None
    acked = 0
    with Server(params + [fault]) as srv:
        h = srv.connect()
        deadline = time.monotonic() + 60
        i = 0
        while True:
            b = rng.choice(blocks)
            data = rng.randbytes(BLK)
            fua = i % 4 == 3
            if fua and name == "sync":
                open(trigger, "w").close()
            cookie = h.aio_pwrite(nbd.Buffer.from_bytearray(data), b * BLK,
                                  flags=nbd.CMD_FLAG_FUA if fua else 0)
            if wait_hit(srv, h, cookie, deadline):
                inflight = (b, data)
                break
            model[b] = data
            acked += 1
            i += 1
            if i % 7 == 0:
                if name == "sync":
                    open(trigger, "w").close()
                cookie = h.aio_flush()
                if wait_hit(srv, h, cookie, deadline):
                    break
            time.sleep(0.002 if name.startswith("header") else 0)
        hit = [ln for ln in srv.stderr().splitlines() if "fault 'log:" in ln]
        srv.kill9()
    with Server(params) as srv:
        h = srv.connect()
        bad = []
        for b in blocks:
            got = h.pread(BLK, b * BLK)
            ok = got == model[b]
            if not ok and inflight and b == inflight[0]:
                ok = got == inflight[1]
                if ok:
                    model[b] = got      # it landed: the new baseline
            if not ok:
                bad.append(b)
        check(not bad, "%s: %d blocks lost an acknowledged write after kill "
              "-9 and replay (first: block %d)\n%s" % (
                  name, len(bad), bad[0] if bad else 0, srv.stderr()))
        replayed = "cache: replayed" in srv.stderr()
        srv.stop()
    print("ok %s: %d writes acknowledged, killed at: %s; replayed: %s" % (
        name, acked, hit[0].split("fault ")[-1] if hit else "?", replayed))


def main():
    rng = random.Random(seed("test-cache-log-kill"))
    with TempDir(prefix="nbdraid-clog-kill-") as d:
        paths = make_members(d, [16 * MiB] * 2)
        create(paths, 1, name="kill")
        log = os.path.join(d, "log")
        with open(log, "wb") as f:
            f.truncate(LOG)
        params = ["member=" + p for p in paths] + [
            "cache=log", "cache-log=" + log, "cache-size=2M",
            "cache-readahead=0"]
        with Server(params) as srv:
            size = srv.connect().get_size()
            srv.stop()
        blocks = rng.sample(range(size // BLK), 64)
        model = {b: bytes(BLK) for b in blocks}
        trigger = os.path.join(d, "arm")
        for name, rule in POINTS:
            one_round(rng, name, rule, params, blocks, model, trigger)
    print("PASS")


run_main(main)
