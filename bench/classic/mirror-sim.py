#!/usr/bin/env python3
"""mirror-sim.py: what a two-way mirror can give one sequential stream of
1M reads on bench/run's emulated disk, by queue depth, under read-balancing
rules (src/layout/layout.c's and others), simulated.

The disk is fusedisk's model: one request at a time, 5 ms access unless the
request starts where the previous one ended, 100 MB/s, the queued request
with the least positioning time first.  The client is fio: QD requests in
flight, the next offset issued as any request completes.  Figures are
throughput over one disk's bandwidth.  No NBD round trip, no CPU: an upper
bound for the measured figures in bench/run's study 4.

    /usr/bin/python3 bench/classic/mirror-sim.py [--access-ms 5] [--mbps 100]

prints a markdown table (bench/run's report embeds it, with the run's disk).
"""
import argparse
import heapq

ACCESS_MS = 5.0
BYTES_PER_MS = 100e6 / 1000
SIZE = 1 << 20


def run(policy, qd, nreq=4000, copies=2):
    queue = [[] for _ in range(copies)]
    head = [-1] * copies          # where each disk's last request ended
    cur = [None] * copies         # request being served
    next_read = [None] * copies   # end of the last read sent to the disk
    inflight = [0] * copies
    events, ptr, done, now = [], 0, 0, 0.0

    def kick(m, now):
        if cur[m] is not None or not queue[m]:
            return
        queue[m].sort(key=lambda o: o != head[m])
        off = queue[m].pop(0)
        cost = (0 if off == head[m] else ACCESS_MS) + SIZE / BYTES_PER_MS
        cur[m] = off
        heapq.heappush(events, (now + cost, m))

    def issue(now):
        nonlocal ptr
        off = ptr * SIZE
        ptr += 1
        m = policy(off, inflight, next_read)
        inflight[m] += 1
        next_read[m] = off + SIZE
        queue[m].append(off)
        kick(m, now)

    for _ in range(qd):
        issue(0.0)
    while done < nreq:
        now, m = heapq.heappop(events)
        head[m], cur[m] = cur[m] + SIZE, None
        inflight[m] -= 1
        done += 1
        kick(m, now)
        issue(now)
    return done * SIZE / now / BYTES_PER_MS


def least_busy(off, inflight, next_read):
    """SPDK raid1: the copy with the fewest I/Os in flight."""
    return min(range(len(inflight)), key=lambda m: inflight[m])


def md_affinity(off, inflight, next_read):
    """md raid1: a read continuing a disk's last read stays there."""
    for m in range(len(inflight)):
        if next_read[m] == off:
            return m
    return least_busy(off, inflight, next_read)


def nbdraid(off, inflight, next_read):
    """layout.c: md's affinity, but an idle copy takes over from a busy one."""
    best = least_busy(off, inflight, next_read)
    for m in range(len(inflight)):
        if next_read[m] == off:
            return m if inflight[best] > 0 or inflight[m] == 0 else best
    return best


def regions(n):
    """Fixed regions of n requests, alternating between the copies."""
    return lambda off, inflight, next_read: (off // (n * SIZE)) % len(inflight)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="mirror read rules, simulated")
    ap.add_argument("--access-ms", type=float, default=5.0)
    ap.add_argument("--mbps", type=float, default=100.0)
    args = ap.parse_args()
    ACCESS_MS = args.access_ms
    BYTES_PER_MS = args.mbps * 1e6 / 1000
    rules = [("fewest in flight", least_busy), ("md affinity", md_affinity),
             ("regions of 4M", regions(4)), ("regions of 8M", regions(8)),
             ("regions of 16M", regions(16)), ("nbdraid", nbdraid)]
    qds = (1, 2, 4, 8, 16, 32)
    print("| rule | " + " | ".join("QD%d" % q for q in qds) + " |")
    print("|---|" + "---:|" * len(qds))
    for name, rule in rules:
        print("| %s | %s |" % (name, " | ".join("%.2f" % run(rule, q) for q in qds)))
