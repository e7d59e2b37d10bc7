#!/usr/bin/python3
"""The background passes (docs/recovery.md) through a real nbdkit, over md
arrays that `nbdraid create` made, served with control= and event=.

1. Recovery under load: RAID 1 x2, RAID 5 x3/x4 in md's four layouts,
   RAID 10 n2/f2/o2.  Four connections read and write at random (every
   read checked against a model) while a member is failed with `nbdraid
   --control PATH fail`; a spare (spare= at start, or `add` during the
   load) takes the role and is rebuilt while the load runs: status shows
   progress kind "recovery" and the member "rebuilding", then "in_sync"
   and the array "optimal"; no client request fails; the events include
   RebuildStarted .. Rebuild20..80 .. RebuildFinished and SpareActive.
   Stopped: `nbdraid check` finds 0 mismatches and the new member's data
   area holds exactly what md places on that role (an independent model:
   raidtest/geometry.py, data chunks and RAID 5 parity from the model).
2. kill -9 in the middle of a slow recovery: `mdadm --examine` of the
   rebuilding member shows its Recovery Offset; restarted with the same
   members, the log says "recovery of member N (...) resumed at X" with X
   above 0 and status progress starts above 0; the recovery ends, the data
   is exact, the new member as md places it, check 0.
3. kill -9 while writing (the array dirty: mdadm says active), a RAID 5
   parity chunk (RAID 1: a second copy) overwritten with garbage while
   stopped: the restart says "resync started", then "resync finished"
   (event ResyncFinished); the data reads exact, check finds 0, mdadm
   --examine says clean after a clean stop.
4. Scrub: chunks corrupted in the member files while stopped (RAID 5: a
   parity chunk and part of a data chunk; RAID 1: part of a second copy);
   `scrub check` counts them (last_check.mismatch_cnt, predicted from
   src/check.c: every slice of at most 1 MiB of a unit that disagrees
   counts whole), event CheckFinished; `scrub repair` rewrites them; a
   second check counts 0; `scrub stop` stops a running (slowed) check.
5. Sparse-aware recovery: a RAID 5 of 256 MiB members with about 10%
   written; the spare's allocated blocks stay near the data written.

$NBDRAID_SEED replays a run; $NBDRAID_ONLY (a regex) selects cases by
label ("raid5-left-asymmetric x4", "kill", "resync", "scrub", "sparse").
Needs mdadm for the --examine checks (skipped without it, the rest runs).
"""

import os
import random
import re
import shutil
import sys
import threading
import time

import nbd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The whole test runs longer than run_main's default hang alarm (110 s).
os.environ.setdefault("NBDRAID_TIMEOUT", "280")
from raidtest.common import (  # noqa: E402
    KiB, MiB, TempDir, check, fail, plugin, run_main, seed, selected)
from raidtest.mdarray import (  # noqa: E402
    Control, EventLog, cli, create, examine, geometry, mdadm_examine, run)
from raidtest.model import Model, first_mismatch, pattern  # noqa: E402
from raidtest.server import Server, stop_clean  # noqa: E402
from raidtest.workload import (  # noqa: E402
    Background, Workload, fill, format_counts, verify_readback)

MEMBER = 32 * MiB
CHUNK = 64 * KiB
# Under client load md's rule throttles a pass down to speed_min (it sleeps
# while clients are busy and the pass runs faster than the minimum); md's
# default minimum (1000 KiB/s) would take half a minute per member here.
# A high minimum lets recovery finish in a fraction of a second under load.
FAST = ("100000", "200000")
# Slow enough to kill nbdkit in the middle: at most 4 MB/s per member.
SLOW = ("2000", "4000")

# level, layout, members, the role failed, how the spare comes ("start":
# spare= on the command line; "add": `nbdraid --control PATH add` during
# the load, after the member failed).
CASES = [
    (1, None, 2, 0, "start"),
    (5, "left-symmetric", 3, 1, "add"),
    (5, "left-asymmetric", 4, 3, "start"),
    (5, "right-symmetric", 3, 2, "add"),
    (5, "right-asymmetric", 4, 0, "start"),
    (10, "n2", 4, 2, "add"),
    (10, "f2", 3, 1, "start"),
    (10, "o2", 3, 0, "add"),
]


