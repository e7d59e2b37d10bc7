#!/usr/bin/python3
"""Degraded mode under load, through a real nbdkit, over md arrays that
`nbdraid create` made, served with control= and event=.

1. For RAID 1 x2 and x3, RAID 5 x3 and x5 in md's four layouts, RAID 10
   n2, f2 and o2: 4 connections run random verified reads, writes, trims
   and zeros (every read byte-exact against a model) while a member fails
   in the middle: by fault injection (a trigger file created mid-load, or
   after= bytes) or by `nbdraid --control PATH fail`, alternating so that
   each level family fails both ways.  No client request fails; status
   --json says degraded and names the member faulty (its path); the event
   program got Fail; the load goes on after the failure; the whole array
   reads back byte-exact.  Two cases then `remove` the member, still under
   load: missing, event MemberRemoved.
2. nbdkit stops (SIGTERM, or kill -9 while a connection rewrites bytes
   with what they hold) and starts again with the same members, the
   failed one included: it starts degraded, the failed member stays out
   (nbdkit says it is recorded as failed, or removed; status: not in
   sync), the event program got DegradedArray, the data reads back
   byte-exact and a short load runs; a survivor's superblock (nbdraid
   examine, mdadm --examine) records the role faulty (or removed) with
   more events than the failed member's own.  A RAID 5 killed while
   degraded is dirty and degraded: refused without force=true.
3. A second member fails (RAID 1 x2: the other; RAID 5: a second; RAID 10
   n2: the other copy of a pair): `fail` is refused (the last copy); with
   its reads failing, every chunk whose copies are all gone answers EIO
   and every other chunk reads byte-exact, the array still "degraded"; a
   write there fails the array ("failed", event ArrayFailed): every write
   answers EIO, reads as before; status counts exactly those errors.
4. A healthy RAID 5: a sector that fails a read once (count=2: the read
   and its retry) is read from parity, rewritten and counted (read_errors
   1, corrected_reads 8), the array stays optimal; a sector whose rewrite
   fails too (ops=rw) fails its member: degraded, event Fail, data exact.
5. Starts: a member not given that the superblocks count in sync is
   refused without degraded=ok and served with it; an array killed while
   writing (dirty) is then refused degraded even with degraded=ok, and
   served with force=true, its data exact.
$NBDRAID_SEED replays a run; $NBDRAID_ONLY (a regex) selects cases by
label ("raid5-left-symmetric x3", "read errors", "starts").
"""

import errno
import os
import random
import sys
import threading
import time

import nbd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    KiB, MiB, TempDir, check, fail, plugin, run_main, seed, selected)
from raidtest.mdarray import (  # noqa: E402
    MD_ROLE_FAULTY, MD_ROLE_SPARE, Control, EventLog, cli, create, examine,
    geometry, mdadm_examine, place)
from raidtest.model import Model  # noqa: E402
from raidtest.server import (  # noqa: E402
    Server, nbd_errno, run_expect_failure, stop_clean)
from raidtest.workload import (  # noqa: E402
    Background, Workload, fill, format_counts, verify_readback)

MEMBER = 16 * MiB
SMALL = 8 * MiB           # the members of parts 4 and 5
CHUNK = 64 * KiB
LOAD_BEFORE = 0.7         # seconds of load before a member fails
LOAD_AFTER = 1.0          # ... and after
LOAD_RESTART = 0.4        # ... on the array started again
MIN_AFTER = 10            # reads and writes at least, after the failure
DIRTY_DEGRADED = "(md: cannot start dirty degraded array); force=true " \
    "starts it anyway"

