#!/usr/bin/python3
"""`nbdraid --control PATH cache flush` does not hold up the control socket.

RAID 0 x2 (member files) with cache=ram, every member write made slow by
the fault injector (fault=ROLE:ops=write,latency=...,error=none), so that
writing back a few hundred scattered 4K blocks takes seconds:
  * random 4K writes (cached at once), each into a model of the array;
  * client A asks `cache flush`; while it waits, client B's `status
    --json` is answered (A still waiting, the cache still dirty), then B
    asks `cache flush` too (it started after A's flush: it is served by
    A's or by a second flush, and answers only when the cache is clean);
  * both flushes answer "flushed, 0 bytes dirty"; a third, with nothing
    dirty, answers at once;
  * kill -9 of nbdkit, then nbdkit with cache=none over the same members
    reads every byte back exactly as the model says: the flush put the
    data on the members.
$NBDRAID_SEED replays a run.
"""

import json
import os
import random
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    KiB, MiB, TempDir, check, fail, run_main, seed)
from raidtest.geometry import Geometry  # noqa: E402
from raidtest.members import copy_images, read_member  # noqa: E402
from raidtest.server import Server, stop_clean  # noqa: E402
from raidtest.workload import new_array, verify_readback  # noqa: E402

BLOCKS = 240     # scattered 4K writes: one member write each at write-back
LATENCY_MS = 40  # each member write's added latency


def cli():
    p = os.environ.get("NBDRAID_CLI")
    if not p or not os.access(p, os.X_OK):
        fail("$NBDRAID_CLI is not set: this test drives the control socket")
    return p


def control(ctl, *args):
    return subprocess.Popen([cli(), "--control", ctl] + list(args),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def finish(p, what, timeout=120):
    out, err = p.communicate(timeout=timeout)
    out = out.decode(errors="replace")
    check(p.returncode == 0, "%s: exit %d: %s%s" % (
        what, p.returncode, out, err.decode(errors="replace")))
    return out


def writer(srv, rng, lo, hi, stop, counts):
    """4K writes into [lo, hi) without pause until stop is set."""
    h = srv.connect()
    while not stop.is_set():
        h.pwrite(rng.randbytes(4096), rng.randrange(lo, hi, 4096))
        counts[0] += 1


def under_writers(rng, d):
    """`cache flush` answers under writers that never stop, and what was
    dirty when it came is on the members once it has."""
    geo = Geometry(0, [4 * MiB, 4 * MiB], 64 * KiB)
    d = os.path.join(d, "writers")
    os.mkdir(d)
    ctl = os.path.join(d, "ctl.sock")
    slow = ["fault=%d:ops=write,latency=%dms,error=none" % (r, 5)
            for r in range(geo.n)]
    paths, params, model = new_array(
        d, geo, ["cache=ram", "control=" + ctl] + slow)
    half = geo.size // 2
    with Server(params) as srv:
        h = srv.connect()
        for b in rng.sample(range(0, half // 4096), 64):
            data = rng.randbytes(4096)
            h.pwrite(data, b * 4096)
            model.write(b * 4096, data)
        stop = threading.Event()
        counts = [0]
        threads = [threading.Thread(target=writer, args=(
            srv, random.Random(rng.random()), half, geo.size, stop, counts))
            for _ in range(2)]
        for t in threads:
            t.start()
        try:
            while counts[0] < 200:
                time.sleep(0.01)
            t0 = time.monotonic()
            p = control(ctl, "cache", "flush")
            try:
                out = finish(p, "cache flush under writers", timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                fail("cache flush under writers: no answer in 60 s "
                     "(%d writes meanwhile)" % counts[0])
            took = time.monotonic() - t0
            check("flushed" in out, "cache flush under writers: " + out)
            # The writers still write: the first half is on the members.
            mem = [read_member(q) for q in paths]
            img = copy_images(geo, mem, 0, half)
            for j, im in enumerate(img):
                check(im == model.data[:half],
                      "copy %d of the first half on the members differs "
                      "from what was written before the flush" % j)
            check(not stop.is_set() and all(t.is_alive() for t in threads),
                  "the writers stopped before the flush answered")
        finally:
            stop.set()
            for t in threads:
                t.join()
        print("ok cache flush answered in %.2fs under writers (%d writes "
              "in all)" % (took, counts[0]))
        srv.kill9()


def main():
    rng = random.Random(seed("test-control-cache-flush"))
    geo = Geometry(0, [4 * MiB, 4 * MiB], 64 * KiB)
    with TempDir(prefix="nbdraid-ctl-flush-") as d:
        ctl = os.path.join(d, "ctl.sock")
        slow = ["fault=%d:ops=write,latency=%dms,error=none" % (r, LATENCY_MS)
                for r in range(geo.n)]
        paths, params, model = new_array(
            d, geo, ["cache=ram", "control=" + ctl] + slow)
        with Server(params) as srv:
            h = srv.connect()
            blocks = rng.sample(range(0, geo.size // 4096, 2), BLOCKS)
            for b in blocks:
                data = rng.randbytes(4096)
                h.pwrite(data, b * 4096)
                model.write(b * 4096, data)
            a = control(ctl, "cache", "flush")
            # A's flush runs (its drain takes seconds): B is answered.
            time.sleep(0.3)
            t0 = time.monotonic()
            st = json.loads(finish(control(ctl, "status", "--json"),
                                   "status during a flush"))
            took = time.monotonic() - t0
            check(a.poll() is None,
                  "cache flush had answered when status did (%.2fs): "
                  "status waited behind the flush, or the flush was too "
                  "quick to show anything (%d blocks, %d ms a write)" % (
                      took, BLOCKS, LATENCY_MS))
            check(st["cache"]["dirty_bytes"] > 0,
                  "status during the flush: nothing dirty: %r" % st["cache"])
            b = control(ctl, "cache", "flush")
            out_a = finish(a, "cache flush (A)")
            out_b = finish(b, "cache flush (B)")
            for who, out in (("A", out_a), ("B", out_b)):
                check("flushed, 0 bytes dirty" in out,
                      "cache flush (%s): %s" % (who, out))
            t1 = time.monotonic()
            out = finish(control(ctl, "cache", "flush"), "cache flush (C)")
            check("flushed, 0 bytes dirty" in out, "cache flush (C): " + out)
            print("ok status answered in %.2fs during a flush; the clean "
                  "cache's flush in %.2fs" % (took, time.monotonic() - t1))
            verify_readback(srv, model, geo, "after cache flush")
            srv.kill9()
        # The members alone: cache=none reads them.
        with Server(geo.params(paths)) as srv:
            verify_readback(srv, model, geo, "cache=none after kill -9")
            stop_clean(srv, "cache=none")
        under_writers(rng, d)
    print("PASS")


if __name__ == "__main__":
    run_main(main)