def label_of(level, layout, n):
    return "raid%d%s x%d" % (level, "-" + layout if layout else "", n)


def blank(path, size):
    with open(path, "wb") as f:
        f.truncate(size)


def read_at(path, off, n):
    with open(path, "rb") as f:
        f.seek(off)
        return f.read(n)


def write_at(path, off, data):
    with open(path, "r+b") as f:
        f.seek(off)
        f.write(data)


class Array:
    """An md array under test: members (role order), spare files, control
    socket, event log, model, and the nbdkit serving it now."""

    def __init__(self, folder, label, level, layout, n, size=MEMBER,
                 spares=1):
        os.mkdir(folder)
        self.folder, self.label = folder, label
        self.level, self.layout = level, layout
        self.paths = [os.path.join(folder, "m%d.img" % i) for i in range(n)]
        self.spares = [os.path.join(folder, "s%d.img" % i)
                       for i in range(spares)]
        for p in self.paths + self.spares:
            blank(p, size)
        create(self.paths, level, layout, CHUNK, name="rec")
        self.geo = geometry(self.paths, level, layout)
        self.data_off = examine(self.paths[0])["data_offset_sectors"] * 512
        self.ctl = Control(os.path.join(folder, "ctl.sock"))
        self.events = EventLog(folder)
        self.model = None
        self.srv = None
        self.name = None
        self.logs = ""      # stderr of the nbdkits before this one

    def serve(self, extra=()):
        params = ["member=%s" % p for p in self.paths] + [
            "control=%s" % self.ctl.path,
            "event=%s" % self.events.program] + list(extra)
        self.srv = Server(params)
        st = self.ctl.status()
        self.name = st["name"]
        check(st["size"] == self.geo.size, "%s: size %d, md says %d" % (
            self.label, st["size"], self.geo.size))
        return st

    def log(self):
        return self.srv.stderr() if self.srv else ""

    def stop(self):
        stop_clean(self.srv, self.label)
        self.logs += self.srv.stderr()
        self.srv.__exit__(None, None, None)
        self.srv = None

    def kill9(self):
        self.srv.kill9()
        self.logs += self.srv.stderr()
        self.srv.__exit__(None, None, None)
        self.srv = None

    def check_offline(self, paths=None):
        """`nbdraid check` of the members: 0 mismatched, exit 0."""
        r = run([cli(), "check"] + list(paths or self.paths), ok=False)
        check(r.returncode == 0 and " 0 mismatched" in r.stdout,
              "%s: nbdraid check: exit %d\n%s%s" % (
                  self.label, r.returncode, r.stdout, r.stderr))
        return r.stdout.strip()

    def no_client_errors(self, st, refused=0):
        """No client request failed, but for the `refused` fast zeros the
        array cannot do without writing (the client allows that; status
        counts them as zero errors)."""
        check(st["io"]["zero"]["errors"] == refused,
              "%s: zero errors %d, fast zeros refused %d" % (
                  self.label, st["io"]["zero"]["errors"], refused))
        bad = {k: v["errors"] for k, v in st["io"].items()
               if v["errors"] and k != "zero"}
        check(not bad, "%s: client requests answered with errors: %s" % (
            self.label, bad))

    def fill(self, rng):
        self.model = Model(self.geo.size)
        h = self.srv.connect()
        fill(h, self.model, self.geo.size, rng)
        h.flush()


def expected_member(geo, model, role):
    """What md keeps in role's data area for the array contents in model
    (every byte settled): its copies of chunks, or (RAID 5) its data chunks
    and the XOR of the data chunks of the stripes whose parity it holds;
    rows the layout leaves unused are zero (never written)."""
    c = geo.chunk
    img = bytearray(geo.sizes[role])
    if geo.level == 5:
        w = geo.n - 1
        for s in range(geo.stripes):
            if geo.parity_member(s) == role:
                x = 0
                for k in range(s * w, (s + 1) * w):
                    x ^= int.from_bytes(model.data[k * c:(k + 1) * c],
                                        "little")
                img[s * c:(s + 1) * c] = x.to_bytes(c, "little")
            else:
                d = [geo.data_member(s, i) for i in range(w)].index(role)
                k = s * w + d
                img[s * c:(s + 1) * c] = model.data[k * c:(k + 1) * c]
        return img
    for k in range(geo.chunks):
        n = min(c, geo.size - k * c)
        for m, mc in geo.copies(k):
            if m == role:
                img[mc * c:mc * c + n] = model.data[k * c:k * c + n]
    return img


