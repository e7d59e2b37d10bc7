#!/usr/bin/python3
"""cache=log: when the log fails and the members fail too, no FLUSH says
yes until acknowledged data is on the members (issue 25 #19).

An md RAID 0 x2 (nbdraid create: no redundancy, so a member's failed
write fails the array's) with cache=log, and fault= rules armed by
trigger files: the log's writes and syncs (fault=log:...) and both
members' writes.
  * A written and flushed (in the log), B written (acknowledged, in the
    log's page cache and the cache);
  * the members' writes fail, then the log's: a write C fails (EIO), and
    so do every FLUSH and write after it, again and again, while reads
    return A and B (before: the cache went write-through after its drain
    failed, and the next FLUSH answered yes with A and B nowhere but in
    memory and a failed log);
  * the members work again but the log's header writes still fail: the
    log cannot be emptied, FLUSH and writes still fail;
  * the header writes work again: the next FLUSH says yes, and from then
    on writes and FLUSHes work (write-through);
  * kill -9, then a start with the same log: A, B and what was written
    after read back, and nothing is replayed over them (the log was
    emptied once everything was on the members).
"""

import os
import sys

import nbd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    MiB, TempDir, check, make_members, run_main)
from raidtest.mdarray import create  # noqa: E402
from raidtest.server import Server, nbd_errno, run_expect_failure  # noqa

BLK = 4096


def fails(what, fn):
    try:
        fn()
    except nbd.Error as e:
        return nbd_errno(e)
    raise AssertionError("%s succeeded" % what)


def main():
    with TempDir(prefix="nbdraid-clog-fail-") as d:
        paths = make_members(d, [16 * MiB] * 2)
        create(paths, 0, name="fail")
        log = os.path.join(d, "log")
        with open(log, "wb") as f:
            f.truncate(8 * MiB)
        tlog, thdr, tmem = (os.path.join(d, n) for n in ("log", "hdr",
                                                         "mem"))
        tlog += "-fails"
        params = ["member=" + p for p in paths] + [
            "cache=log", "cache-log=" + log, "cache-size=2M"]
        faults = [
            # The record area's writes (and so the log) fail ...
            "fault=log:ops=write,range=8192+%d,trigger=%s" % (
                8 * MiB - 8192, tlog),
            # ... its header writes (retire) and syncs, separately.
            "fault=log:ops=write,trigger=" + thdr] + [
            "fault=%d:ops=write,trigger=%s" % (r, tmem) for r in range(2)]
        # The ROLE log needs cache=log.
        rc, err = run_expect_failure(
            [p for p in params if not p.startswith("cache")] +
            ["cache=ram"] + faults)
        check(rc != 0 and "ROLE log needs cache=log" in err,
              "fault=log with cache=ram: %d %s" % (rc, err))
        a, b, c = (os.urandom(4 * BLK) for _ in range(3))
        with Server(params + faults) as srv:
            h = srv.connect()
            h.pwrite(a, 0)
            h.flush()
            h.pwrite(b, 1 * MiB)
            open(tmem, "w").close()
            open(tlog, "w").close()
            open(thdr, "w").close()
            e = fails("a write with the log and the members failing",
                      lambda: h.pwrite(c, 2 * MiB))
            check(e is not None, "write C: no errno")
            for i in range(3):
                fails("FLUSH %d" % i, h.flush)
                fails("write %d" % i, lambda: h.pwrite(c, 3 * MiB))
            check(h.pread(len(a), 0) == a and h.pread(len(b), MiB) == b,
                  "reads while the log and the members fail")
            # The members work, the log's header not: it cannot be
            # emptied, and writing through would put data under records
            # a restart replays: still no.
            os.unlink(tmem)
            fails("FLUSH with the members back, the log's header failing",
                  h.flush)
            fails("write with the members back, the log's header failing",
                  lambda: h.pwrite(c, 3 * MiB))
            os.unlink(thdr)
            h.flush()
            h.pwrite(c, 2 * MiB)
            h.flush()
            check("could not be written back" in srv.stderr() and
                  "emptied: write-through" in srv.stderr(),
                  "log lines:\n" + srv.stderr())
            srv.kill9()
        os.unlink(tlog)
        with Server(params) as srv:
            h = srv.connect()
            check(h.pread(len(a), 0) == a, "A after the restart")
            check(h.pread(len(b), MiB) == b, "B after the restart")
            check(h.pread(len(c), 2 * MiB) == c, "C after the restart")
            check("cache: replayed" not in srv.stderr(),
                  "a replay after the log was emptied:\n" + srv.stderr())
            srv.stop()
    print("PASS")


run_main(main)
