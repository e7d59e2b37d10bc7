#!/usr/bin/python3
"""recovery-timer.py SOCK ROLE [options]: time one recovery of a served array.

Study 7 of bench/run (bench/classic/s7-recovery.sh).  Over one connection to
the array's control socket (the protocol of `nbdraid --control PATH`,
docs/control.md) it sets the speed limits, fails member ROLE (a spare
waiting takes its role at once and recovery starts), then asks `status`
every --poll seconds (2 ms) until the array is optimal, the member in sync on
its new file and no pass runs.  The time is from just before the fail
request is sent to the first status that says so.  One connection, kept
open: a status costs the server microseconds, where `nbdraid --control
PATH status --json` per poll would cost a process start each time.

Around that, as asked:
  --before S   the client requests (the server's own counters, status "io")
               over S seconds before the fail: the load without recovery
  --cap S      stop timing after S seconds if not done: report the bytes
               done by then (the recovery rate under md's limits), then
  --finish MIN MAX  set these limits and wait, untimed, for the end
  --after S    the client requests over S seconds after the end
  --pid PID    the server's pid: its CPU over each interval (all threads)

Prints one JSON object: the intervals (seconds, client requests and bytes,
server and machine CPU and the machine's steal time in % of one core), seconds (null if capped),
done_bytes, total_bytes, finished.  Standard library only.
"""
import argparse
import json
import os
import socket
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count() or 1


class Control:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.f = self.s.makefile("rwb", buffering=0)
        self.buf = b""

    def ask(self, obj):
        self.s.sendall(json.dumps(obj).encode() + b"\n")
        while b"\n" not in self.buf:
            chunk = self.s.recv(1 << 16)
            if not chunk:
                sys.exit("recovery-timer: the server closed the control socket")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        ans = json.loads(line)
        if not ans.get("ok"):
            sys.exit("recovery-timer: %s: %s" % (obj["command"], ans.get("error")))
        return ans

    def status(self):
        return self.ask({"command": "status"})["status"]


def ticks(pid):
    """utime + stime of a process (all threads), or None."""
    if not pid:
        return None
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def host():
    """(all, idle, steal) jiffies of the machine."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v[:8]), v[3] + v[4], v[7]


class Mark:
    """The counters at one moment."""
    def __init__(self, st, pid):
        self.t = time.monotonic()
        io = st["io"]
        self.req = sum(io[k]["requests"] for k in ("read", "write") if k in io)
        self.bytes = sum(io[k]["bytes"] for k in ("read", "write") if k in io)
        self.ticks = ticks(pid)
        self.host = host()


def interval(a, b):
    dt = b.t - a.t
    out = {"seconds": round(dt, 4), "requests": b.req - a.req, "bytes": b.bytes - a.bytes,
           "iops": round((b.req - a.req) / dt, 1) if dt > 0 else None,
           "mbps": round((b.bytes - a.bytes) / dt / 1e6, 2) if dt > 0 else None}
    if a.ticks is not None and b.ticks is not None and dt > 0:
        out["srv_cpu"] = round((b.ticks - a.ticks) / HZ / dt * 100, 1)
    tot, idle, steal = (b.host[i] - a.host[i] for i in range(3))
    out["host_cpu"] = round((tot - idle) / tot * NCPU * 100, 1) if tot > 0 else None
    out["steal"] = round(steal / tot * NCPU * 100, 1) if tot > 0 else None
    return out


def done(st, role):
    m = st["members"][role]
    return st["state"] == "optimal" and m["state"] == "in_sync" and st["progress"] is None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("sock")
    ap.add_argument("role", type=int)
    ap.add_argument("--speed", nargs=2, type=int, metavar=("MIN", "MAX"))
    ap.add_argument("--before", type=float, default=0)
    ap.add_argument("--cap", type=float, default=3600)
    ap.add_argument("--finish", nargs=2, type=int, metavar=("MIN", "MAX"))
    ap.add_argument("--after", type=float, default=0)
    ap.add_argument("--poll", type=float, default=0.002)
    ap.add_argument("--pid", type=int)
    ap.add_argument("--timeout", type=float, default=3600)
    o = ap.parse_args()
    c = Control(o.sock)
    st = c.status()
    if st["state"] != "optimal":
        sys.exit("recovery-timer: the array is %s, not optimal" % st["state"])
    spares = [m for m in st["members"] if m["state"] == "spare"]
    if not spares:
        sys.exit("recovery-timer: no spare waiting")
    if o.speed:
        c.ask({"command": "speed", "min": o.speed[0], "max": o.speed[1]})
    res = {}
    if o.before > 0:
        a = Mark(c.status(), o.pid)
        time.sleep(o.before)
        res["before"] = interval(a, Mark(c.status(), o.pid))
    start = Mark(c.status(), o.pid)
    ans = c.ask({"command": "fail", "member": str(o.role)})
    if ans.get("state") != "rebuilding":
        sys.exit("recovery-timer: fail %d: %s (no spare took the role?)" % (o.role, ans))
    total = done_bytes = None
    while True:
        st = c.status()
        pr = st["progress"]
        if pr and pr["kind"] == "recovery":
            total, done_bytes = pr["total_bytes"], pr["done_bytes"]
        if done(st, o.role):
            end = Mark(st, o.pid)
            res.update(seconds=round(end.t - start.t, 4), finished=True)
            done_bytes = total
            break
        if time.monotonic() - start.t >= o.cap:
            end = Mark(st, o.pid)
            res.update(seconds=None, finished=False)
            break
        if time.monotonic() - start.t > o.timeout:
            sys.exit("recovery-timer: not done after %g s: %s" % (o.timeout, st))
        time.sleep(o.poll)
    res["during"] = interval(start, end)
    res.update(done_bytes=done_bytes, total_bytes=total, rebuilt=st["members"][o.role]["path"])
    if not res["finished"]:
        if o.finish:
            c.ask({"command": "speed", "min": o.finish[0], "max": o.finish[1]})
        while not done(c.status(), o.role):
            if time.monotonic() - start.t > o.timeout:
                sys.exit("recovery-timer: not done after %g s" % o.timeout)
            time.sleep(0.05)
        res["total_seconds"] = round(time.monotonic() - start.t, 3)
    if o.after > 0:
        a = Mark(c.status(), o.pid)
        time.sleep(o.after)
        res["after"] = interval(a, Mark(c.status(), o.pid))
    print(json.dumps(res))


main()