# level, layout, members, how the member fails (trigger: fault= while a
# file exists, created mid-load; after: fault= after some bytes of its I/O;
# fail: nbdraid --control fail; fail+remove: then remove, mid-load too),
# its role, how nbdkit stops (clean: SIGTERM; kill: kill -9), and the role
# that fails second (part 3) or None.
CASES = [
    (1, None, 2, "trigger", 1, "clean", 0),
    (1, None, 3, "fail", 0, "kill", None),
    (5, "left-symmetric", 3, "trigger", 2, "clean", 0),
    (5, "left-asymmetric", 5, "fail+remove", 3, "clean", None),
    (5, "right-symmetric", 3, "fail", 1, "kill", None),
    (5, "right-asymmetric", 5, "after", 0, "clean", None),
    (10, "n2", 4, "fail", 0, "clean", 1),
    (10, "f2", 3, "trigger", 2, "kill", None),
    (10, "o2", 3, "fail+remove", 1, "clean", None),
]


def new_members(folder, n, size):
    os.mkdir(folder)
    paths = [os.path.join(folder, "m%d.img" % i) for i in range(n)]
    for p in paths:
        with open(p, "wb") as f:
            f.truncate(size)
    return paths


class Array:
    """One md array under test: its members, control socket, event log,
    model, and the nbdkit serving it now."""

    def __init__(self, folder, label, level, layout, n, size):
        self.label = label
        self.folder = folder
        self.paths = new_members(folder, n, size)
        self.level, self.layout = level, layout
        self.uuid = create(self.paths, level, layout, CHUNK, name="deg")
        self.geo = geometry(self.paths, level, layout)
        self.ctl = Control(os.path.join(folder, "ctl.sock"))
        self.events = EventLog(folder)
        self.model = Model(self.geo.size)
        self.srv = None
        self.name = None

    def params(self, members=None, extra=()):
        return ["member=%s" % p for p in (members or self.paths)] + [
            "control=%s" % self.ctl.path,
            "event=%s" % self.events.program] + list(extra)

    def serve(self, members=None, extra=()):
        self.srv = Server(self.params(members, extra))
        st = self.ctl.status()
        self.name = st["name"]
        check(st["size"] == self.geo.size, "%s: size %d, md's geometry "
              "says %d" % (self.label, st["size"], self.geo.size))
        return st

    def refused(self, why, members=None, extra=()):
        """nbdkit must refuse to start, its message saying `why`."""
        rc, err = run_expect_failure(self.params(members, extra))
        check(rc != 0 and why in err, "%s: %s: want a refusal saying '%s', "
              "got exit %d:\n%s" % (self.label, " ".join(extra), why, rc,
                                    err))
        return [ln for ln in err.splitlines() if why in ln][0]

    def stop(self):
        stop_clean(self.srv, self.label)
        self.srv.__exit__(None, None, None)
        self.srv = None

    def kill_while_writing(self, off, n):
        """kill -9 nbdkit while a connection rewrites array bytes [off,
        off+n) with what they hold, over and over: the array is active
        (dirty) when it dies, and no byte changes whatever the kill cuts
        (a RAID 5 stripe rewritten with its own bytes keeps its parity)."""
        h = self.srv.connect()
        data = bytes(self.model.data[off:off + n])
        h.pwrite(data, off)
        self.model.write(off, data)   # trimmed bytes there are settled now
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
        self.srv.kill9()
        th.join()
        self.srv.__exit__(None, None, None)
        self.srv = None

    def events_were(self, *events):
        """The event program got exactly these events, in this order
        (EVENT [MEMBER]; the array's name goes between).  A mirror
        killed while dirty resyncs the copies left when it starts again,
        as md does (test-recovery.py tests that): ResyncFinished, when it
        came, is not counted."""
        want = [" ".join([e.split()[0], self.name] + e.split()[1:])
                for e in events]
        got = [ln for ln in self.events.lines()
               if ln != "ResyncFinished %s" % self.name]
        check(got == want, "%s: the event program got:\n%s\nwant:\n%s" % (
            self.label, "\n".join(got), "\n".join(want)))

    def status_ok(self, st, state, io_ok=True):
        check(st["state"] == state, "%s: state %s, want %s: %s" % (
            self.label, st["state"], state, st))
        if io_ok:
            bad = {k: v["errors"] for k, v in st["io"].items()
                   if v["errors"]}
            check(not bad, "%s: client requests answered with errors: %s" %
                  (self.label, bad))


