#!/usr/bin/python3
"""RAID5: random I/O over concurrent connections matches a byte model, the
member files hold every data byte where md would put it, and every stripe's
parity is the XOR of its data, also after connections fight over the same
stripes.

For each layout (left/right, symmetric/asymmetric, named in full, by alias
or left to the default) on 3, 4 and 6 members (and 5 for left-symmetric),
chunk 4K..64K, members of a few MiB with one larger than the rest:
  (a) the random workload of test-model-random.py: 4 connections at once,
      each in its own unaligned regions (which share stripes with the other
      connections' regions), pread/pwrite(+FUA)/flush/trim/zero(+/-may_trim,
      fast), then one connection anywhere, then the whole array read back
      byte-exact; nbdkit stops and the member files are checked: every data
      byte where the md model says it lives, parity (XOR of all members is
      zero on every stripe row in use), nothing written outside the map;
  (b) nbdkit again on the same members: 6 connections hammer the same 1-3
      stripes with overlapping, unaligned writes, trims and zeroes (and
      reads, flushes) all at once.  The final bytes of racing writes are
      unknown, so after a flush the array is read and becomes the model;
      what is checked is that bytes outside those stripes did not change,
      and that every byte inside (and every byte each read returned during
      the fight) is one some request could have left there, given which
      requests were answered before others were sent (see
      raidtest.contention);
      then a short disjoint workload, read-back, stop, and
  (c) the member files again: data where md puts it, parity on every row.
Then direct=true (ext4 in /var/tmp, when O_DIRECT works), io=uring (when
io_uring works) and io=psync passes.

If $NBDRAID_CLI has a `check` command, it must report 0 mismatched stripes
(exit 0) after every workload, and exactly K (exit non-zero) after K
distinct stripes were corrupted in the member files; otherwise that part is
skipped with a message.

$NBDRAID_SEED replays a run; $NBDRAID_ONLY (a regex) selects geometries.
"""

import json
import os
import random
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest import workload  # noqa: E402
from raidtest.common import (  # noqa: E402
    MiB, check, fail, plugin, run_main, run_passes, seed, selected)
from raidtest.geometry import Geometry, RAID5_LAYOUTS  # noqa: E402
from raidtest.server import Server, stop_clean  # noqa: E402
from raidtest.workload import (  # noqa: E402
    Workload, format_counts, new_array, random_chunk, random_pass,
    verify_readback)
from raidtest.members import (  # noqa: E402
    parity_mismatches, read_member, verify_members)
from raidtest.contention import Contention  # noqa: E402


LAYOUTS = ["left-symmetric", "left-asymmetric", "right-symmetric",
           "right-asymmetric"]
GEOMETRIES = [(lay, n) for lay in LAYOUTS for n in (3, 4, 6)] + \
    [("left-symmetric", 5)]


def member_sizes(rng, n, chunk):
    return workload.member_sizes(rng, n, chunk, 2 * MiB, 3 * MiB)


def spelling(rng, layout):
    """How the test names the layout: in full, by alias, or (for the
    default) not at all."""
    choices = [layout, RAID5_LAYOUTS[layout]]
    if layout == "left-symmetric":
        choices.append(None)
    return rng.choice(choices)


# ---------------------------------------------------------------------------
# Contention: many connections on the same few stripes


def contention_region(rng, geo):
    """1-3 whole stripes (the last ones now and then), give or take a few
    unaligned bytes at either end."""
    ns = min(geo.stripes, rng.randint(1, 3))
    s0 = geo.stripes - ns if rng.random() < 0.25 else \
        rng.randrange(geo.stripes - ns + 1)
    lo = geo.stripe_span(s0)[0]
    hi = geo.stripe_span(s0 + ns - 1)[1]
    lo = max(0, lo - rng.choice([0, rng.randint(1, 3000)]))
    hi = min(geo.size, hi + rng.choice([0, rng.randint(1, 3000)]))
    return lo, hi, s0, ns


# ---------------------------------------------------------------------------
# The CLI's check command