def check_new_member(a, role, path):
    """The rebuilt member's data area is exactly what md places there."""
    check(a.model.undef.find(1) < 0, "%s: the model is not settled" %
          a.label)
    want = expected_member(a.geo, a.model, role)
    got = read_at(path, a.data_off, len(want))
    if got != want:
        i = next(i for i in range(len(want)) if got[i] != want[i])
        row = i // a.geo.chunk
        fail("%s: the rebuilt member %d (%s) byte %d of its data area (row "
             "%d) is 0x%02x, md's layout wants 0x%02x; %d bytes differ" % (
                 a.label, role, path, i, row, got[i], want[i],
                 sum(1 for j in range(len(want)) if got[j] != want[j])))


def fail_member(a, role, spare=None):
    """`nbdraid --control PATH fail ROLE`: it names the member failed,
    faulty; with a spare waiting, the spare took its role at once."""
    r = a.ctl.run("fail", str(role))
    want = "member %d (%s): faulty" % (role, a.paths[role])
    check(r.stdout.strip() == want, "%s: fail %d printed %r, want %r" % (
        a.label, role, r.stdout, want))
    if spare:
        m = a.ctl.status()["members"][role]
        check(m["path"] == spare and m["state"] in ("rebuilding", "in_sync"),
              "%s: after fail %d, role %d is %s, want the spare %s" % (
                  a.label, role, role, m, spare))


def wait_recovered(a, role, spare, bg=None, timeout=40):
    """Poll status until role is in sync on spare and the array optimal;
    returns (seen progress kind recovery, seen the member rebuilding, the
    first progress seen)."""
    seen_progress = seen_rebuilding = False
    first = None
    deadline = time.monotonic() + timeout
    while True:
        st = a.ctl.status()
        m = st["members"][role]
        pr = st["progress"]
        if pr and pr["kind"] == "recovery" and pr["member"] == role:
            seen_progress = True
            first = first or pr
        if m["state"] == "rebuilding" and m["path"] == spare:
            seen_rebuilding = True
        if st["state"] == "optimal" and m["state"] == "in_sync" and \
                m["path"] == spare and pr is None:
            return st, seen_progress, seen_rebuilding, first
        if time.monotonic() > deadline:
            fail("%s: recovery did not finish within %ds: %s\n%s" % (
                a.label, timeout, st, a.log()))
        if bg:
            bg.check()
        if a.srv.proc.poll() is not None:
            fail("%s: nbdkit died:\n%s" % (a.label, a.log()))
        time.sleep(0.01)


def event_order(a, names):
    """The events went out in this order (nbdkit's log has them in order;
    the event program's own log has them all)."""
    got = [ln.split()[0] for ln in a.events.lines()]
    for e in names:
        check(e in got, "%s: the event program never got %s; it got %s" % (
            a.label, e, got))
    logged = re.findall(r"event (\S+)", a.logs + a.log())
    pos = [logged.index(e) for e in names]
    check(pos == sorted(pos), "%s: events out of order: %s" % (
        a.label, logged))


# ---- 1. recovery under load -------------------------------------------------

