#!/usr/bin/python3
"""Fault points: nbdkit killed (kill -9) at each superblock write of a
member failure's record, of a spare taking the role, and of a recovery
checkpoint, then started again with the same settings (no force=, no
degraded=ok): it must assemble, and nothing acknowledged may be lost.

How a point is reached: a fault= rule on a survivor holds its Nth
superblock write since the start (range= its 4 KiB superblock, after= the
writes before it, count=1, latency=3600s,error=none) and touches a file as
it is reached; the test waits for that file and kills nbdkit.  The writes
of one update go to the members in role order, one after the other, so
the members before the holder have that update and those after it have
not: each point is one exact crash state.

Every case: md arrays made by `nbdraid create`; a first nbdkit writes the
model (random bytes over the whole array) and stops cleanly; the second
one, with the rule, has its member fail, and while the write is held a
write on another connection (the gap write) is sent: acknowledged or not
within 0.5 s, it is in the model only if acknowledged.  After the restart:
the failed member is out exactly when a survivor's superblock records it;
every byte reads back through nbdkit as the model says, and (RAID 1) from
every member in sync, read straight from its file (the failed member too
when it came back in sync: nothing acknowledged may have skipped it).

 1. failure, RAID 1 x3: member 0's data writes fail (fault= trigger);
    the write that finds out records it: held at each survivor's write of
    each of the two updates (4 points; events +1 each).  Once more behind
    cache=ram, the gap a write and a FLUSH (its write-back in the gap).
 2. failure, RAID 5 x3, clean: `nbdraid fail 0`: the same 4 points (a
    crash while dirty and degraded would need force=, as md's).
 3. spare takeover, RAID 1 x2 + spare: `fail 0`, the member removed and
    the spare taking role 0: held at the survivor's write of each.
 4. recovery checkpoint: then the rebuild: held at the survivor's write
    of the first and second checkpoints (the spare's own comes first), and
    in a RAID 1 x3 whose member 2 is rebuilt, at member 1's write of the
    first (member 0 has it, the spare not); the restart resumes the
    rebuild, which must end with every copy exact.
 5. superblock write errors, RAID 1 x2 and RAID 5 x3 behind cache=ram:
    member 1 fails every write from the start; four connections write
    (some with FUA) and flush at once, so that several write-backs mark
    the array active together: no request may fail (one answered EIO in
    about half the runs: a mark retried after another thread's kept the
    failed try's error), the member ends faulty, every byte reads back.
    And a recovery whose checkpoint a survivor fails to write (RAID 1 x3
    + spare, member 2 rebuilt, member 0's superblock writes failing from
    the first checkpoint on): member 0 is failed, the rebuild goes on from
    member 1 and ends (it stopped there, for good).
$NBDRAID_SEED replays a run; $NBDRAID_ONLY (a regex) selects cases.
"""

import os
import random
import subprocess
import sys
import time

import nbd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    KiB, MiB, TempDir, check, fail, make_members, run_main, run_threads,
    seed, selected)
from raidtest.mdarray import (  # noqa: E402
    MD_ROLE_FAULTY, Control, cli, create, examine)
from raidtest.server import Server, stop_clean  # noqa: E402

MEMBER = 16 * MiB
SB = 4 * KiB            # one superblock write: md 1.2's, 4 KiB at 4 KiB
HOLD_WAIT = 20          # seconds for a held write to be reached
GAP_WAIT = 0.5          # seconds a gap write gets to be acknowledged
W1 = 64 * KiB           # the write that finds the member failing


class Case:
    def __init__(self, label, level, n, how, holder, nth, spare=False,
                 rebuild_points=False, victim=0, cache=False):
        self.label = label
        self.cache = cache      # cache=ram: the gap is a write and a FLUSH
        self.victim = victim    # the member that fails
        self.level = level
        self.n = n              # members, the spare not counted
        self.how = how          # "write": a data write error; "fail": ctl
        self.holder = holder    # the survivor whose write is held
        self.nth = nth          # its nth superblock write since the start
        self.spare = spare
        self.rebuild = rebuild_points


