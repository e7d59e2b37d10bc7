#!/usr/bin/python3
"""FUA and flush make the plugin sync the members it wrote, as seen by
strace (io=psync, where member I/O is plain syscalls); zero and trim with
FUA sync every member they changed, on every level (RAID 5 included).

test-fua-kill.py shows acknowledged data left the process; this shows it
was also pushed to stable storage: after a FUA write, every member written
got fdatasync/fsync/sync_file_range or a pwritev2 with RWF_DSYNC/RWF_SYNC
(or the member is open O_DSYNC/O_SYNC); after a flush, every member
written since the last sync got fdatasync/fsync.  Skipped (77) without
strace or when ptrace is not permitted.
"""

import os
import random
import re
import shutil
import subprocess
import sys
import time

import nbd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    KiB, MiB, TempDir, check, make_members, plugin, run_main, seed, skip)
from raidtest.geometry import Geometry  # noqa: E402
from raidtest.model import pattern  # noqa: E402
from raidtest.server import Server  # noqa: E402

O_DSYNC, O_SYNC = 0o10000, 0o4010000
SYNCS = ("fsync", "fdatasync", "sync_file_range", "sync_file_range2")
LINE = re.compile(r"^(?:\[pid\s+)?\d*\]?\s*(\w+)\((\d+)")


def member_fds(pid, paths):
    """{fd: member index} and the set of fds opened O_DSYNC/O_SYNC."""
    fds, dsync = {}, set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target in paths:
            fds[int(fd)] = paths.index(target)
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                flags = int(re.search(r"flags:\s*([0-7]+)", f.read()).group(1),
                            8)
            if flags & O_DSYNC:
                dsync.add(int(fd))
    return fds, dsync


