#!/usr/bin/python3
"""Every startup error makes nbdkit exit non-zero with its documented
message on stderr, and leaves every member file untouched (same sha256,
size and mtime)."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    KiB, TempDir, check, file_state, make_members, plugin, run_main)
from raidtest.server import run_expect_failure  # noqa: E402


def expect_error(label, params, want, members, cwd=None, alternatives=()):
    """nbdkit must refuse params: non-zero exit, an error line matching the
    regex want (or one of alternatives), members unchanged."""
    before = {p: file_state(p) for p in members}
    rc, err = run_expect_failure(params, cwd=cwd)
    check(rc != 0, "%s: nbdkit exited 0\n%s" % (label, err))
    after = {p: file_state(p) for p in members}
    for p in members:
        check(before[p] == after[p], "%s: member %s was modified "
              "(sha256/mtime/size %s -> %s)" % (label, p, before[p],
                                                after[p]))
    if want is None:
        print("ok %-40s exit %d: %s" % (label, rc, err.strip()[:150]))
        return
    pats = [want] + list(alternatives)
    lines = [ln for ln in err.splitlines()
             if any(re.search(w, ln) for w in pats)]
    check(lines, "%s: stderr lacks /%s/:\n%s" % (label, want, err))
    check(any("error" in ln for ln in lines),
          "%s: the message is not reported as an error: %r" % (label,
                                                               lines))
    print("ok %-40s exit %d: %s" % (label, rc, lines[0].strip()))


def main():
    plugin()
    with TempDir() as d:
        size = 1024 * KiB
        paths = make_members(d, [size] * 4)
        # Recognisable content: a wiped or rewritten member shows up in the
        # checksum even where the file was sparse.
        for i, p in enumerate(paths):
            with open(p, "r+b") as f:
                for off in (0, 4096, 65536 + 123, size - 7):
                    f.seek(off)
                    f.write(("member %d @%d\n" % (i, off)).encode()[:7])
        small = os.path.join(d, "small.img")
        with open(small, "wb") as f:
            f.truncate(4096)
            f.write(b"small")
        link = os.path.join(d, "link.img")
        os.symlink(paths[1], link)
        hard = os.path.join(d, "hard.img")
        os.link(paths[1], hard)
        os.mkdir(os.path.join(d, "sub"))
        dotted = os.path.join(d, "sub", "..", os.path.basename(paths[1]))
        missing = os.path.join(d, "missing.img")
        all_files = paths + [small]
        mem = ["member=%s" % p for p in paths]
        M = re.escape

        expect_error("unknown key",
                     ["level=0"] + mem[:2] + ["foo=bar"],
                     r"unknown parameter 'foo'", all_files)
        expect_error("missing member",
                     ["level=0"] + mem[:2] + ["member=" + missing],
                     M("member 2 (%s): open: No such file or directory" %
                       missing), all_files)
        expect_error("missing member, relative path",
                     ["level=1", "member=" + os.path.basename(paths[0]),
                      "member=missing.img"],
                     M("member 1 (%s): open: No such file or directory" %
                       missing), all_files, cwd=d)
        expect_error("same file twice",
                     ["level=0"] + mem[:3] + [mem[1]],
                     M("member 3 (%s): same file as member 1 (%s)" % (
                         paths[1], paths[1])), all_files)
        for what, other in (("symlink", link), ("hard link", hard),
                            ("other path", dotted)):
            alts = [M("member 3 (%s): same file as member 1 (%s)" % (
                os.path.realpath(other), paths[1]))]
            expect_error("same file via " + what,
                         ["level=10"] + mem[:3] + ["member=" + other],
                         M("member 3 (%s): same file as member 1 (%s)" % (
                             other, paths[1])), all_files, alternatives=alts)
        expect_error("member smaller than a chunk",
                     ["level=0", "chunk=64K", mem[0], "member=" + small],
                     M("member 1 (%s): size 4096 is smaller than one chunk "
                       "(65536)" % small), all_files)
        expect_error("member smaller than a chunk, raid10",
                     ["level=10", "chunk=8K"] + mem[:2] + ["member=" + small],
                     M("member 2 (%s): size 4096 is smaller than one chunk "
                       "(8192)" % small), all_files)
        expect_error("data-offset past the member",
                     ["level=5", "chunk=64K", "data-offset=2048s"] + mem[:3],
                     M("member 0 (%s): size 1048576 is smaller than "
                       "data-offset 1048576 plus one chunk (65536)" % paths[0]),
                     all_files)
        expect_error("data-offset not whole sectors",
                     ["level=0", "data-offset=1000"] + mem[:2],
                     M("data-offset '1000': must be a size in bytes (a "
                       "multiple of 512) or in 512-byte sectors (2048s)"),
                     all_files)
        expect_error("member-size past the member",
                     ["level=1", "data-offset=4K", "member-size=1M"] + mem[:2],
                     M("member 0 (%s): size 1048576 is smaller than "
                       "data-offset 4096 plus member-size 1048576" % paths[0]),
                     all_files)
        for bad in ("3000", "2K", "32M", "12K", "0", "1G"):
            expect_error("chunk=%s" % bad,
                         ["level=0", "chunk=" + bad] + mem[:2],
                         M("chunk '%s': must be a power of two from 4K to "
                           "16M" % bad), all_files)
        expect_error("chunk=abc", ["level=0", "chunk=abc"] + mem[:2],
                     r"abc", all_files)
        for key, v1, v2 in (("chunk", "64K", "64K"), ("level", "0", "1"),
                            ("layout", "n2", "f2"), ("direct", "false",
                                                     "false"),
                            ("io", "psync", "auto"),
                            ("metadata", "none", "none")):
            lv = [] if key == "level" else ["level=10"]
            expect_error("%s given twice" % key,
                         lv + ["%s=%s" % (key, v1)] + mem[:3] +
                         ["%s=%s" % (key, v2)],
                         M("key '%s' given twice" % key), all_files)
        expect_error("raid10 layout x2",
                     ["level=10", "layout=x2"] + mem[:3],
                     M("raid10 layout 'x2': "), all_files)
        expect_error("raid10 layout n0", ["level=10", "layout=n0"] + mem[:3],
                     M("raid10 layout 'n0': "), all_files)
        for lay, need, have in (("n4", 4, 3), ("f3", 3, 2), ("o3", 3, 2),
                                ("n3", 3, 2)):
            expect_error("raid10 layout %s on %d members" % (lay, have),
                         ["level=10", "layout=" + lay] + mem[:have],
                         r"raid10 layout '%s'.*need at least %d members, "
                         r"have %d" % (lay, need, have), all_files)
        expect_error("raid10 with one member", ["level=10", mem[0]],
                     M("level 10 needs at least 2 members"), all_files)
        for have in (2, 1):
            expect_error("raid5 with %d member%s" % (have, "s" * (have > 1)),
                         ["level=5", "chunk=64K"] + mem[:have],
                         M("at least 3 members"), all_files)
        expect_error("raid5 layout n2", ["level=5", "layout=n2"] + mem[:3],
                     M("raid5 layout 'n2'"), all_files)
        expect_error("raid10 layout ls", ["level=10", "layout=ls"] + mem[:3],
                     M("raid10 layout 'ls'"), all_files)
        expect_error("no level", mem[:2], M("level= is required"), all_files)
        # Refused without a documented wording: just non-zero and untouched.
        for params in (["level=6"] + mem[:3], ["level=0", "io=fast"] + mem[:2],
                       ["level=0", "direct=maybe"] + mem[:2],
                       ["level=0", "metadata=v1"] + mem[:2],
                       ["level=0"]):
            expect_error(" ".join(p for p in params if "member" not in p),
                         params, None, all_files)


run_main(main)