def cases():
    out = []
    for nth, what in ((2, "update 1"), (3, "update 2")):
        for h in (1, 2):
            out.append(Case("failure raid1 x3: member %d's %s" % (h, what),
                            1, 3, "write", h, nth))
    # Behind cache=ram: the gap's write reaches the members by write-back
    # (W1 goes through with FUA).
    out.append(Case("failure raid1 x3, cache=ram: member 1's update 1",
                    1, 3, "write", 1, 2, cache=True))
    for nth, what in ((1, "update 1"), (2, "update 2")):
        for h in (1, 2):
            out.append(Case("failure raid5 x3: member %d's %s" % (h, what),
                            5, 3, "fail", h, nth))
    # The spare, kept as it is, is written at the start (events + 1).
    for nth, what in ((4, "removal"), (5, "spare taking the role")):
        out.append(Case("spare raid1 x2: member 1's %s" % what,
                        1, 2, "fail", 1, nth, spare=True))
    for nth, what in ((6, "checkpoint 1"), (7, "checkpoint 2")):
        out.append(Case("recovery raid1 x2: member 1's %s" % what,
                        1, 2, "fail", 1, nth, spare=True,
                        rebuild_points=True))
    # The spare rebuilt last in role order: held before its own write.
    out.append(Case("recovery raid1 x3, member 2 rebuilt: member 1's "
                    "checkpoint 1", 1, 3, "fail", 1, 6, spare=True,
                    rebuild_points=True, victim=2))
    return out


def read_file(path, off, n):
    with open(path, "rb") as f:
        f.seek(off)
        return f.read(n)


def wait_file(path, srv, what):
    deadline = time.monotonic() + HOLD_WAIT
    while not os.path.exists(path):
        if srv.proc.poll() is not None:
            fail("%s: nbdkit exited before %s\n%s" % (
                what, what, srv.stderr()))
        if time.monotonic() > deadline:
            fail("%s was never reached within %ds\n%s" % (
                what, HOLD_WAIT, srv.stderr()))
        time.sleep(0.005)


def lost(srv, what, e):
    """A request failed: say how nbdkit is (its exit status, if it died)."""
    time.sleep(0.5)
    fail("%s: %s; nbdkit exit status %s\n%s" % (
        what, e, srv.proc.poll(), srv.stderr()))


def fill_model(srv, size, rng):
    h = srv.connect()
    model = bytearray(rng.randbytes(size))
    try:
        for off in range(0, size, 4 * MiB):
            h.pwrite(bytes(model[off:off + 4 * MiB]), off)
        h.flush()
    except nbd.Error as e:
        lost(srv, "writing the model", e)
    return model


def answered(srv, h, cookie, deadline, what):
    """Has the request answered (success) by the deadline?"""
    while time.monotonic() < deadline:
        h.poll(10)
        try:
            if h.aio_command_completed(cookie):
                return True
        except nbd.Error as e:
            lost(srv, what, e)
    return False


def gap_write(srv, model, off, rng, flush):
    """A write on a connection of its own while the record is held (and,
    behind a cache, a FLUSH after it: only that makes it durable): in the
    model if acknowledged within GAP_WAIT (returns True); else its bytes
    may be there or not (returns them)."""
    h = srv.connect()
    data = rng.randbytes(64 * KiB)
    deadline = time.monotonic() + GAP_WAIT
    cookie = h.aio_pwrite(nbd.Buffer.from_bytearray(bytearray(data)), off)
    done = answered(srv, h, cookie, deadline, "the gap write")
    if done and flush:
        done = answered(srv, h, h.aio_flush(), deadline, "the gap flush")
    if done:
        model[off:off + len(data)] = data
        return True
    return data


def first_bad(got, model, at, gap_off, gap):
    """The first byte of got (array bytes from `at`) that is not the
    model's, nor (in the gap write's range, not acknowledged) its bytes:
    its array offset, or None."""
    end = at + len(got)
    lo, hi = gap_off, gap_off + (0 if gap is True else len(gap))
    lo, hi = max(at, min(lo, end)), max(at, min(hi, end))
    for a, b in ((at, lo), (hi, end)):     # outside the gap: exact
        if got[a - at:b - at] != model[a:b]:
            return next(x for x in range(a, b) if got[x - at] != model[x])
    for x in range(lo, hi):                # inside: old or new bytes
        if got[x - at] != model[x] and got[x - at] != gap[x - gap_off]:
            return x
    return None


def check_point(c, paths, spare, events0):
    """The crash is where the case says: the holder took nth - 1 updates
    since the start, the members before it in role order (the spare in
    role 0 once it took it) one more, those after it as many; the spare
    has its role from the takeover on, and a recovery offset from the
    first checkpoint on."""
    for i in range(c.n):
        if i == c.victim:
            continue
        ev = examine(paths[i])["events"]
        want = events0 + c.nth - (0 if i < c.holder else 1)
        check(ev == want, "%s: member %d at events %d, want %d" % (
            c.label, i, ev, want))
    if not c.spare:
        return
    sp = examine(spare)
    if c.nth <= 4:
        check(sp["role"] == 0xffff and sp["events"] == events0 + c.nth - 1,
              "%s: the spare is %s" % (c.label, sp))
        return
    before = c.victim < c.holder    # written before the holder
    check(sp["role"] == c.victim and
          sp["events"] == events0 + c.nth - (0 if before else 1),
          "%s: the spare is %s" % (c.label, sp))
    rec = sp["recovery_offset_sectors"]
    check((rec > 0) == (c.nth > 5 if before else c.nth > 6) and
          sp["feature_map"] & 2,
          "%s: the spare's recovery offset is %d" % (c.label, rec))


