#!/usr/bin/python3
"""cache=log under `nbdkit --run`: no io_uring error (issue 25 #20).

nbdkit opens the array (and, with cache=log, replays and flushes the
log: I/O through the calling thread's io_uring ring) before it forks for
--run; a ring with SINGLE_ISSUER refuses any other task, and the child
that went on serving submitted to the parent's ring: "io_uring_submit_
and_wait: File exists" every time (the ring then dropped, the requests
finished through pread/pwrite).  Here an md RAID 1 x2 with cache=log and
io=uring is served under --run by a command that writes, flushes and
reads back through libnbd; it must succeed and nbdkit must log no
io_uring error.  Skipped where io_uring does not work.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    MiB, TempDir, check, io_uring_works, make_members, plugin, run_main,
    skip)
from raidtest.mdarray import create  # noqa: E402

CLIENT = """
import nbd, os, sys
h = nbd.NBD()
h.connect_unix(sys.argv[1])
data = os.urandom(1 << 20)
for i in range(4):
    h.pwrite(data, i << 20)
h.flush()
for i in range(4):
    assert h.pread(1 << 20, i << 20) == data
print("client ok")
"""


def main():
    if not io_uring_works():
        skip("io_uring_setup fails here")
    with TempDir(prefix="nbdraid-clog-run-") as d:
        paths = make_members(d, [16 * MiB] * 2)
        create(paths, 1, name="run")
        log = os.path.join(d, "log")
        with open(log, "wb") as f:
            f.truncate(8 * MiB)
        client = os.path.join(d, "client.py")
        with open(client, "w") as f:
            f.write(CLIENT)
        for rnd in range(2):   # a fresh log, then one to replay
            r = subprocess.run(
                ["nbdkit", "-U", "-", plugin()] +
                ["member=" + p for p in paths] +
                ["cache=log", "cache-log=" + log, "io=uring",
                 "--run", "/usr/bin/python3 %s $unixsocket" % client],
                capture_output=True, text=True, timeout=120)
            out = r.stdout + r.stderr
            check(r.returncode == 0 and "client ok" in out,
                  "nbdkit --run: exit %d:\n%s" % (r.returncode, out))
            check("io_uring" not in out,
                  "nbdkit --run logged an io_uring error:\n%s" % out)
    print("PASS")


run_main(main)
