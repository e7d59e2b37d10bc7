#!/usr/bin/python3
"""Spares of a served md array, as mdadm sees them:

  - spare=PATH on a blank file: nbdraid writes md's spare superblock;
    `mdadm --examine` says "Device Role : spare", the array's UUID and the
    events of the members;
  - `nbdraid --control PATH add FILE` adds a second spare; status --json
    lists both with role null, state "spare"; the plain status counts them
    (Spare Devices : 2);
  - `fail 1`: the first spare takes role 1 at once (state rebuilding);
    mdadm --examine of it says "Active device 1" and a recovery offset;
  - add of a file carrying another array's superblock is refused without
    --force;
  - speed MIN MAX is taken; speed 5 1 refused.

Needs mdadm (for --examine); exits 77 (skipped) without.
"""

import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    MiB, TempDir, check, fail, plugin, run_main, skip)
from raidtest.server import Server  # noqa: E402

MEMBER = 24 * MiB


def cli():
    p = os.environ.get("NBDRAID_CLI")
    if not p or not os.path.isfile(p):
        skip("NBDRAID_CLI not built")
    return p


def run(argv, ok=True):
    r = subprocess.run(argv, capture_output=True, text=True)
    if ok and r.returncode != 0:
        fail("%s: exit %d\n%s%s" % (" ".join(argv), r.returncode, r.stdout,
                                     r.stderr))
    return r


def examine(path):
    """mdadm --examine of a member file, as {key: value}."""
    out = run(["mdadm", "--examine", path]).stdout
    return {m.group(1): m.group(2).strip()
            for m in re.finditer(r"^\s*([A-Za-z ]+?) : (.*)$", out, re.M)}


def control(ctl, *args, ok=True):
    return run([cli(), "--control", ctl] + list(args), ok=ok)


def status(ctl):
    return json.loads(control(ctl, "status", "--json").stdout)


def blank(path):
    with open(path, "wb") as f:
        f.truncate(MEMBER)


def main():
    plugin()
    cli()
    if shutil.which("mdadm") is None:
        skip("mdadm not installed")
    with TempDir(base="/tmp") as d:
        paths = [os.path.join(d, "m%d.img" % i) for i in range(6)]
        for p in paths:
            blank(p)
        out = run([cli(), "create", "--level", "5", "--chunk", "64K",
                   "--name", "spare"] + paths[:3]).stdout
        uuid = re.search(r"UUID ([0-9a-f:]+)", out).group(1)
        run([cli(), "create", "--level", "1", "--name", "other"] +
            paths[4:6])
        ctl = os.path.join(d, "ctl.sock")
        params = ["member=%s" % p for p in paths[:3]] + [
            "spare=%s" % paths[3], "control=%s" % ctl]
        with Server(params):
            e, m0 = examine(paths[3]), examine(paths[0])
            check(e.get("Device Role") == "spare",
                  "mdadm: spare's Device Role %s" % e.get("Device Role"))
            check(e.get("Array UUID") == m0.get("Array UUID") == uuid,
                  "mdadm: spare's Array UUID %s, members' %s, want %s" % (
                      e.get("Array UUID"), m0.get("Array UUID"), uuid))
            check(e.get("Events") == m0.get("Events"),
                  "mdadm: spare's Events %s, members' %s" % (
                      e.get("Events"), m0.get("Events")))
            print("ok spare=: mdadm --examine says spare, same UUID",
                  flush=True)
            r = control(ctl, "add", paths[4], ok=False)
            check(r.returncode == 1 and "File exists" in r.stderr,
                  "add of another array's member: %d %s" % (
                      r.returncode, r.stderr))
            blank(paths[5])
            control(ctl, "add", paths[5])
            st = status(ctl)
            spares = [m for m in st["members"] if m["state"] == "spare"]
            check(len(spares) == 2 and all(m["role"] is None
                                           for m in spares),
                  "status: spares %s" % spares)
            check("Spare Devices : 2" in control(ctl, "status").stdout,
                  "plain status does not count 2 spares")
            check(examine(paths[5]).get("Device Role") == "spare",
                  "mdadm: added file is not a spare")
            print("ok add: a second spare, listed with role null",
                  flush=True)
            # Slow, so that the recovery is still running when mdadm
            # looks (at md's default maximum it takes a few ms).
            control(ctl, "speed", "1000", "2000")
            control(ctl, "fail", "1")
            st = status(ctl)
            m1 = st["members"][1]
            check(m1["path"] == paths[3] and m1["state"] == "rebuilding",
                  "after fail 1: member 1 is %s" % m1)
            e = examine(paths[3])
            check(e.get("Device Role") == "Active device 1",
                  "mdadm: the spare taken says %s" % e.get("Device Role"))
            check("Recovery Offset" in e,
                  "mdadm: no Recovery Offset on the member being rebuilt")
            print("ok fail 1: the spare takes role 1, mdadm agrees",
                  flush=True)
            control(ctl, "speed", "1000", "5000")
            r = control(ctl, "speed", "5", "1", ok=False)
            check(r.returncode == 1, "speed 5 1 accepted")
            print("ok speed", flush=True)


run_main(main)