class Strace:
    """strace -f attached to nbdkit for the duration of a with-block."""

    def __init__(self, pid, log):
        self.pid, self.log = pid, log

    def __enter__(self):
        self.proc = subprocess.Popen(
            ["strace", "-f", "-qq", "-p", str(self.pid), "-o", self.log,
             "-e", "trace=fsync,fdatasync,sync_file_range,syncfs,pwrite64,"
             "pwritev,pwritev2,write,writev,fallocate,ioctl"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                skip("strace cannot attach: %s" %
                     self.proc.stderr.read().decode(errors="replace"))
            if self.attached():
                return self
            time.sleep(0.02)
        self.proc.kill()
        skip("strace did not attach within 10s")

    def attached(self):
        for task in os.listdir("/proc/%d/task" % self.pid):
            try:
                with open("/proc/%d/task/%s/status" % (self.pid, task)) as f:
                    m = re.search(r"TracerPid:\s*(\d+)", f.read())
            except OSError:
                continue
            if not m or int(m.group(1)) == 0:
                return False
        return True

    def __exit__(self, *exc):
        self.proc.terminate()   # strace detaches and flushes its log
        self.proc.wait(timeout=20)
        return False

    def calls(self):
        """[(syscall, fd, line)] from the log."""
        out = []
        with open(self.log) as f:
            for line in f:
                m = LINE.match(line)
                if m:
                    out.append((m.group(1), int(m.group(2)), line.strip()))
        return out


def summarise(calls, fds):
    """{member: (changed, synced)} from strace calls on member fds: a
    write, fallocate or ioctl (BLKDISCARD ...) changes; a sync syncs, and
    so does a write with RWF_DSYNC."""
    res = {}
    for name, fd, line in calls:
        if fd not in fds:
            continue
        w, s = res.get(fds[fd], (False, False))
        if name.startswith("pwrite") or name.startswith("write") or \
                name in ("fallocate", "ioctl"):
            w = True
            if "RWF_DSYNC" in line or "RWF_SYNC" in line:
                s = True
        elif name in SYNCS:
            s = True
        res[fds[fd]] = (w, s)
    return res


def check_synced(st, fds, dsync, what):
    """Every member changed during st was synced before the reply."""
    res = summarise(st.calls(), fds)
    for m, (w, s) in res.items():
        ok = not w or s or any(fds[fd] == m for fd in dsync)
        check(ok, "%s: member %d changed but not synced before the "
                "reply; strace:\n%s" % (what, m, "\n".join(
                    ln for _, _, ln in st.calls())))
    check(any(w for w, _ in res.values()),
            "%s: strace saw no member change at all: %s" % (what, res))
    return res


def discard_fua(d, rng, geo):
    """Zero (plain, may_trim) and trim with FUA, whole stripes and a part
    of one: every member they changed is synced before the reply."""
    paths = make_members(d, geo.sizes, prefix="z%d-" % geo.level)
    params = geo.params() + ["member=%s" % p for p in paths] + ["io=psync"]
    stripe = geo.stripe_span(0)[1] - geo.stripe_span(0)[0] \
        if geo.level == 5 else geo.chunk * geo.n
    with Server(params) as srv:
        h = srv.connect()
        h.pwrite(pattern(rng, 4 * stripe), 0)
        h.flush()
        fds, dsync = member_fds(srv.proc.pid, paths)
        cases = [("zero", 0, stripe, nbd.CMD_FLAG_NO_HOLE),
                 ("zero may_trim", stripe, 2 * stripe, 0),
                 ("trim", 0, 2 * stripe, 0),
                 ("zero part", 3 * stripe + 100, 5000, 0)]
        for what, off, n, flags in cases:
            log = os.path.join(d, "%d-%s.log" % (geo.level, what))
            with Strace(srv.proc.pid, log) as st:
                if what.startswith("trim"):
                    h.trim(n, off, flags=flags | nbd.CMD_FLAG_FUA)
                else:
                    h.zero(n, off, flags=flags | nbd.CMD_FLAG_FUA)
            res = check_synced(st, fds, dsync, "raid%d %s FUA" %
                               (geo.level, what))
            print("ok raid%d %s with FUA syncs what it changed: %s" %
                  (geo.level, what, res))
        srv.stop()


def main():
    rng = random.Random(seed("test-fua-syncs"))
    plugin()
    if shutil.which("strace") is None:
        skip("strace not installed")
    with TempDir() as d:
        geo = Geometry(10, [2 * MiB] * 4, 64 * KiB, "n2")
        paths = make_members(d, geo.sizes)
        params = geo.params(paths, ["io=psync"])
        with Server(params) as srv:
            h = srv.connect()
            h.pwrite(b"warm", 0)
            h.flush()
            fds, dsync = member_fds(srv.proc.pid, paths)
            check(sorted(fds.values()) == list(range(geo.n)),
                  "member fds not found in /proc: %s" % fds)
            # A FUA write over 3 chunks: 6 copies on all 4 members.
            off, n = 64 * KiB - 100, 2 * 64 * KiB + 200
            with Strace(srv.proc.pid, os.path.join(d, "fua.log")) as st:
                h.pwrite(pattern(rng, n), off, flags=nbd.CMD_FLAG_FUA)
            res = summarise(st.calls(), fds)
            written = [m for m, (w, s) in res.items() if w]
            check(len(written) == geo.n, "FUA write: expected writes on "
                  "all %d members, strace saw %s" % (geo.n, res))
            for m in written:
                ok = res[m][1] or any(fds[fd] == m for fd in dsync)
                check(ok, "FUA write: member %d written but not synced "
                      "before the reply; strace:\n%s" % (m, "\n".join(
                            ln for _, _, ln in st.calls())))
            print("ok FUA write syncs every member it wrote: %s" % res)

            with Strace(srv.proc.pid, os.path.join(d, "plain.log")) as st:
                h.pwrite(pattern(rng, n), off + 5 * 64 * KiB)
            plain = summarise(st.calls(), fds)
            print("   a plain write: %s" % plain)
            with Strace(srv.proc.pid, os.path.join(d, "flush.log")) as st:
                h.flush()
            res = summarise(st.calls(), fds)
            for m, (w, s) in plain.items():
                if w and not (any(fds[fd] == m for fd in dsync) or
                              plain[m][1]):
                    check(res.get(m, (False, False))[1],
                          "flush: member %d has unsynced writes but got "
                          "no fsync/fdatasync; strace:\n%s" % (
                                m, "\n".join(ln for _, _, ln in st.calls())))
            print("ok flush syncs the members written since: %s" % res)
            srv.stop()
        for geo in (Geometry(5, [2 * MiB] * 4, 64 * KiB),
                    Geometry(1, [2 * MiB] * 2, 64 * KiB),
                    Geometry(0, [2 * MiB] * 3, 64 * KiB),
                    Geometry(10, [2 * MiB] * 3, 64 * KiB, "f2")):
            discard_fua(d, rng, geo)


run_main(main)
