#!/usr/bin/python3
"""fault= through a real nbdkit: RAID 0 over 2 member files, chunk 64K.

  * fault=1:ops=read,range=... makes member 1's bytes [196K+4K, 196K+12K)
    (array chunk 7) a bad range: every read touching it, down to its first
    and last byte, fails at the client with EIO; a byte either side, and
    every other read, is byte-exact against what was written (writes pass:
    the rule is ops=read); nbdkit logs the member, operation and range;
  * fault=0:ops=read,trigger=PATH fails member 0's reads with EIO while
    PATH exists: none before, all of member 0's while it is there (member
    1's outside the bad range still pass), none after it is removed;
  * with md superblocks ROLE is the superblock's role, not the order of
    member=: members created a, b and given as b, a, fault=1 fails the
    reads of b's chunks (array chunk 1) and not a's (skipped without
    $NBDRAID_CLI);
  * a bad fault= value or a role the array lacks stops nbdkit at startup
    with its message.
Nothing is written after the first failed read (a RAID 0 that has failed
may refuse writes).  errno= is proven in the unit test: what the client
gets for data it cannot read is the array's answer (EIO), not
necessarily the member's errno.
"""

import errno
import os
import random
import subprocess
import sys

import nbd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    KiB, MiB, TempDir, check, fail, make_members, plugin, run_main, seed)
from raidtest.geometry import Geometry  # noqa: E402
from raidtest.model import pattern  # noqa: E402
from raidtest.server import Server, nbd_errno, run_expect_failure  # noqa

CHUNK = 64 * KiB
BAD_CHUNK = 7                     # array chunk 7: member 1, member chunk 3
BAD_MEMBER_OFF = 3 * CHUNK + 4 * KiB
BAD_LEN = 8 * KiB
BAD_LO = BAD_CHUNK * CHUNK + 4 * KiB   # the same bytes in the array
BAD_HI = BAD_LO + BAD_LEN


def read_fails(h, off, n, want_errno, label):
    try:
        h.pread(n, off)
    except nbd.Error as e:
        check(nbd_errno(e) == want_errno, "%s: read %d+%d failed with %s, "
              "expected %s" % (label, off, n, e, errno.errorcode[want_errno]))
        return
    fail("%s: read %d+%d succeeded; it should fail with %s" % (
        label, off, n, errno.errorcode[want_errno]))


def read_exact(h, data, off, n, label):
    try:
        got = h.pread(n, off)
    except nbd.Error as e:
        fail("%s: read %d+%d failed: %s" % (label, off, n, e))
    check(got == data[off:off + n], "%s: read %d+%d differs from what was "
          "written" % (label, off, n))


def touches_bad(off, n):
    return off < BAD_HI and off + n > BAD_LO


def on_member(geo, off, n, member):
    """Does array range off+n touch member `member`?"""
    first, last = off // CHUNK, (off + n - 1) // CHUNK
    return any(geo.copies(k)[0][0] == member for k in range(first, last + 1))