class Cli:
    """`$NBDRAID_CLI check`, when there is one."""

    def __init__(self):
        self.path = os.environ.get("NBDRAID_CLI")
        self.ok = None     # unknown until first used
        self.runs = 0

    def available(self, geo, paths):
        if self.ok is None:
            if not self.path or not os.access(self.path, os.X_OK):
                self.ok = False
                why = "$NBDRAID_CLI is not set or not executable"
            else:
                rc, out = self.run(geo, paths, count=False)
                self.ok = not re.search(r"unknown command", out, re.I)
                why = "%s check: %s" % (self.path, out.strip()[:200])
            if not self.ok:
                print("cli check skipped: %s" % why, flush=True)
        return self.ok

    def run(self, geo, paths, json_=False, count=True):
        argv = [self.path, "check"] + (["--json"] if json_ else []) + \
            geo.params(paths)
        p = subprocess.run(argv, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=60)
        out = p.stdout.decode(errors="replace")
        err = p.stderr.decode(errors="replace")
        if count:
            self.runs += 1
        if json_:
            return p.returncode, (out, err)
        return p.returncode, out + err

    @staticmethod
    def parse_text(out):
        """The number of mismatched stripes in check's text output: the
        number next to the word mismatch(ed/es) ("3 mismatched",
        "mismatches: 3"), or the output's only number."""
        nums = set()
        for m in re.finditer(r"(\d+)[ \t]+(?:stripes?[ \t]+)?mismatch|"
                             r"mismatch\w*(?:[ \t]+stripes)?[ \t]*[:=]?"
                             r"[ \t]*(\d+)", out, re.I):
            nums.add(int(m.group(1) or m.group(2)))
        if len(nums) == 1:
            return nums.pop()
        if not nums:
            found = re.findall(r"\b\d+\b", out)
            if len(found) == 1:
                return int(found[0])
        return None

    @staticmethod
    def parse_json(text):
        """check --json: (the mismatched-stripe count, the stripe numbers it
        lists).  The count is the integer under a key naming mismatches
        ("mismatched": 3), else the length of a list there; the stripes are
        the integers in such lists (or their "stripe" fields)."""
        counts, lists = [], []

        def walk(v):
            if isinstance(v, dict):
                for k, x in v.items():
                    named = re.search(r"mismatch", k, re.I)
                    if named and isinstance(x, int) and \
                            not isinstance(x, bool):
                        counts.append(x)
                    elif named and isinstance(x, list):
                        lists.append(x)
                    else:
                        walk(x)
            elif isinstance(v, list):
                for x in v:
                    walk(x)
        walk(json.loads(text))
        listed = set()
        for ls in lists:
            for x in ls:
                if isinstance(x, dict):
                    x = x.get("stripe")
                if isinstance(x, int):
                    listed.add(x)
        if not counts:
            counts = [len(ls) for ls in lists]
        return (counts[0] if len(set(counts)) == 1 else None), listed

    def expect(self, geo, paths, want, label, stripes=()):
        """check must report want mismatched stripes, text and --json, and
        exit 0 exactly when want == 0; stripes --json lists must be among
        the given ones."""
        rc, out = self.run(geo, paths)
        n = self.parse_text(out)
        check(n is not None, "%s: cannot find the mismatch count in `%s "
              "check` output (exit %d):\n%s" % (label, self.path, rc, out))
        check(n == want, "%s: `check` reports %d mismatched stripes, want "
              "%d (exit %d):\n%s" % (label, n, want, rc, out))
        check((rc == 0) == (want == 0), "%s: `check` exits %d with %d "
              "mismatched stripes:\n%s" % (label, rc, want, out))
        rc, (out, err) = self.run(geo, paths, json_=True)
        try:
            n, listed = self.parse_json(out)
        except ValueError as e:
            fail("%s: `check --json` is not JSON (%s), exit %d:\n%s%s" % (
                label, e, rc, out, err))
        check(n == want, "%s: `check --json` reports %r mismatched stripes,"
              " want %d (exit %d):\n%s%s" % (label, n, want, rc, out, err))
        check((rc == 0) == (want == 0), "%s: `check --json` exits %d with "
              "%d mismatched stripes:\n%s" % (label, rc, want, out))
        check(listed <= set(stripes), "%s: `check --json` lists stripes "
              "%s, but only %s are bad:\n%s" % (
                    label, sorted(listed - set(stripes)), list(stripes), out))


