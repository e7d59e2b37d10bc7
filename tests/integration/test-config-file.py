#!/usr/bin/python3
"""config=FILE builds the same array as the same keys on the command line,
with member paths relative to the file's folder, and a key given twice
(file and command line, or twice in the file) is refused.

  1. config file (comments, blank lines, spaces around '=', relative
     members) with nbdkit started in / : random I/O, then the members hold
     every byte where md would put it;
  2. the same array from command-line keys serves exactly those bytes, and
     writes more;
  3. the config-file array again serves the combined bytes;
  4. conflicts: chunk on the command line and in the file (either order),
     level twice in the file, member from both sources, an unknown key in
     the file: nbdkit exits non-zero, the message names the key (and the
     config file), and no member changes.
"""

import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    KiB, MiB, TempDir, check, file_state, make_members, plugin, run_main,
    seed)
from raidtest.geometry import Geometry  # noqa: E402
from raidtest.model import Model  # noqa: E402
from raidtest.server import Server, run_expect_failure  # noqa: E402
from raidtest.workload import Workload, verify_readback  # noqa: E402
from raidtest.members import verify_members  # noqa: E402


CONFIG = """\
# nbdraid test array: RAID 10, far 2, over three members
level = 10
layout=f2

   # chunk in the size syntax nbdkit uses
chunk   =  32K
member = members/m0.img
member = ./members/m1.img
member=members/sub/../m2.img
# trailing comment after the members
"""


def write_conf(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def refused(label, params, patterns, members):
    before = [file_state(p) for p in members]
    rc, err = run_expect_failure(params, cwd="/")
    check(rc != 0, "%s: nbdkit exited 0" % label)
    check([file_state(p) for p in members] == before,
          "%s: a member was modified" % label)
    for pat in patterns:
        check(re.search(pat, err), "%s: stderr lacks /%s/:\n%s" % (
            label, pat, err))
    print("ok %-38s %s" % (label, err.strip().splitlines()[-1][:160]))


def main():
    rng = random.Random(seed("test-config-file"))
    plugin()
    with TempDir() as d:
        confdir = os.path.join(d, "conf")
        memdir = os.path.join(d, "conf", "members")
        os.makedirs(os.path.join(memdir, "sub"))
        sizes = [2 * MiB + 100, 2 * MiB + 100, 2 * MiB + 40 * KiB]
        paths = make_members(memdir, sizes)
        conf = write_conf(os.path.join(confdir, "raid.conf"), CONFIG)
        geo = Geometry(10, sizes, 32 * KiB, "f2")
        model = Model(geo.size)
        cmdline = ["level=10", "layout=f2", "chunk=32K"] + \
            ["member=%s" % p for p in paths]

        # 1. from the file, nbdkit's cwd elsewhere
        with Server(["config=%s" % conf], cwd="/") as srv:
            h = srv.connect()
            check(h.get_size() == geo.size, "config array size %d != %d" % (
                h.get_size(), geo.size))
            w = Workload(srv, model, geo, rng, conns=3)
            w.concurrent_phase(15)
            w.serial_phase(20)
            w.close()
            verify_readback(srv, model, geo, "config file")
            srv.stop()
        verify_members(geo, model, paths, "config file")
        print("ok config-file array: I/O and member layout")

        # 2. the same array from the command line
        with Server(cmdline, cwd="/") as srv:
            verify_readback(srv, model, geo, "command line")
            w = Workload(srv, model, geo, rng, conns=2)
            w.serial_phase(20)
            w.close()
            srv.stop()
        print("ok command-line array serves the same bytes")

        # 3. and back
        with Server(["config=%s" % conf], cwd="/") as srv:
            verify_readback(srv, model, geo, "config file again")
            srv.stop()
        verify_members(geo, model, paths, "after both")
        print("ok config-file array serves the command line's writes")

        # 4. conflicts
        E = re.escape
        refused("chunk on command line, then file",
                ["chunk=64K", "config=%s" % conf],
                [E("key 'chunk' given twice"), E(conf)], paths)
        refused("chunk in file, then command line",
                ["config=%s" % conf, "chunk=32K"],
                [E("key 'chunk' given twice"), E(conf)], paths)
        refused("layout in file and command line",
                ["layout=f2", "config=%s" % conf],
                [E("key 'layout' given twice"), E(conf)], paths)
        twice = write_conf(os.path.join(confdir, "twice.conf"),
                           CONFIG + "level = 10\n")
        refused("level twice in the file", ["config=%s" % twice],
                [E("key 'level' given twice"), E(twice)], paths)
        refused("member in file and on command line",
                ["config=%s" % conf, "member=%s" % paths[0]],
                [r"member"], paths)
        unknown = write_conf(os.path.join(confdir, "unknown.conf"),
                             CONFIG + "colour = blue\n")
        refused("unknown key in the file", ["config=%s" % unknown],
                [E("unknown parameter 'colour'")], paths)


run_main(main)