def role_of_dev(sb, dev_number):
    return sb["roles"][dev_number]


def check_recorded_out(a, role, removed):
    """The survivors' superblocks record `role` faulty (or removed), with
    more events than the failed member's own superblock (it was not written
    after it failed); mdadm agrees: '.' for the role in Array State."""
    gone = examine(a.paths[role])
    want = MD_ROLE_SPARE if removed else MD_ROLE_FAULTY
    for i, p in enumerate(a.paths):
        if i == role:
            continue
        sb = examine(p)
        check(role_of_dev(sb, gone["dev_number"]) == want,
              "%s: member %s records role %d's device as %#x, not %#x" % (
                  a.label, p, role, role_of_dev(sb, gone["dev_number"]),
                  want))
        check(sb["events"] > gone["events"], "%s: events of %s (%d) did "
              "not move past the failed member's (%d)" % (
                  a.label, p, sb["events"], gone["events"]))
        md = mdadm_examine(p)
        if md is not None:
            st = md["Array State"].split()[0]
            check(st[role] == "." and st.count("A") == len(a.paths) - 1 and
                  md["Events"] == str(sb["events"]),
                  "%s: mdadm --examine %s: Array State %s, Events %s; want "
                  "role %d missing, events %d" % (
                      a.label, p, md["Array State"], md["Events"], role,
                      sb["events"]))
    return sb["events"], gone["events"]


def inject(a, how, role, trigger, bg):
    """Fail member `role` while the load runs; returns the status once the
    member is faulty."""
    if how == "trigger":
        open(trigger, "w").close()
    elif how.startswith("fail"):
        a.ctl.fail(role)
    return a.ctl.wait_member(role, "faulty", alive=bg.check)


def degrade_under_load(a, rng, how, role, trigger):
    """Part 1 on a served array."""
    h = a.srv.connect()
    fill(h, a.model, a.geo.size, rng)
    h.flush()
    a.status_ok(a.ctl.status(), "optimal")
    w = Workload(a.srv, a.model, a.geo, rng)
    bg = Background(w).start()
    bg.wait(LOAD_BEFORE)
    before = w.snapshot()
    st = inject(a, how, role, trigger, bg)
    at = w.snapshot()
    removed = how.endswith("+remove")
    if removed:
        bg.wait(LOAD_AFTER / 2)
        r = a.ctl.run("remove", a.paths[role])
        check("missing" in r.stdout, "%s: remove printed %r" % (
            a.label, r.stdout))
        bg.wait(LOAD_AFTER / 2)
    else:
        bg.wait(LOAD_AFTER)
    bg.stop()
    w.close()
    end = w.snapshot()
    for kind in ("read", "write"):
        n = end.get(kind, 0) - at.get(kind, 0)
        check(n >= MIN_AFTER, "%s: only %d %ss after the failure (%s)" % (
            a.label, n, kind, format_counts(end)))
    check(before.get("read", 0) > 0 and before.get("write", 0) > 0,
          "%s: no load before the failure: %s" % (a.label, before))
    st = a.ctl.status()
    # Fast zeros the array cannot do without writing are refused, as the
    # client allows: they are all of the errors it may have answered.
    refused = end.get("fast-zero-unsupported", 0)
    check(st["io"]["zero"]["errors"] == refused,
          "%s: zero errors %d, fast zeros refused %d" % (
              a.label, st["io"]["zero"]["errors"], refused))
    st["io"]["zero"]["errors"] = 0
    a.status_ok(st, "degraded")
    m = st["members"][role]
    want = ("missing", None) if removed else ("faulty", a.paths[role])
    check((m["state"], m["path"]) == want, "%s: member %d: %s, want %s" % (
        a.label, role, m, want))
    check(a.paths[role] in st["reason"], "%s: reason %r does not name %s" % (
        a.label, st["reason"], a.paths[role]))
    others = [x for x in st["members"] if x["role"] != role]
    check(all(x["state"] == "in_sync" for x in others),
          "%s: other members: %s" % (a.label, others))
    if not how.startswith("fail"):
        check(m["read_errors"] + m["write_errors"] > 0,
              "%s: an injected failure counted no error: %s" % (a.label, m))
    a.events.wait("Fail %s %s" % (a.name, a.paths[role]))
    if removed:
        a.events.wait("MemberRemoved %s %s" % (a.name, a.paths[role]))
    verify_readback(a.srv, a.model, a.geo, a.label)
    print("ok %s: member %d failed (%s) under load: %s after it; degraded, "
          "%s, event Fail%s, 0 errors, reads exact" % (
              a.label, role, how, format_counts(
                  {k: end.get(k, 0) - at.get(k, 0) for k in end}), want[0],
              removed and " MemberRemoved" or ""), flush=True)
    return removed


