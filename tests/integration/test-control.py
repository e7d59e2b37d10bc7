#!/usr/bin/python3
"""The operator's side of a served array: control=PATH and event=PROGRAM
through a real nbdkit, over a RAID 5 that `nbdraid create` made.

  - `nbdraid --control PATH status --json` prints one JSON object: state
    optimal, every member in_sync with its path, the UUID and name create
    printed; after client writes and reads its io counters have moved;
    plain `status` names the state and every member's path;
  - the socket is mode 0600; nbdkit killed with -9 leaves it behind, and
    the next nbdkit replaces it (stale); while one serves, another nbdkit
    given the same control path refuses to start ("in use");
  - refusals: remove of an in-sync member (exit 1, the server's reason);
  - fail 1: the array degraded, member 1 faulty with a reason, the event
    program got "Fail ARRAY MEMBER", the data still reads back (parity);
    then fail of member 2 (a relative path) is refused: it holds the last
    copy of some data; remove 1: missing, the event MemberRemoved;
  - started again (force=true: the kill -9 left it dirty), the array is
    degraded (role 1 missing), the event program got "DegradedArray
    ARRAY", the data reads back;
  - a regular file at the control path: nbdkit refuses to start, naming
    it, and the file is unchanged.
"""

import json
import os
import re
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    KiB, MiB, TempDir, check, fail, file_state, plugin, run_main, seed,
    skip)
from raidtest.model import pattern  # noqa: E402
from raidtest.server import Server, run_expect_failure  # noqa: E402

import random  # noqa: E402

MEMBER = 16 * MiB
N = 3
DATA = 2 * MiB


def cli():
    p = os.environ.get("NBDRAID_CLI")
    if not p or not os.path.isfile(p):
        skip("NBDRAID_CLI not built")
    return p


def run(argv, ok=True, cwd=None):
    r = subprocess.run(argv, capture_output=True, text=True, cwd=cwd)
    if ok and r.returncode != 0:
        fail("%s: exit %d\n%s%s" % (" ".join(argv), r.returncode, r.stdout,
                                     r.stderr))
    return r


def control(ctl, *args, ok=True, cwd=None):
    return run([cli(), "--control", ctl] + list(args), ok=ok, cwd=cwd)


def status(ctl):
    """status --json: exactly one JSON object."""
    out = control(ctl, "status", "--json").stdout
    try:
        st = json.loads(out)
    except ValueError as e:
        fail("status --json is not one JSON object (%s):\n%s" % (e, out))
    check(isinstance(st, dict), "status --json: not an object: %s" % out)
    return st


def refused(ctl, why, *args, cwd=None):
    r = control(ctl, *args, ok=False, cwd=cwd)
    check(r.returncode == 1 and why in r.stderr,
          "%s: want exit 1 saying '%s', got %d:\n%s%s" % (
              " ".join(args), why, r.returncode, r.stdout, r.stderr))
    print("ok %s refused: %s" % (" ".join(args), r.stderr.strip()),
          flush=True)