def run_case(c, rng):
    with TempDir() as d:
        paths = make_members(d, [MEMBER] * c.n)
        create(paths, c.level)
        sb = examine(paths[0])
        data_off = sb["data_offset_sectors"] * 512
        sb_off = sb["super_offset_sectors"] * 512
        check(sb_off == SB, "superblock at %d, the rule expects %d" % (
            sb_off, SB))
        size = sb["array_bytes"]
        spare = os.path.join(d, "spare.img")
        ctl = os.path.join(d, "ctl")
        base = ["level=%d" % c.level] + ["member=%s" % p for p in paths] + [
            "control=%s" % ctl]
        if c.cache:
            base.append("cache=ram")
        if c.spare:
            with open(spare, "wb") as f:
                f.truncate(MEMBER)
            base.append("spare=%s" % spare)
        # The model, written by a first nbdkit that stops cleanly.
        with Server(base) as srv:
            model = fill_model(srv, size, rng)
            stop_clean(srv, c.label)
        events0 = examine(paths[1])["events"]
        at = os.path.join(d, "reached")
        trig = os.path.join(d, "fail-member")
        rules = ["fault=%d:ops=write,range=%d+%d,%scount=1,latency=3600s,"
                 "error=none,touch=%s" % (
                     c.holder, SB, SB,
                     "after=%d," % ((c.nth - 1) * SB) if c.nth > 1 else "",
                     at)]
        if c.how == "write":
            rules.append("fault=%d:ops=write,range=%d+%d,trigger=%s" % (
                c.victim, data_off, MEMBER - data_off, trig))
        acked = False
        gap_off = size // 2
        with Server(base + rules) as srv:
            h = srv.connect()
            failer = None
            if c.how == "write":
                open(trig, "w").close()
                # W1 rewrites what the model holds: acknowledged or not,
                # its bytes are the model's.
                h.aio_pwrite(nbd.Buffer.from_bytearray(model[0:W1]), 0,
                             flags=nbd.CMD_FLAG_FUA if c.cache else 0)
            else:
                failer = subprocess.Popen(
                    [cli(), "--control", ctl, "fail", str(c.victim)],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_file(at, srv, "member %d's superblock write %d" % (
                c.holder, c.nth))
            acked = gap_write(srv, model, gap_off, rng, c.cache)
            srv.kill9()
            if failer:
                failer.kill()
                failer.wait()
        check_point(c, paths, spare, events0)
        recorded = any(
            examine(paths[i])["roles"][c.victim] in (MD_ROLE_FAULTY, 0xffff)
            for i in range(c.n) if i != c.victim)
        # Started again: the same settings, no force=, no degraded=ok.
        with Server(base) as srv:
            st = Control(ctl).status()
            s0 = st["members"][c.victim]
            if c.spare and recorded:
                check(s0["path"] == spare, "%s: role 0 is %s, not the "
                      "spare" % (c.label, s0["path"]))
            elif recorded:
                check(s0["state"] != "in_sync", "%s: the failed member "
                      "came back: %s" % (c.label, st))
            else:
                check(s0["state"] == "in_sync" and
                      s0["path"] == paths[c.victim],
                      "%s: nothing recorded, yet the member is out: %s" % (
                          c.label, st))
            if c.spare and recorded:
                Control(ctl).wait_member(c.victim, "in_sync", timeout=60)
            h = srv.connect()
            for off in range(0, size, 4 * MiB):
                got = h.pread(min(4 * MiB, size - off), off)
                x = None if got == model[off:off + len(got)] else \
                    first_bad(got, model, off, gap_off, acked)
                if x is not None:
                    fail("%s: array byte %d reads 0x%02x, acknowledged "
                         "0x%02x (gap write %s)" % (
                             c.label, x, got[x - off], model[x],
                             "acknowledged" if acked is True
                             else "not answered"))
            st = Control(ctl).status()
            stop_clean(srv, c.label)
        if c.level == 1:
            for m in st["members"]:
                if m["state"] != "in_sync":
                    continue
                got = read_file(m["path"], data_off, size)
                x = None if got == model else \
                    first_bad(got, model, 0, gap_off, acked)
                if x is not None:
                    fail("%s: member %s byte %d is 0x%02x, acknowledged "
                         "0x%02x (gap write %s)" % (
                             c.label, m["path"], x, got[x], model[x],
                             "acknowledged" if acked is True
                             else "not answered"))
        print("%s: ok (%s, gap write %s)" % (
            c.label, "recorded" if recorded else "not recorded",
            "acknowledged" if acked is True else "held"), flush=True)


def sb_write_errors(level, n, rng):
    """Part 5: a member failing every write, writers behind cache=ram."""
    label = "superblock write errors raid%d x%d" % (level, n)
    with TempDir() as d:
        paths = make_members(d, [MEMBER] * n)
        create(paths, level)
        ctl = os.path.join(d, "ctl")
        params = ["level=%d" % level, "cache=ram", "control=%s" % ctl,
                  "fault=1:ops=write"] + ["member=%s" % p for p in paths]
        with Server(params) as srv:
            size = srv.connect().get_size()
            model = bytearray(size)
            region = size // 4 // (64 * KiB) * (64 * KiB)
            hs = [srv.connect() for _ in range(4)]
            seeds = [rng.randrange(1 << 30) for _ in hs]

            def writer(i, h, s):
                r = random.Random(s)
                for k in range(60):
                    n = r.randint(1, 16) * 4 * KiB
                    off = i * region + r.randrange(0, region - n, 4 * KiB)
                    data = r.randbytes(n)
                    flags = nbd.CMD_FLAG_FUA if k % 5 == 0 else 0
                    h.pwrite(data, off, flags=flags)
                    model[off:off + n] = data
                    if k % 20 == 19:
                        h.flush()
            run_threads(writer, [(h, s) for h, s in zip(hs, seeds)])
            hs[0].flush()
            st = Control(ctl).status()
            check(st["members"][1]["state"] == "faulty",
                  "%s: member 1 is %s" % (label, st["members"][1]))
            got = hs[0].pread(size, 0)
            x = None if got == model else first_bad(got, model, 0, 0, True)
            check(x is None, "%s: byte %d reads 0x%02x, acknowledged 0x%02x"
                  % (label, x or 0, got[x or 0], model[x or 0]))
            stop_clean(srv, label)
    print("%s: ok" % label, flush=True)


def checkpoint_write_error(rng):
    """Part 5: a survivor fails the recovery checkpoint's write."""
    label = "superblock write errors at a checkpoint raid1 x3"
    with TempDir() as d:
        paths = make_members(d, [MEMBER] * 3)
        create(paths, 1)
        size = examine(paths[0])["array_bytes"]
        data_off = examine(paths[0])["data_offset_sectors"] * 512
        spare = os.path.join(d, "spare.img")
        with open(spare, "wb") as f:
            f.truncate(MEMBER)
        ctl = os.path.join(d, "ctl")
        base = ["level=1", "control=%s" % ctl, "spare=%s" % spare] + [
            "member=%s" % p for p in paths]
        with Server(base) as srv:
            model = fill_model(srv, size, rng)
            stop_clean(srv, label)
        # Member 0's 6th superblock write on: the spare kept (1), the
        # failure (2, 3), the removal (4), the takeover (5), checkpoint 1.
        rule = "fault=0:ops=write,range=%d+%d,after=%d" % (SB, SB, 5 * SB)
        with Server(base + [rule]) as srv:
            c = Control(ctl)
            c.run("fail", "2")  # (it names the spare that took the role)
            st = c.wait_member(2, "in_sync", timeout=60)
            check(st["members"][2]["path"] == spare and
                  st["members"][0]["state"] == "faulty",
                  "%s: %s" % (label, st))
            got = srv.connect().pread(size, 0)
            check(got == model, "%s: the array does not read back" % label)
            stop_clean(srv, label)
        for p in (paths[1], spare):
            check(read_file(p, data_off, size) == model,
                  "%s: %s does not hold the array" % (label, p))
    print("%s: ok" % label, flush=True)


def main():
    rng = random.Random(seed("test-fault-points"))
    cli()
    for c in cases():
        if selected(c.label):
            run_case(c, rng)
    for level, n in ((1, 2), (5, 3)):
        if selected("superblock write errors raid%d x%d" % (level, n)):
            sb_write_errors(level, n, rng)
    if selected("superblock write errors at a checkpoint raid1 x3"):
        checkpoint_write_error(rng)


run_main(main)