def corrupt_stripes(rng, geo, paths, k):
    """Flip bytes of k distinct stripes in the member files (1-3 bytes each,
    on any members, data or parity, never two that cancel out), and some
    bytes past the last stripe, which belong to no stripe.  Returns the
    stripes."""
    stripes = rng.sample(range(geo.stripes), k)
    c = geo.chunk
    fds = [open(p, "r+b") for p in paths]
    try:
        def flip(m, off):
            f = fds[m]
            f.seek(off)
            b = f.read(1)[0]
            f.seek(off)
            f.write(bytes([b ^ rng.randrange(1, 256)]))
        for st in stripes:
            offs = rng.sample(range(c), rng.randint(1, 3))
            for within in offs:
                flip(rng.randrange(geo.n), st * c + within)
        for m in rng.sample(range(geo.n), 2):
            end = geo.stripes * c
            if geo.sizes[m] > end:
                flip(m, rng.randrange(end, geo.sizes[m]))
    finally:
        for f in fds:
            f.close()
    return sorted(stripes)


# ---------------------------------------------------------------------------


def run_geometry(rng, folder, layout, n, cli, extra=(), chunk=None,
                 steps=(30, 50), fight=20, corrupt=False):
    chunk = chunk or random_chunk(rng)
    geo = Geometry(5, member_sizes(rng, n, chunk), chunk,
                   spelling(rng, layout))
    label = geo.name() + (" layout=%s" % geo.layout if geo.layout else
                          " (default layout)") + \
        (" " + " ".join(extra) if extra else "")
    if not selected(label):
        return
    start = time.monotonic()
    paths, params, model = new_array(folder, geo, extra)

    # (a) disjoint random workload, read back, members and parity
    w = random_pass(params, model, geo, rng, label, steps)
    verify_members(geo, model, paths, label + " after (a)")
    if cli.available(geo, paths):
        cli.expect(geo, paths, 0, label + " after (a)")

    # (b) contention on the same few stripes, then a little more
    lo, hi, s0, ns = contention_region(rng, geo)
    with Server(params) as srv:
        c = Contention(srv, model, geo, rng, lo, hi)
        c.run(fight)
        c.adopt(label + " stripes %d-%d" % (s0, s0 + ns - 1))
        w2 = Workload(srv, model, geo, rng)
        w2.concurrent_phase(steps[0] // 3)
        w2.close()
        verify_readback(srv, model, geo, label + " after (b)")
        stop_clean(srv, label)
    # (c) the members again
    verify_members(geo, model, paths, label + " after (b)")
    if cli.available(geo, paths):
        cli.expect(geo, paths, 0, label + " after (b)")
        if corrupt:
            k = rng.randint(1, min(5, geo.stripes))
            bad = corrupt_stripes(rng, geo, paths, k)
            mem = [read_member(p) for p in paths]
            check([b[0] for b in parity_mismatches(geo, mem)] == bad,
                  "corrupt_stripes broke stripes other than %s" % bad)
            cli.expect(geo, paths, k, label + " with stripes %s corrupted" %
                       bad, bad)
    for p in paths:
        os.unlink(p)
    counts = dict(w.counts)
    for k, v in w2.counts.items():
        counts[k] = counts.get(k, 0) + v
    print("ok %-62s %5.2fs %s | fight on stripes %d-%d [%d, %d): %s" % (
        label, time.monotonic() - start,
        format_counts(counts),
        s0, s0 + ns - 1, lo, hi,
        format_counts(c.counts)),
        flush=True)


def main():
    rng = random.Random(seed("test-raid5-random"))
    plugin()
    cli = Cli()

    def run(folder, layout, n, corrupt=False, extra=()):
        run_geometry(rng, folder, layout, n, cli, extra=extra,
                     corrupt=corrupt)

    run_passes(run, [(layout, n, n in (4, 5)) for layout, n in GEOMETRIES],
               psync=[("left-asymmetric", 4), ("right-symmetric", 3)],
               uring=[("left-symmetric", 4), ("right-asymmetric", 6)],
               direct=[("left-symmetric", 3), ("right-asymmetric", 5)])
    if cli.ok:
        print("cli check: %d runs" % cli.runs)


run_main(main)
