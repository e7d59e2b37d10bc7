#!/usr/bin/python3
"""cache=ram (docs/cache.md) over RAID 5 x4 and RAID 0 x4, through nbdkit.

For each geometry (chunk 4K..64K, members of a few MiB), with the cache
larger than the array and with one of 1 MiB (write-back under pressure,
writers waiting for room), and once in writethrough mode:
  * multi-conn, FUA, flush, trim and zero are offered; the log says the
    cache's mode and size at start;
  * random pread/pwrite(+FUA)/flush/trim/zero from 4 connections at once
    (each in its own unaligned regions) then from one anywhere, every read
    checked against a model, then the whole array read back byte-exact;
  * `nbdraid --control PATH cache flush` answers with 0 bytes dirty, and
    the member files then hold every acknowledged byte where md puts it
    (RAID 5: parity on every stripe), with nbdkit still running;
  * status --json has the cache object, its counters moved;
  * more writes, not flushed; after SIGTERM (exit 0) the member files
    again hold everything (the clean stop wrote the cache back); nbdkit
    with cache=none over them reads every byte back exact; `nbdraid check`
    finds 0 mismatched stripes (RAID 5).
Then, per geometry, a crash: data flushed and data written with FUA
survive kill -9 of nbdkit (read back with cache=none), bytes of writes
neither flushed nor FUA read as the old data or the new, nothing else.

$NBDRAID_SEED replays a run; $NBDRAID_ONLY (a regex) selects geometries.
"""

import json
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest import workload  # noqa: E402
from raidtest.common import (  # noqa: E402
    MiB, TempDir, check, fail, plugin, run_main, seed, selected)
from raidtest.geometry import Geometry  # noqa: E402
from raidtest.members import verify_members  # noqa: E402
from raidtest.model import pattern  # noqa: E402
from raidtest.server import Server, check_array, stop_clean  # noqa: E402
from raidtest.workload import (  # noqa: E402
    Workload, format_counts, new_array, random_chunk, verify_readback)

GEOMETRIES = [(5, 4), (0, 4)]
CACHES = [["cache=ram"], ["cache=ram", "cache-size=1M", "cache-hold=100"],
          ["cache=ram", "cache-mode=writethrough"]]


def cli():
    p = os.environ.get("NBDRAID_CLI")
    if not p or not os.access(p, os.X_OK):
        return None
    return p