def recovery_case(d, rng, level, layout, n, role, how):
    label = label_of(level, layout, n)
    a = Array(os.path.join(d, re.sub(r"\W", "_", label)), label, level,
              layout, n)
    spare = a.spares[0]
    a.serve(["spare=%s" % spare] if how == "start" else [])
    a.ctl.run("speed", *FAST)
    a.fill(rng)
    w = Workload(a.srv, a.model, a.geo, rng)
    bg = Background(w).start()
    bg.wait(0.4)
    try:
        fail_member(a, role, spare if how == "start" else None)
        if how == "add":
            bg.wait(0.2)     # degraded for a while, then the spare arrives
            a.ctl.run("add", spare)
        before = w.snapshot()
        st, seen_p, seen_r, _ = wait_recovered(a, role, spare, bg)
        bg.wait(0.3)         # and the load goes on on the rebuilt member
    finally:
        bg.stop_event.set()  # a failure here must not leave it running
    bg.stop()
    w.close()
    during = {k: v - before.get(k, 0) for k, v in w.snapshot().items()}
    check(seen_p and seen_r, "%s: status never showed the recovery "
          "(progress seen %s, member rebuilding seen %s)" % (
              label, seen_p, seen_r))
    check(during.get("read", 0) >= 5 and during.get("write", 0) >= 5,
          "%s: the load barely ran during the recovery: %s" % (
              label, format_counts(during)))
    st = a.ctl.status()
    a.no_client_errors(st, w.snapshot().get("fast-zero-unsupported", 0))
    verify_readback(a.srv, a.model, a.geo, label)
    check("recovery of member %d (%s) started at 0" % (role, spare)
          in a.log(), "%s: no 'recovery ... started' in the log" % label)
    event_order(a, ["RebuildStarted", "Rebuild20", "Rebuild40", "Rebuild60",
                    "Rebuild80", "RebuildFinished"])
    event_order(a, ["RebuildStarted", "SpareActive"])
    a.stop()
    members = list(a.paths)
    members[role] = spare
    a.check_offline(members)
    check_new_member(a, role, spare)
    print("ok %s: member %d failed under load, spare (%s) rebuilt while "
          "4 connections ran (%s), 0 client errors, events, check 0, the "
          "new member as md places it" % (label, role, how,
                                          format_counts(during)),
          flush=True)


# ---- 2. kill -9 in the middle of a recovery ---------------------------------

def kill_recovery(d, rng, level, layout, n, role):
    label = "kill during recovery " + label_of(level, layout, n)
    a = Array(os.path.join(d, "kill%d" % level), label, level, layout, n)
    spare = a.spares[0]
    a.serve(["spare=%s" % spare])
    a.fill(rng)
    a.ctl.run("speed", *SLOW)
    fail_member(a, role, spare)
    # Some load while it rebuilds slowly (writes reach the new member above
    # its frontier too), then quiet, marked clean: the model stays exact.
    w = Workload(a.srv, a.model, a.geo, rng)
    bg = Background(w).start()
    try:
        bg.wait(0.5)
    finally:
        bg.stop_event.set()
    bg.stop()
    w.close()
    a.ctl.wait_clean()
    total = a.geo.sizes[role]
    deadline = time.monotonic() + 20
    while True:
        pr = a.ctl.status()["progress"]
        check(pr and pr["kind"] == "recovery", "%s: no recovery running: %s"
              % (label, pr))
        if pr["done_bytes"] >= total // 5:
            break
        check(time.monotonic() < deadline, "%s: recovery too slow" % label)
        time.sleep(0.02)
    check(pr["done_bytes"] <= total * 3 // 5,
          "%s: recovery too far on (%d of %d) to be killed in the middle: "
          "speed limits not applied?" % (label, pr["done_bytes"], total))
    a.kill9()
    # The same members: the survivors and the new member, now in the role
    # (as member=: spare= names a file to be a spare, and this one is not
    # one any more).
    members = list(a.paths)
    members[role] = spare
    sb = examine(spare)
    check(sb["recovery_offset_sectors"] > 0 and sb["feature_map"] & 2,
          "%s: the new member's superblock has no recovery offset: %s" % (
              label, {k: sb[k] for k in ("feature_map",
                                         "recovery_offset_sectors")}))
    md = mdadm_examine(spare)
    if md is not None:
        check("Recovery Offset" in md and
              md.get("Device Role") == "Active device %d" % role,
              "%s: mdadm --examine of the interrupted member: %s" % (
                  label, md))
    a.paths = members
    # Reads of the other members a little slower (2 ms a call), so that the
    # rest of the recovery lasts long enough for status to be seen running.
    a.serve(["fault=%d:ops=read,latency=2ms,error=none" % r
             for r in range(n) if r != role])
    log = a.log()
    m = re.search(r"recovery of member %d \(%s\) (\w+) at (\d+) of (\d+)" % (
        role, re.escape(spare)), log)
    check(m and m.group(1) == "resumed" and int(m.group(2)) > 0,
          "%s: the restart did not resume the recovery:\n%s" % (label, log))
    resumed = int(m.group(2))
    at = sb["recovery_offset_sectors"] * 512 // a.geo.chunk * a.geo.chunk
    check(resumed == at, "%s: resumed at %d, the recovery offset says %d" %
          (label, resumed, at))
    a.ctl.run("speed", *FAST)
    st, _, _, first = wait_recovered(a, role, spare)
    check(first is not None and first["done_bytes"] >= resumed > 0,
          "%s: status progress started at %s, the log says resumed at %d" % (
              label, first, resumed))
    a.no_client_errors(st)
    verify_readback(a.srv, a.model, a.geo, label)
    a.stop()
    a.check_offline()
    check_new_member(a, role, spare)
    print("ok %s: killed at %d of %d bytes (superblock: recovery offset "
          "%d sectors%s), resumed at %d (status first %d), finished; data "
          "exact, "
          "check 0, the new member as md places it" % (
              label, pr["done_bytes"], total, sb["recovery_offset_sectors"],
              ", mdadm agrees" if md is not None else "", resumed,
              first["done_bytes"]), flush=True)


