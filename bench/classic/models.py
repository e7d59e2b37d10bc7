"""models.py: what report.py holds the measurements against.

The emulated disk's model (what one member delivers, kept busy), the member
I/Os per client request that a layout implies, and the ideal speed-ups the
tables' rules name, random placement among them (simulated).  Numbers in,
numbers out: report.py reads the facts and parses the patterns, and loads
this file with runpy, as it does studies.py.
"""
import functools
import heapq
import random


def disk_iops(kind, nbytes, access_s, mbps):
    """What one emulated disk should deliver (IOPS) if kept busy."""
    pos = access_s if kind.startswith("rand") else 0.0
    return 1.0 / (pos + nbytes / (mbps * 1e6))


def expected_ios(level, n, chunk, kind, b, degraded=False):
    """Member (reads, writes) per client request of b bytes that the layout
    implies, or (None, None) (a partial RAID 5 stripe: it depends on
    alignment).  degraded: one of the n members missing."""
    if degraded:
        return expected_degraded(level, n, chunk, kind, b)
    if level == 1:
        return (1, 0) if "read" in kind else (0, n)
    if kind == "randread" and b <= 4096:
        return (1, 0)
    if kind == "randwrite" and b <= 4096:
        return {0: (0, 1), 10: (0, 2), 5: (2, 2)}[level]
    if kind == "read":
        return (b / chunk, 0)  # aligned: one read per chunk (RAID 5: parity skipped)
    if kind == "write" and level in (0, 10):
        return (0, b / chunk * (2 if level == 10 else 1))
    if kind == "write" and level == 5 and b == (n - 1) * chunk:
        return (0, n)  # a full stripe: data and parity
    return (None, None)


def expected_degraded(level, n, chunk, kind, b):
    """expected_ios with one member missing, for requests spread evenly
    over the array (random, or whole stripes of a sequential stream).

    RAID 1: reads on a copy left, writes to the n - 1 left.  RAID 5 (md's
    rotating parity): a stripe's missing chunk is its parity 1 time in n,
    one of its n - 1 data chunks otherwise, so 1 data chunk in n is on the
    missing member; reading it reads the n - 1 others.  A 4k write (a
    column of one chunk): its own chunk missing (1 in n), reconstruct-write
    of parity (n - 2 reads, 1 write); parity missing (1 in n), the data
    alone (0, 1); another data chunk missing, read-modify-write (2, 2)."""
    if level == 1:
        return (1, 0) if "read" in kind else (0, n - 1)
    if level != 5:
        return (None, None)
    if "read" in kind and (kind == "read" or b <= 4096):
        per_chunk = (n - 1) / n * 1 + 1 / n * (n - 1)
        return (per_chunk * (1 if b <= 4096 else b / chunk), 0)
    if kind == "randwrite" and b <= 4096:
        return ((n - 2) / n + (n - 2) / n * 2, 2 / n + (n - 2) / n * 2)
    return (None, None)


@functools.lru_cache(maxsize=None)
def random_placement(n, k, completions=200000, seed=1):
    """Throughput, in members, of N members and K requests in flight, each
    to a uniformly random member, fixed service time: a closed queueing
    network, simulated (the exponential-service formula N*K/(K+N-1)
    understates fixed service times)."""
    rng, queue, events, t = random.Random(seed), [0] * n, [], 0.0

    def arrive(m, t):
        if queue[m] == 0:
            heapq.heappush(events, (t + 1.0, m))
        queue[m] += 1
    for _ in range(k):
        arrive(rng.randrange(n), 0.0)
    for _ in range(completions):
        t, m = heapq.heappop(events)
        queue[m] -= 1
        if queue[m] > 0:
            heapq.heappush(events, (t + 1.0, m))
        arrive(rng.randrange(n), t)
    return completions / t


# The ideals (in members) a table's rules name: f(members, queue depth).
IDEAL = {"members": lambda n, qd: n, "queue": min, "one": lambda n, qd: 1,
         "placement": random_placement}