def bad_range(h, geo, data, rng):
    # The map agrees: array BAD_LO is member 1's BAD_MEMBER_OFF.
    check(geo.copies(BAD_CHUNK) == [(1, BAD_MEMBER_OFF // CHUNK)],
          "chunk %d is not member 1's chunk 3" % BAD_CHUNK)
    for off, n in [(BAD_LO, 1), (BAD_HI - 1, 1), (BAD_LO - 1, 2),
                   (BAD_HI - 1, 2), (BAD_CHUNK * CHUNK, CHUNK),
                   (0, geo.size), (BAD_LO + 100, 4000)]:
        read_fails(h, off, n, errno.EIO, "bad range")
    for off, n in [(BAD_LO - 1, 1), (BAD_HI, 1), (BAD_LO - 4096, 4096),
                   (BAD_HI, 4096), (BAD_CHUNK * CHUNK, 4 * KiB),
                   (BAD_HI, (BAD_CHUNK + 1) * CHUNK - BAD_HI)]:
        read_exact(h, data, off, n, "beside the bad range")
    # Every chunk but the bad one, whole; then random reads.
    for k in range(geo.chunks):
        if k != BAD_CHUNK:
            read_exact(h, data, k * CHUNK, CHUNK, "chunk %d" % k)
    for _ in range(300):
        n = rng.randint(1, 3 * CHUNK)
        off = rng.randrange(0, geo.size - n + 1)
        if touches_bad(off, n):
            read_fails(h, off, n, errno.EIO, "random read")
        else:
            read_exact(h, data, off, n, "random read")
    print("ok bad range: member 1 bytes %d+%d" % (BAD_MEMBER_OFF, BAD_LEN))


def trigger(h, geo, data, rng, path):
    reads = []
    for _ in range(100):
        n = rng.randint(1, 2 * CHUNK)
        off = rng.randrange(0, geo.size - n + 1)
        if not touches_bad(off, n):
            reads.append((off, n))
    check(not os.path.exists(path), "%s exists already" % path)
    for off, n in reads:
        read_exact(h, data, off, n, "trigger absent")
    open(path, "w").close()
    fails = 0
    for off, n in reads:
        if on_member(geo, off, n, 0):
            read_fails(h, off, n, errno.EIO, "trigger present")
            fails += 1
        else:
            read_exact(h, data, off, n, "trigger present")
    check(fails > 0 and fails < len(reads),
          "trigger: %d of %d reads touch member 0" % (fails, len(reads)))
    os.unlink(path)
    for off, n in reads:
        read_exact(h, data, off, n, "trigger removed")
    print("ok trigger: %d of %d reads failed while %s existed" % (
        fails, len(reads), path))


def startup_refusals(paths, geo):
    for extra, want in [
            ("fault=1:rate=2", "fault '1:rate=2': rate must be from 0 to 1"),
            ("fault=2:ops=read", "fault '2:ops=read': no role 2: the array "
             "has 2 members (roles 0 to 1)")]:
        rc, err = run_expect_failure(geo.params(paths, [extra]))
        check(rc != 0 and want in err, "%s: exit %d, stderr lacks %r:\n%s"
              % (extra, rc, want, err))
        print("ok refused %s: %s" % (extra, want))


def md_roles(d):
    cli = os.environ.get("NBDRAID_CLI")
    if not cli or not os.path.isfile(cli):
        print("md roles case skipped: NBDRAID_CLI not built")
        return
    folder = os.path.join(d, "md")
    os.mkdir(folder)
    a, b = make_members(folder, [4 * MiB, 4 * MiB])
    r = subprocess.run([cli, "create", "--level", "0", "--chunk", "64K",
                        a, b], capture_output=True, text=True)
    check(r.returncode == 0, "nbdraid create: exit %d\n%s%s" % (
        r.returncode, r.stdout, r.stderr))
    with Server(["member=%s" % b, "member=%s" % a,
                 "fault=1:ops=read"]) as srv:
        h = srv.connect()
        h.pread(CHUNK, 0)                         # chunk 0: role 0, a
        read_fails(h, CHUNK, CHUNK, errno.EIO, "md role 1")
        read_fails(h, 3 * CHUNK + 5, 1, errno.EIO, "md role 1")
        h.pread(CHUNK, 2 * CHUNK)
        log = srv.stderr()
        check("member 1 (%s): read at" % b in log,
              "the failed read was not member 1 (%s):\n%s" % (b, log))
    print("ok md roles: fault=1 is %s, given first" % b)


def main():
    rng = random.Random(seed("test-fault-inject"))
    plugin()
    with TempDir() as d:
        geo = Geometry(0, [MiB, MiB], CHUNK)
        paths = make_members(d, [MiB, MiB])
        startup_refusals(paths, geo)
        md_roles(d)
        flag = os.path.join(d, "fail-0")
        faults = ["fault=1:ops=read,range=%d+%d" % (BAD_MEMBER_OFF, BAD_LEN),
                  "fault=0:ops=read,trigger=%s" % flag]
        with Server(geo.params(paths, faults)) as srv:
            h = srv.connect()
            check(h.get_size() == geo.size, "size %d" % h.get_size())
            data = pattern(rng, geo.size)
            for off in range(0, geo.size, MiB):
                h.pwrite(data[off:off + MiB], off)
            h.flush()
            bad_range(h, geo, data, rng)
            trigger(h, geo, data, rng, flag)
            log = srv.stderr()
            check("member 1 (%s): read at" % paths[1] in log and
                  "Input/output error" in log,
                  "nbdkit did not log member 1's failed read:\n%s" % log)
        # The member files hold what was written: writes were not hit.
        for m, p in enumerate(paths):
            with open(p, "rb") as f:
                mem = f.read()
            for k in range(m, geo.chunks, 2):
                mc = k // 2
                check(mem[mc * CHUNK:(mc + 1) * CHUNK] ==
                      data[k * CHUNK:(k + 1) * CHUNK],
                      "member %d chunk %d differs" % (m, mc))
    print("ok member files hold every write")


run_main(main)