def wait_event(log, line):
    """Wait up to 10 s for the event program to have logged line."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if os.path.exists(log):
            with open(log) as f:
                if line in f.read().splitlines():
                    return
        time.sleep(0.05)
    got = open(log).read() if os.path.exists(log) else "(no log)"
    fail("the event program never got '%s'; it got:\n%s" % (line, got))


def first_look(ctl, paths, uuid, srv, rng):
    st = status(ctl)
    check(st["state"] == "optimal", "state %s, want optimal" % st["state"])
    check(st["level"] == 5 and st["layout"] == "left-symmetric" and
          st["chunk"] == 64 * KiB, "geometry: %s" % st)
    check(st["uuid"] == uuid and st["name"].endswith(":ctl") and
          st["metadata"] == "md", "identity: uuid %s name %s, created %s" % (
              st["uuid"], st["name"], uuid))
    check([m["path"] for m in st["members"]] == paths and
          all(m["state"] == "in_sync" for m in st["members"]),
          "members: %s" % st["members"])
    h = srv.connect()
    data = pattern(rng, DATA)
    h.pwrite(data, 0)
    h.flush()
    check(h.pread(DATA, 0) == data, "read back differs")
    io = status(ctl)["io"]
    check(io["write"]["requests"] >= 1 and io["write"]["bytes"] >= DATA and
          io["read"]["requests"] >= 1 and io["read"]["bytes"] >= DATA and
          io["flush"]["requests"] >= 1, "io counters did not move: %s" % io)
    print("ok status --json: optimal, in_sync, identity; io counters moved",
          flush=True)
    text = control(ctl, "status").stdout
    check("optimal" in text and all(p in text for p in paths) and
          uuid in text, "plain status lacks the state or a path:\n%s" % text)
    mode = os.stat(ctl).st_mode
    check(stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600,
          "control socket mode %o" % mode)
    print("ok plain status names the state and the members; socket 0600",
          flush=True)
    return data


def fail_and_remove(d, ctl, paths, log, srv, data):
    refused(ctl, "fail it first", "remove", "1")
    r = control(ctl, "fail", "1")
    check("faulty" in r.stdout, "fail 1 printed %r" % r.stdout)
    st = status(ctl)
    check(st["state"] == "degraded" and
          st["members"][1]["state"] == "faulty" and st["reason"],
          "after fail 1: %s" % st)
    wait_event(log, "Fail %s %s" % (st["name"], paths[1]))
    check(srv.connect().pread(DATA, 0) == data, "degraded read differs")
    print("ok fail 1: degraded, member 1 faulty, event Fail, data reads "
          "back", flush=True)
    refused(ctl, "last copy", "fail", os.path.basename(paths[2]), cwd=d)
    control(ctl, "remove", "1")
    st = status(ctl)
    check(st["members"][1]["state"] == "missing", "after remove: %s" % st)
    wait_event(log, "MemberRemoved %s %s" % (st["name"], paths[1]))
    print("ok remove 1: missing, event MemberRemoved", flush=True)


def main():
    rng = random.Random(seed("test-control"))
    plugin()
    cli()
    # Unix socket paths are short: the temp dir is in /tmp.
    with TempDir(base="/tmp") as d:
        paths = [os.path.join(d, "m%d.img" % i) for i in range(N)]
        for p in paths:
            with open(p, "wb") as f:
                f.truncate(MEMBER)
        out = run([cli(), "create", "--level", "5", "--chunk", "64K",
                   "--name", "ctl"] + paths).stdout
        uuid = re.search(r"UUID ([0-9a-f:]+)", out).group(1)
        log = os.path.join(d, "events.log")
        prog = os.path.join(d, "event.sh")
        with open(prog, "w") as f:
            f.write("#!/bin/sh\necho \"$@\" >> %s\n" % log)
        os.chmod(prog, 0o755)
        ctl = os.path.join(d, "ctl.sock")
        params = ["member=%s" % p for p in paths] + [
            "control=%s" % ctl, "event=%s" % prog]

        srv = Server(params)
        try:
            data = first_look(ctl, paths, uuid, srv, rng)
            srv.kill9()
        finally:
            srv.__exit__(None, None, None)
        check(stat.S_ISSOCK(os.lstat(ctl).st_mode),
              "kill -9 should leave the control socket behind")
        with Server(params) as srv:
            check(status(ctl)["state"] == "optimal", "restarted: not optimal")
            print("ok a stale control socket (kill -9) is replaced",
                  flush=True)
            others = [os.path.join(d, "o%d.img" % i) for i in range(2)]
            for p in others:
                with open(p, "wb") as f:
                    f.truncate(MEMBER)
            rc, err = run_expect_failure(
                ["level=1", "metadata=none", "control=%s" % ctl] +
                ["member=%s" % p for p in others])
            check(rc != 0 and "in use" in err and ctl in err,
                  "a second server on the control path: %d\n%s" % (rc, err))
            check(status(ctl)["state"] == "optimal",
                  "the refused server disturbed the first one's socket")
            print("ok a control socket in use is refused", flush=True)
            fail_and_remove(d, ctl, paths, log, srv, data)
            check(srv.stop() == 0, "nbdkit did not stop cleanly")
        check(not os.path.exists(ctl), "the control socket outlived nbdkit")
        # kill -9 left it dirty: a dirty degraded RAID 5 needs force=true.
        with Server(params + ["force=true"]) as srv:
            st = status(ctl)
            check(st["state"] == "degraded" and
                  st["members"][1]["state"] == "missing",
                  "started again after remove: %s" % st)
            wait_event(log, "DegradedArray %s" % st["name"])
            check(srv.connect().pread(DATA, 0) == data,
                  "degraded start: read differs")
            check(srv.stop() == 0, "nbdkit did not stop cleanly")
        print("ok started again: degraded, member 1 missing, event "
              "DegradedArray, data reads back", flush=True)

        occupied = os.path.join(d, "occupied")
        with open(occupied, "w") as f:
            f.write("an operator's notes\n")
        before = file_state(occupied)
        rc, err = run_expect_failure(
            ["level=1", "metadata=none", "control=%s" % occupied] +
            ["member=%s" % p for p in others])
        check(rc != 0 and "not a socket" in err and occupied in err,
              "a regular file at the control path: %d\n%s" % (rc, err))
        check(file_state(occupied) == before, "the regular file changed")
        print("ok a regular file at the control path: refused, unchanged",
              flush=True)


run_main(main)