# ---- 3. kill -9 while writing: resync ---------------------------------------

def kill_while_writing(a, off, n):
    """kill -9 nbdkit while a connection rewrites array bytes [off, off+n)
    with what they hold: the array is active (dirty) when it dies, and no
    byte changes whatever the kill cuts."""
    h = a.srv.connect()
    data = bytes(a.model.data[off:off + n])
    count = [0]

    def rewrite():
        try:
            while True:
                h.pwrite(data, off)
                count[0] += 1
        except nbd.Error:
            pass          # the server died
    th = threading.Thread(target=rewrite)
    th.start()
    while count[0] < 5:
        time.sleep(0.01)
    a.kill9()
    th.join()


def resync_case(d, rng, level, layout, n):
    label = "resync " + label_of(level, layout, n)
    a = Array(os.path.join(d, "resync%d" % level), label, level, layout, n,
              size=16 * MiB, spares=0)
    a.serve()
    a.fill(rng)
    kill_while_writing(a, 0, 4 * MiB)
    sb = examine(a.paths[0])
    check(sb["resync_offset"] != 2 ** 64 - 1,
          "%s: killed while writing, yet the superblock says clean" % label)
    md = mdadm_examine(a.paths[0])
    if md is not None:
        check(md.get("State") == "active", "%s: mdadm says State %s after "
              "the kill" % (label, md.get("State")))
    # Plant an inconsistency in a unit the rewrite did not touch.
    c = a.geo.chunk
    if level == 5:
        s = a.geo.stripes // 2
        m = a.geo.parity_member(s)
        where = "parity chunk of stripe %d on member %d" % (s, m)
        off = a.data_off + s * c
        write_at(a.paths[m], off, pattern(rng, c))
    else:
        k = a.geo.chunks // 2
        m, mc = a.geo.copies(k)[1]
        where = "second copy of chunk %d on member %d" % (k, m)
        off = a.data_off + mc * c + 3 * 512
        write_at(a.paths[m], off, pattern(rng, 4096))
    r = run([cli(), "check"] + a.paths, ok=False)
    check(r.returncode == 1 and " 1 mismatched" in r.stdout,
          "%s: the planted %s is not a mismatch: %s" % (label, where,
                                                        r.stdout))
    a.serve()
    deadline = time.monotonic() + 20
    while "resync finished" not in a.log():
        check(time.monotonic() < deadline, "%s: no resync finished:\n%s" % (
            label, a.log()))
        time.sleep(0.02)
    log = a.log()
    check(re.search(r"resync started at 0 of \d+ bytes", log),
          "%s: no 'resync started' in the log:\n%s" % (label, log))
    a.events.wait("ResyncFinished %s" % a.name)
    verify_readback(a.srv, a.model, a.geo, label)
    a.ctl.wait_clean()
    a.stop()
    a.check_offline()
    md = mdadm_examine(a.paths[0])
    if md is not None:
        check(md.get("State") == "clean", "%s: mdadm says State %s after a "
              "clean stop" % (label, md.get("State")))
    print("ok %s: killed while writing (dirty), %s overwritten: restart "
          "resynced it (log, ResyncFinished), data exact, check 0%s" % (
              label, where, ", mdadm: active, then clean"
              if md is not None else ""), flush=True)


