"""md arrays made by `nbdraid create`, and the operator's side of a served
one: its control socket and its event program.

cli() is the nbdraid CLI ($NBDRAID_CLI; the test skips without it) and
run() runs a command that must succeed; create() makes an md array over
member files and returns its UUID; examine() is `nbdraid examine --json`
of one member, mdadm_examine() `mdadm --examine` as {field: value} (None
without mdadm); geometry() is the independent Geometry of an md array's
data area (from the superblocks' sizes, not from nbdkit); place() is
where array byte x lives (`nbdraid map`: member role and file offset).
Control speaks `nbdraid --control PATH` (status --json, fail, remove);
EventLog is an event= program that logs each event as a line, and waits
for one.
"""

import json
import os
import re
import shutil
import subprocess
import time

from .common import KiB, check, fail, skip
from .geometry import Geometry

MD_ROLE_FAULTY = 0xfffe     # a role table entry: the device failed
MD_ROLE_SPARE = 0xffff      # ... a spare, or removed


def cli():
    p = os.environ.get("NBDRAID_CLI")
    if not p or not os.path.isfile(p):
        skip("NBDRAID_CLI not built")
    return p


def run(argv, ok=True, cwd=None):
    """Run argv; unless ok=False it must exit 0.  Returns the result."""
    r = subprocess.run(argv, capture_output=True, text=True, cwd=cwd)
    if ok and r.returncode != 0:
        fail("%s: exit %d\n%s%s" % (
            " ".join(argv), r.returncode, r.stdout, r.stderr))
    return r


def create(paths, level, layout=None, chunk=64 * KiB, name="t"):
    """`nbdraid create` over the member files, in role order: the array's
    UUID.  RAID 1 takes create's default chunk."""
    argv = [cli(), "create", "--level", str(level), "--name", name]
    if level != 1:
        argv += ["--chunk", "%dK" % (chunk // KiB)]
    if layout:
        argv += ["--layout", layout]
    out = run(argv + list(paths)).stdout
    return re.search(r"UUID ([0-9a-f:]+)", out).group(1)


def examine(path):
    """A member's superblock, as `nbdraid examine --json` gives it."""
    out = run([cli(), "examine", "--json", path]).stdout
    return json.loads(out)[0]


def mdadm_examine(path):
    """`mdadm --examine` of a member file as {field: value}; None when
    mdadm is not installed."""
    if shutil.which("mdadm") is None:
        return None
    out = run(["mdadm", "--examine", path]).stdout
    return {m.group(1): m.group(2).strip()
            for m in re.finditer(r"^\s*([A-Za-z ]+?) : (.*)$", out, re.M)}


def geometry(paths, level, layout):
    """The Geometry of the array's data area: each member's Used Dev Size
    from its superblock (all members, in role order)."""
    sb = [examine(p) for p in paths]
    sizes = [s["used_dev_sectors"] * 512 for s in sb]
    chunk = sb[0]["chunk_bytes"] if level != 1 else 64 * KiB
    return Geometry(level, sizes, chunk, layout)


def place(paths, x):
    """Where array byte x lives, by `nbdraid map` over the members: the
    first copy's (role, offset in the member file)."""
    out = run([cli(), "map", str(x)] + list(paths)).stdout
    m = re.search(r"copy 0: member (\d+) offset (\d+)", out)
    check(m, "nbdraid map %d: %s" % (x, out))
    return int(m.group(1)), int(m.group(2))


class Control:
    """`nbdraid --control PATH ...` against a served array."""

    def __init__(self, path):
        self.path = path

    def run(self, *args, ok=True):
        return run([cli(), "--control", self.path] + list(args), ok=ok)

    def status(self):
        """status --json: exactly one JSON object."""
        out = self.run("status", "--json").stdout
        try:
            st = json.loads(out)
        except ValueError as e:
            fail("status --json is not one JSON object (%s):\n%s" % (e, out))
        check(isinstance(st, dict), "status --json: not an object: %s" % out)
        return st

    def fail(self, member):
        r = self.run("fail", str(member))
        check("faulty" in r.stdout, "fail %s printed %r" % (member, r.stdout))
        return r

    def refused(self, why, *args):
        """args must be refused: exit 1, the server's reason has `why`."""
        r = self.run(*args, ok=False)
        check(r.returncode == 1 and why in r.stderr,
              "%s: want exit 1 saying '%s', got %d:\n%s%s" % (
                  " ".join(args), why, r.returncode, r.stdout, r.stderr))
        return r.stderr.strip()

    def wait_member(self, role, state, timeout=15, alive=None):
        """Poll status until member `role` is in `state`; returns the
        status.  alive() (if given) is called between polls: it raises
        when what drives the array has died."""
        deadline = time.monotonic() + timeout
        while True:
            st = self.status()
            if st["members"][role]["state"] == state:
                return st
            if time.monotonic() > deadline:
                fail("member %d never became %s within %ds: %s" % (
                    role, state, timeout, st))
            if alive:
                alive()
            time.sleep(0.02)

    def wait_clean(self, timeout=10):
        """Poll status until the superblocks say clean (200 ms after the
        last write): no superblock write is due after that."""
        deadline = time.monotonic() + timeout
        while not self.status()["clean"]:
            if time.monotonic() > deadline:
                fail("the array was not marked clean within %ds" % timeout)
            time.sleep(0.02)


class EventLog:
    """An event= program that appends its arguments as one line to a log."""

    def __init__(self, folder):
        self.log = os.path.join(folder, "events.log")
        self.program = os.path.join(folder, "event.sh")
        with open(self.program, "w") as f:
            f.write("#!/bin/sh\necho \"$@\" >> %s\n" % self.log)
        os.chmod(self.program, 0o755)

    def lines(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return f.read().splitlines()

    def wait(self, line, timeout=10):
        """Wait for the program to have logged line."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if line in self.lines():
                return
            time.sleep(0.02)
        fail("the event program never got '%s'; it got:\n%s" % (
            line, "\n".join(self.lines()) or "(nothing)"))
