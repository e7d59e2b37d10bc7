#!/usr/bin/python3
"""The write-back cache's memory stays within cache-size and the bound
docs/cache.md ("Memory") gives, under the load that grew it most
(issue 25 #20).

RAID 0 x2 over member files on tmpfs, cache=ram with cache-size=64M: 40
MiB written as 64K writes out of order (dense, so that every batch is
full), then member 0's writes made to fail after 100 ms (fault=, armed by
a trigger file), and 16 connections FLUSH at once: each FLUSH, write-back
failing, writes back by itself.  nbdkit's peak RSS (VmHWM), less what the
same nbdkit serving the members without a cache takes, must be at most
cache-size + 3 batch buffers (8 MiB each here) + 2 read-ahead windows
(4 MiB each: cache-size / 16) + 16 MiB.  Before, every such FLUSH took a
16 MiB buffer of its own: 179 MiB peak, 115 over cache-size.
"""

import os
import random
import sys
import threading

import nbd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    MiB, TempDir, check, make_members, run_main, seed, skip)
from raidtest.server import Server  # noqa: E402

CACHE = 64 * MiB
BOUND = CACHE + 3 * 8 * MiB + 2 * 4 * MiB + 16 * MiB


def rss(pid):
    """(VmRSS, VmHWM) of pid, in bytes."""
    v = {}
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            k, _, rest = ln.partition(":")
            if k in ("VmRSS", "VmHWM"):
                v[k] = int(rest.split()[0]) * 1024
    return v["VmRSS"], v["VmHWM"]


def flush(h):
    for _ in range(2):
        try:
            h.flush()
        except nbd.Error:
            pass    # write-back fails: that is the load


def main():
    if os.environ.get("ASAN_OPTIONS") or os.environ.get("TSAN_OPTIONS"):
        skip("memory is measured without the sanitizers (tests/san.sh): "
             "their shadow memory and quarantine are in nbdkit's RSS")
    rng = random.Random(seed("test-cache-memory"))
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    with TempDir(prefix="nbdraid-cache-mem-", base=base) as d:
        paths = make_members(d, [96 * MiB] * 2)
        trigger = os.path.join(d, "fail")
        params = ["level=0", "metadata=none", "chunk=64K"] + [
            "member=" + p for p in paths]
        with Server(params) as srv:
            h = srv.connect()
            h.pwrite(bytearray(MiB), 0)
            plain = rss(srv.proc.pid)[0]
            srv.kill9()
        params += ["cache=ram", "cache-size=%d" % CACHE,
                   "fault=0:ops=write,latency=100ms,errno=EIO,trigger=" +
                   trigger]
        with Server(params) as srv:
            hs = [srv.connect() for _ in range(16)]
            buf = bytearray(b"\x5a" * 65536)
            offs = list(range(0, 40 * MiB, 65536))
            rng.shuffle(offs)
            for off in offs:
                hs[0].pwrite(buf, off)
            open(trigger, "w").close()
            ts = [threading.Thread(target=flush, args=(h,)) for h in hs]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            now, peak = rss(srv.proc.pid)
            srv.kill9()
    print("nbdkit without a cache %d MiB; with cache-size=%d MiB: peak %d "
          "MiB, after %d MiB; bound %d MiB over nbdkit" % (
              plain // MiB, CACHE // MiB, peak // MiB, now // MiB,
              BOUND // MiB))
    check(peak - plain <= BOUND, "peak RSS %d MiB over nbdkit's %d MiB: "
          "more than the bound %d MiB" % (
              (peak - plain) // MiB, plain // MiB, BOUND // MiB))
    print("PASS")


run_main(main)