# ---- 4. scrub ---------------------------------------------------------------

def wait_check(a, kind, after, timeout=20):
    """Wait for a scrub of kind to finish after time `after`: last_check."""
    deadline = time.monotonic() + timeout
    while True:
        st = a.ctl.status()
        lc = st["last_check"]
        if lc and lc["kind"] == kind and lc["finished"] >= after and \
                st["progress"] is None:
            return lc
        check(time.monotonic() < deadline, "%s: %s did not finish: %s" % (
            a.label, kind, st))
        time.sleep(0.02)


def scrub_case(d, rng, level, layout, n):
    label = "scrub " + label_of(level, layout, n)
    a = Array(os.path.join(d, "scrub%d" % level), label, level, layout, n,
              size=16 * MiB, spares=0)
    st = a.serve()
    a.fill(rng)
    a.ctl.wait_clean()
    a.stop()
    # md's mismatch_cnt (src/check.c): the 4K pages of a unit (a stripe
    # row, or a mirror's chunk) that disagree, in 512-byte sectors.
    c = a.geo.chunk
    planted = []       # (what, member, offset in the file, bytes)
    if level == 5:
        s1 = 3
        m = a.geo.parity_member(s1)
        planted.append(("parity of stripe %d" % s1, m, a.data_off + s1 * c,
                        pattern(rng, c)))
        s2 = a.geo.stripes - 2
        k = s2 * (n - 1) + 1
        m, mc = a.geo.copies(k)[0]
        planted.append(("4K of data chunk %d" % k, m,
                        a.data_off + mc * c + 8192, pattern(rng, 4096)))
        data_hit = [(k * c + 8192, planted[-1][3])]
        pages = c // 4096 + 1       # all of a parity chunk, one page
    else:
        planted.append(("4K of chunk 0's second copy", 1,
                        a.data_off + 5 * 512, pattern(rng, 4096)))
        far = a.geo.size - 100          # in the last served chunk
        planted.append(("1 byte of the last chunk's second copy", 1,
                        a.data_off + far, b"\x5a" if
                        a.model.data[far] != 0x5a else b"\xa5"))
        data_hit = []
        pages = 2 + 1   # 4K at 2560 spans two pages; one byte, one page
    for _, m, off, data in planted:
        write_at(a.paths[m], off, data)
    want = pages * 4096 // 512
    a.serve()
    t0 = int(time.time())
    a.ctl.run("speed", *FAST)
    a.ctl.run("scrub", "check")
    lc = wait_check(a, "check", t0)
    check(lc["mismatch_cnt"] == want, "%s: check counted %d sectors, want %d"
          " (%d pages of 4K): planted %s" % (
              label, lc["mismatch_cnt"], want, pages,
              [p[0] for p in planted]))
    a.events.wait("CheckFinished %s %d" % (a.name, want))
    a.ctl.run("scrub", "repair")
    lc = wait_check(a, "repair", t0)
    check(lc["mismatch_cnt"] == want, "%s: repair counted %d, want %d" % (
        label, lc["mismatch_cnt"], want))
    time.sleep(1.05)     # last_check.finished is in whole seconds
    t1 = int(time.time())
    a.ctl.run("scrub", "check")
    lc = wait_check(a, "check", t1)
    check(lc["mismatch_cnt"] == 0, "%s: check after repair counted %d" % (
        label, lc["mismatch_cnt"]))
    # md's repair keeps the data and rewrites parity (or the other copies):
    # a corrupted data chunk reads as corrupted, nothing else changed.
    for off, data in data_hit:
        a.model.write(off, data)
    verify_readback(a.srv, a.model, a.geo, label)
    print("ok %s: planted %s: check counted %d sectors as predicted, "
          "CheckFinished, repair fixed them, check again 0, data as md's "
          "repair leaves it" % (label, ", ".join(p[0] for p in planted),
                                want), flush=True)
    # scrub stop, on a check slowed down (no load: only MAX applies)
    a.ctl.run("speed", "100", "200")
    before = a.ctl.status()["last_check"]
    a.ctl.run("scrub", "check")
    deadline = time.monotonic() + 10
    while True:
        pr = a.ctl.status()["progress"]
        if pr and pr["kind"] == "check":
            break
        check(time.monotonic() < deadline, "%s: the check never ran" % label)
        time.sleep(0.01)
    a.ctl.refused("in progress", "scrub", "check")
    a.ctl.run("scrub", "stop")
    deadline = time.monotonic() + 10
    while a.ctl.status()["progress"] is not None:
        check(time.monotonic() < deadline, "%s: scrub stop did not stop the "
              "check" % label)
        time.sleep(0.02)
    st = a.ctl.status()
    check(st["last_check"] == before, "%s: a stopped check changed "
          "last_check: %s -> %s" % (label, before, st["last_check"]))
    check(re.search(r"check stopped at \d+ of \d+ bytes", a.log()),
          "%s: the log does not say the check stopped:\n%s" % (label,
                                                              a.log()))
    a.stop()
    a.check_offline()
    print("ok %s: scrub stop stopped a running check (last_check kept); "
          "check offline 0" % label, flush=True)