def restart_degraded(a, rng, role, removed, stop, extra):
    """Part 2: stop, check the superblocks, start again with every member."""
    if stop == "kill":
        a.kill_while_writing(a.geo.size // 3, 3 * CHUNK)
    else:
        a.stop()
    events, gone = check_recorded_out(a, role, removed)
    sb = examine(a.paths[(role + 1) % len(a.paths)])
    want = "active" if stop == "kill" else "clean"
    check(sb["state"] == want, "%s: %s, but the superblocks say %s" % (
        a.label, "killed while writing" if stop == "kill" else "stopped",
        sb["state"]))
    if stop == "kill" and a.level == 5:
        why = a.refused(DIRTY_DEGRADED, extra=extra)
        print("ok %s: dirty and degraded: refused: %s" % (a.label, why),
              flush=True)
        extra = list(extra) + ["force=true"]
    st = a.serve(extra=extra)
    a.status_ok(st, "degraded")
    m = st["members"][role]
    check(m["state"] != "in_sync", "%s: restarted: the failed member is "
          "back in sync: %s" % (a.label, m))
    check(all(x["state"] == "in_sync" for x in st["members"]
              if x["role"] != role), "%s: restarted: %s" % (a.label, st))
    log = a.srv.stderr()
    check("member %s: recorded as %s" % (
        a.paths[role], "removed" if removed else "failed") in log,
          "%s: nbdkit did not say it left %s out:\n%s" % (
              a.label, a.paths[role], log))
    a.events.wait("DegradedArray %s" % a.name)
    verify_readback(a.srv, a.model, a.geo, a.label)
    w = Workload(a.srv, a.model, a.geo, rng)
    bg = Background(w).start()
    bg.wait(LOAD_RESTART)
    bg.stop()
    w.close()
    a.srv.close_handles()
    print("ok %s: %s, started again with every member: degraded, role %d "
          "%s, recorded %s (events %d > %d), event DegradedArray, data "
          "exact, load %s" % (a.label, "kill -9" if stop == "kill" else
                              "stopped", role, m["state"], "removed" if
                              removed else "faulty", events, gone,
                              format_counts(w.snapshot())), flush=True)


def chunk_lost(geo, k, lost):
    """Is array chunk k unreadable with the members in `lost` gone?"""
    if geo.level == 5:
        return len(lost) > 1 and geo.copies(k)[0][0] in lost
    return all(m in lost for m, _ in geo.copies(k))


def read_expect(h, a, off, n, lost, label):
    """Read off+n: EIO if lost, else the model's bytes."""
    try:
        got = h.pread(n, off)
    except nbd.Error as e:
        check(lost and nbd_errno(e) == errno.EIO, "%s: %s: read %d+%d "
              "failed: %s" % (a.label, label, off, n, e))
        return 1
    check(not lost, "%s: %s: read %d+%d of lost data succeeded" % (
        a.label, label, off, n))
    bad = a.model.mismatch(off, got)
    check(bad is None, "%s: %s: read %d+%d: %s" % (
        a.label, label, off, n, bad))
    return 0


def read_all_chunks(h, a, lost, skip):
    """Read every chunk (but those in skip): returns (EIO, exact)."""
    geo, eio, exact = a.geo, 0, 0
    for k in range(geo.chunks):
        if k in skip:
            continue
        off = k * geo.chunk
        n = min(geo.chunk, geo.size - off)
        e = read_expect(h, a, off, n, chunk_lost(geo, k, lost), "chunk %d"
                        % k)
        eio += e
        exact += 1 - e
    return eio, exact


def write_expect_eio(h, a, off, n, label):
    try:
        h.pwrite(bytes([0x5a]) * n, off)
    except nbd.Error as e:
        check(nbd_errno(e) == errno.EIO, "%s: %s: write %d+%d failed with "
              "%s, want EIO" % (a.label, label, off, n, e))
        return
    fail("%s: %s: write %d+%d succeeded" % (a.label, label, off, n))


def second_failure(a, first, second, trigger):
    """Part 3: member `second` fails too (its rule's trigger)."""
    geo, lost = a.geo, {first, second}
    why = a.ctl.refused("last copy", "fail", str(second))
    # Marking the array clean after the last write writes every member's
    # superblock: that must not be what fails `second`.
    a.ctl.wait_clean()
    open(trigger, "w").close()
    h = a.srv.connect()
    eio, exact = read_all_chunks(h, a, lost, set())
    check(eio > 0, "%s: nothing lost with members %s gone" % (a.label,
                                                              sorted(lost)))
    check(exact > 0 or a.level == 1, "%s: nothing readable" % a.label)
    st = a.ctl.status()
    a.status_ok(st, "degraded", io_ok=False)
    check(st["members"][second]["state"] == "in_sync" and
          st["members"][second]["read_errors"] > 0,
          "%s: member %d after its reads failed: %s" % (
              a.label, second, st["members"][second]))
    # A write where `second` holds a copy (RAID 5: a whole stripe, so that
    # it reads nothing first): the array cannot keep it, and fails.
    if a.level == 5:
        unit = geo.n - 1
        k = next(k for k in range(0, geo.chunks, unit)
                 if any(geo.copies(j)[0][0] == second
                        for j in range(k, k + unit)))
    else:
        unit = 1
        k = next(k for k in range(geo.chunks) if chunk_lost(geo, k, lost))
    off, unit = k * geo.chunk, unit * geo.chunk
    write_expect_eio(h, a, off, unit, "write over member %d" % second)
    skip = set(range(k, k + unit // geo.chunk))   # unknown from here on
    st = a.ctl.status()
    a.status_ok(st, "failed", io_ok=False)
    check(a.paths[second] in st["reason"], "%s: reason %r does not name %s"
          % (a.label, st["reason"], a.paths[second]))
    a.events.wait("ArrayFailed %s %s" % (a.name, a.paths[second]))
    # Failed: every write answers EIO, even where every copy is alive.
    alive = [j for j in range(geo.chunks)
             if j not in skip and not chunk_lost(geo, j, lost)]
    where = alive[0] if alive else 0
    write_expect_eio(h, a, where * geo.chunk, 4096, "write to the failed "
                     "array")
    eio2, exact2 = read_all_chunks(h, a, lost, skip)
    st = a.ctl.status()
    io = st["io"]
    check(io["read"]["errors"] == eio + eio2 and io["write"]["errors"] == 2,
          "%s: status counts read errors %d (want %d), write errors %d "
          "(want 2)" % (a.label, io["read"]["errors"], eio + eio2,
                        io["write"]["errors"]))
    a.srv.close_handles()
    print("ok %s: member %d fails too: fail refused (%s); %d chunks EIO, "
          "%d exact; a write there: failed, event ArrayFailed, writes EIO, "
          "reads as before" % (a.label, second, why.split(": ")[-1], eio,
                               exact), flush=True)


def level_case(d, rng, level, layout, n, how, role, stop, second):
    label = "raid%d%s x%d" % (level, "-" + layout if layout else "", n)
    if not selected(label):
        return
    a = Array(os.path.join(d, label.replace(" ", "_")), label, level,
              layout, n, MEMBER)
    trigger = os.path.join(a.folder, "fail-%d" % role)
    extra = []
    if how == "trigger":
        extra = ["fault=%d:trigger=%s" % (role, trigger)]
    elif how == "after":
        # after= counts from the start: the fill writes the member's whole
        # data area first, then the load's first few MiB pass.
        extra = ["fault=%d:after=%d" % (role, a.geo.sizes[role] + 2 * MiB +
                                        rng.randrange(2 * MiB))]
    start = time.monotonic()
    a.serve(extra=extra)
    removed = degrade_under_load(a, rng, how, role, trigger)
    extra2 = []
    trigger2 = os.path.join(a.folder, "fail-%d" % second) \
        if second is not None else None
    if second is not None:
        extra2 = ["fault=%d:trigger=%s" % (second, trigger2)]
    restart_degraded(a, rng, role, removed, stop, extra2)
    if second is not None:
        second_failure(a, role, second, trigger2)
    a.stop()
    a.events_were(*["Fail " + a.paths[role]] +
                  (["MemberRemoved " + a.paths[role]] if removed else []) +
                  ["DegradedArray"] +
                  (["ArrayFailed " + a.paths[second]] if second is not None
                   else []))
    print("ok %s: the events, in order: %s; %.1fs" % (
        label, ", ".join(ln.split()[0] for ln in a.events.lines()),
        time.monotonic() - start), flush=True)


def read_error_repair(d, rng):
    """Part 4, on a healthy RAID 5 x3."""
    a = Array(os.path.join(d, "repair"), "raid5 x3 read errors", 5,
              "left-symmetric", 3, SMALL)
    geo = a.geo
    x = 3 * geo.chunk + 8 * KiB            # the sector that heals
    ra, oa = place(a.paths, x)
    y = next(k * geo.chunk + 4 * KiB for k in range(geo.chunks)
             if geo.copies(k)[0][0] != ra)
    rb, ob = place(a.paths, y)             # the one whose rewrite fails
    trigger = os.path.join(a.folder, "bad-%d" % rb)
    a.serve(extra=["fault=%d:ops=read,range=%d+4k,count=2" % (ra, oa),
                   "fault=%d:ops=rw,range=%d+4k,trigger=%s" % (rb, ob,
                                                               trigger)])
    h = a.srv.connect()
    fill(h, a.model, geo.size, rng)       # whole stripes: no reads
    h.flush()
    st = a.ctl.status()
    check(all(m["read_errors"] == 0 for m in st["members"]),
          "%s: read errors before any read: %s" % (a.label, st))
    read_expect(h, a, x, 4096, False, "the bad sector")
    st = a.ctl.status()
    a.status_ok(st, "optimal")
    for m in st["members"]:
        want = (1, 8) if m["role"] == ra else (0, 0)
        check((m["read_errors"], m["corrected_reads"]) == want and
              m["write_errors"] == 0 and m["state"] == "in_sync",
              "%s: member %d: %s, want read_errors %d corrected_reads %d" % (
                  a.label, m["role"], m, want[0], want[1]))
    check("corrected" in a.srv.stderr(), "%s: nbdkit did not log the "
          "correction:\n%s" % (a.label, a.srv.stderr()))
    verify_readback(a.srv, a.model, geo, a.label)
    st = a.ctl.status()
    check(st["members"][ra]["read_errors"] == 1, "%s: the rewritten sector "
          "failed again: %s" % (a.label, st["members"][ra]))
    print("ok %s: member %d's sector fails a read once: served from parity, "
          "rewritten, read_errors 1, corrected_reads 8, optimal" % (
              a.label, ra), flush=True)
    open(trigger, "w").close()
    read_expect(h, a, y, 4096, False, "the sector that cannot be rewritten")
    st = a.ctl.status()
    a.status_ok(st, "degraded")
    m = st["members"][rb]
    check(m["state"] == "faulty" and m["read_errors"] >= 1 and
          m["write_errors"] >= 1 and "rewriting it failed" in st["reason"],
          "%s: member %d: %s, reason %r" % (a.label, rb, m, st["reason"]))
    a.events.wait("Fail %s %s" % (a.name, a.paths[rb]))
    verify_readback(a.srv, a.model, geo, a.label)
    a.stop()
    a.events_were("Fail " + a.paths[rb])
    print("ok %s: member %d's sector fails its rewrite too: faulty, "
          "degraded, event Fail (the only event), data exact" % (a.label, rb),
          flush=True)


def start_refusals(d, rng):
    """Part 5, on a RAID 5 x3: degraded=ok, dirty and degraded, force."""
    a = Array(os.path.join(d, "starts"), "raid5 x3 starts", 5,
              "right-asymmetric", 3, SMALL)
    a.serve()
    h = a.srv.connect()
    fill(h, a.model, a.geo.size, rng)
    a.stop()
    two = a.paths[:2]
    why = a.refused("degraded=ok", members=two)
    check("role 2" in why, "%s: the refusal does not name role 2: %s" % (
        a.label, why))
    print("ok %s: member 2 not given, in sync in the superblocks: refused: "
          "%s" % (a.label, why), flush=True)
    st = a.serve(members=two, extra=["degraded=ok"])
    a.status_ok(st, "degraded")
    check(st["members"][2]["state"] == "missing" and
          st["members"][2]["path"] is None, "%s: role 2: %s" % (
              a.label, st["members"][2]))
    a.events.wait("DegradedArray %s" % a.name)
    verify_readback(a.srv, a.model, a.geo, a.label)
    a.stop()
    print("ok %s: degraded=ok: served degraded, role 2 missing, event "
          "DegradedArray, data exact" % a.label, flush=True)
    # Every member again: nothing was written without member 2, so nothing
    # recorded it out; then a kill -9 while writing: dirty.
    st = a.serve()
    a.status_ok(st, "optimal")
    a.kill_while_writing(a.geo.chunk * 5 + 512, 2 * a.geo.chunk)
    check(examine(a.paths[0])["state"] == "active", "%s: killed while "
          "writing, but the superblocks say clean" % a.label)
    why = a.refused(DIRTY_DEGRADED, members=two, extra=["degraded=ok"])
    print("ok %s: killed while writing (dirty), member 2 not given: "
          "refused even with degraded=ok: %s" % (a.label, why), flush=True)
    st = a.serve(members=two, extra=["degraded=ok", "force=true"])
    a.status_ok(st, "degraded")
    check(st["members"][2]["state"] == "missing", "%s: role 2: %s" % (
        a.label, st["members"][2]))
    verify_readback(a.srv, a.model, a.geo, a.label)
    a.stop()
    a.events_were("DegradedArray", "DegradedArray")
    print("ok %s: force=true: dirty and degraded served, data exact" %
          a.label, flush=True)


def main():
    rng = random.Random(seed("test-degraded"))
    plugin()
    cli()
    start = time.monotonic()
    # Unix socket paths are short: the temp dir is in /tmp.
    with TempDir(base="/tmp") as d:
        for case in CASES:
            level_case(d, rng, *case)
        if selected("read errors"):
            read_error_repair(d, rng)
        if selected("starts"):
            start_refusals(d, rng)
    print("all parts: %.1fs" % (time.monotonic() - start), flush=True)


run_main(main)