def control(path, *args, want_ok=True):
    """`nbdraid --control PATH args...`: its stdout (it must succeed)."""
    p = subprocess.run([cli(), "--control", path] + list(args),
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    out = p.stdout.decode(errors="replace")
    if want_ok:
        check(p.returncode == 0, "nbdraid --control %s %s: exit %d: %s%s" % (
            path, " ".join(args), p.returncode, out,
            p.stderr.decode(errors="replace")))
    return out


def offline_check(geo, paths, label):
    """`nbdraid check` over the members: 0 mismatched (RAID 5)."""
    p = subprocess.run([cli(), "check", "--json"] + geo.params(paths),
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    out = p.stdout.decode(errors="replace")
    check(p.returncode == 0, "%s: nbdraid check exits %d: %s%s" % (
        label, p.returncode, out, p.stderr.decode(errors="replace")))
    res = json.loads(out)
    check(res["mismatched"] == 0, "%s: nbdraid check: %s" % (label, out))
    return res["checked"]


def sizes(rng, n, chunk):
    return workload.member_sizes(rng, n, chunk, 2 * MiB, 3 * MiB)


def run_case(rng, folder, level, n, extra):
    chunk = random_chunk(rng)
    geo = Geometry(level, sizes(rng, n, chunk), chunk)
    ctl = os.path.join(folder, "ctl.sock")
    label = geo.label(extra)
    if not selected(label):
        return
    start = time.monotonic()
    paths, params, model = new_array(folder, geo, extra + ["control=" + ctl])
    with Server(params) as srv:
        check_array(srv.connect(), geo, label)
        mode = "write-through" if "writethrough" in " ".join(extra) \
            else "write-back"
        check("cache: %s in RAM" % mode in srv.stderr(),
              "%s: no start line saying the cache mode:\n%s" % (
                  label, srv.stderr()))
        w = Workload(srv, model, geo, rng)
        w.concurrent_phase(40)
        w.serial_phase(60)
        w.concurrent_phase(20)
        verify_readback(srv, model, geo, label)
        st = json.loads(control(ctl, "status", "--json"))["cache"]
        check(st is not None and st["mode"] == "ram", "%s: status: cache %r"
              % (label, st))
        check(st["read_hits"] + st["read_misses"] > 0, "%s: no read counted"
              % label)
        out = control(ctl, "cache", "flush")
        check("flushed, 0 bytes dirty" in out, "%s: cache flush: %s" % (
            label, out))
        # The members alone hold everything now, nbdkit still running.
        verify_members(geo, model, paths, label + " (after cache flush)")
        # More writes, not flushed: the clean stop must write them back.
        w.concurrent_phase(20)
        verify_readback(srv, model, geo, label)
        stop_clean(srv, label)
    verify_members(geo, model, paths, label + " (after SIGTERM)")
    with Server(geo.params(paths)) as srv:
        verify_readback(srv, model, geo, label + " (cache=none)")
        stop_clean(srv, label)
    if level == 5:
        offline_check(geo, paths, label)
    for p in paths:
        os.unlink(p)
    print("ok %-60s %5.2fs %s" % (label, time.monotonic() - start,
                                  format_counts(w.counts)), flush=True)


def run_crash(rng, folder, level, n):
    """Flushed and FUA'd data survives kill -9; the rest is old or new."""
    chunk = random_chunk(rng)
    geo = Geometry(level, sizes(rng, n, chunk), chunk)
    label = geo.label(["cache=ram", "kill -9"])
    if not selected(label):
        return
    paths, params, _ = new_array(folder, geo, ["cache=ram"])
    size = geo.size
    third = size // 3
    old = bytearray(size)
    new = bytearray(size)
    with Server(params) as srv:
        h = srv.connect()
        # A: written, then flushed on another connection.
        a = pattern(rng, third)
        for off in range(0, third, 256 * 1024):
            h.pwrite(a[off:off + 256 * 1024], off)
        srv.connect().flush()
        old[0:third] = new[0:third] = a
        # B: FUA, unaligned pieces.
        off = third
        while off < 2 * third:
            k = min(rng.randint(1, 70000), 2 * third - off)
            data = pattern(rng, k)
            h.pwrite(data, off, flags=1)  # NBD_CMD_FLAG_FUA
            old[off:off + k] = new[off:off + k] = data
            off += k
        # C: neither flushed nor FUA: old (zero) or new.
        off = 2 * third
        while off < size:
            k = min(rng.randint(1, 70000), size - off)
            data = pattern(rng, k)
            h.pwrite(data, off)
            new[off:off + k] = data
            off += k
        srv.kill9()
    with Server(geo.params(paths)) as srv:
        h = srv.connect()
        got = bytearray()
        for off in range(0, size, MiB):
            got += h.pread(min(MiB, size - off), off)
        stop_clean(srv, label)
    for i in range(0, 2 * third):
        if got[i] != new[i]:
            fail("%s: byte %d (%s) is %d after kill -9, want %d" % (
                label, i, "flushed" if i < third else "FUA", got[i],
                new[i]))
    bad = [i for i in range(2 * third, size)
           if got[i] != new[i] and got[i] != old[i]]
    check(not bad, "%s: %d bytes neither old nor new after kill -9, first "
          "at %s" % (label, len(bad), bad[:1]))
    kept = sum(1 for i in range(2 * third, size) if got[i] == new[i])
    for p in paths:
        os.unlink(p)
    print("ok %-60s %d of %d unflushed bytes had reached the members" % (
        label, kept, size - 2 * third), flush=True)


def main():
    rng = random.Random(seed("test-cache"))
    plugin()
    if not cli():
        fail("$NBDRAID_CLI is not set: the cache flush and check need it")
    with TempDir() as d:
        for level, n in GEOMETRIES:
            for extra in CACHES:
                run_case(rng, d, level, n, list(extra))
            run_crash(rng, d, level, n)


run_main(main)