# ---- 5. sparse-aware recovery ----------------------------------------------

def sparse_case(d, rng):
    label = "sparse raid5-left-symmetric x3"
    size = 256 * MiB
    a = Array(os.path.join(d, "sparse"), label, 5, "left-symmetric", 3,
              size=size)
    spare = a.spares[0]
    a.serve()
    a.ctl.run("speed", *FAST)
    h = a.srv.connect()
    written = {}
    piece = MiB
    slots = a.geo.size // piece
    for s in rng.sample(range(slots), slots // 10):
        data = bytes(pattern(rng, piece))
        h.pwrite(data, s * piece)
        written[s * piece] = data
    h.flush()
    role = 2
    fail_member(a, role)
    a.ctl.run("add", spare)
    wait_recovered(a, role, spare, timeout=60)
    h = a.srv.connect()
    for off, data in written.items():
        got = h.pread(len(data), off)
        bad = first_mismatch(got, data, bytes(len(data)), 0)
        check(not bad, "%s: read %d+%d: %s" % (label, off, len(data), bad))
    for s in rng.sample([s for s in range(slots) if s * piece not in
                         written], 8):
        check(h.pread(piece, s * piece) == bytes(piece),
              "%s: never-written MiB %d does not read zero" % (label, s))
    a.stop()
    members = list(a.paths)
    members[role] = spare
    a.check_offline(members)
    alloc = os.stat(spare).st_blocks * 512
    peer = os.stat(a.paths[0]).st_blocks * 512
    data_bytes = len(written) * piece // (a.geo.n - 1)  # per member
    check(alloc <= max(peer, data_bytes) * 3 // 2 + 2 * MiB and
          alloc < size // 4,
          "%s: the spare has %d bytes allocated of %d; a survivor %d, data "
          "per member %d: recovery filled holes" % (label, alloc, size, peer,
                                                    data_bytes))
    print("ok %s: 10%% written, recovery kept the holes (spare %d MiB "
          "allocated of %d, a survivor %d), data exact, check 0" % (
              label, alloc // MiB, size // MiB, peer // MiB), flush=True)


def main():
    plugin()
    cli()
    rng = random.Random(seed("test-recovery"))
    if shutil.which("mdadm") is None:
        print("mdadm not installed: its --examine checks are skipped")
    with TempDir(base="/tmp") as d:
        for level, layout, n, role, how in CASES:
            if selected(label_of(level, layout, n)):
                recovery_case(d, rng, level, layout, n, role, how)
        if selected("kill during recovery raid5"):
            kill_recovery(d, rng, 5, "left-symmetric", 3, 1)
        if selected("kill during recovery raid10"):
            kill_recovery(d, rng, 10, "n2", 4, 3)
        if selected("resync raid5"):
            resync_case(d, rng, 5, "right-symmetric", 3)
        if selected("resync raid1"):
            resync_case(d, rng, 1, None, 2)
        if selected("scrub raid5"):
            scrub_case(d, rng, 5, "left-symmetric", 4)
        if selected("scrub raid1"):
            scrub_case(d, rng, 1, None, 2)
        if selected("sparse"):
            sparse_case(d, rng)


run_main(main)
