"""Geometry: an independent model of where md puts every array byte.

RAID0 striping, RAID1 mirroring, RAID10 as md's drivers/md/raid10.c
__raid10_find_phys with far_set_size = raid_disks, and RAID5 with md's four
parity layouts; plus the array size md gives each.  None of it comes from
the plugin's code.  geometry_selftest pins it to md's own pictures every
time this module is imported.
"""

import re

from .common import KiB


# RAID5 layouts: md's names, their short aliases, and the two choices each
# makes: parity rotates from the last member down (left) or from the first
# up (right); data starts after the parity member and wraps (symmetric) or
# fills the other members in order (asymmetric).
RAID5_LAYOUTS = {
    "left-symmetric": "ls", "left-asymmetric": "la",
    "right-symmetric": "rs", "right-asymmetric": "ra",
}
RAID5_ALIASES = {v: k for k, v in RAID5_LAYOUTS.items()}


def raid5_layout(layout):
    """RAID5 layout name or alias -> md's full name (left-symmetric if
    None)."""
    name = RAID5_ALIASES.get(layout, layout or "left-symmetric")
    if name not in RAID5_LAYOUTS:
        raise ValueError("bad raid5 layout %r" % layout)
    return name


def parse_layout(layout, n):
    """RAID10 layout name -> (near_copies, far_copies, far_offset)."""
    m = re.fullmatch(r"([nfo])([0-9]+)", layout)
    if not m:
        raise ValueError("bad layout %r" % layout)
    k = int(m.group(2))
    if m.group(1) == "n":
        return (k, 1, False)
    return (1, k, m.group(1) == "o")


class Geometry:
    """Where md keeps each array chunk, and how big md makes the array.

    copies(k) lists (member, member_chunk) for logical chunk k, first copy
    first.  Sizes follow md: RAID0 n * smallest, RAID10
    (smallest_chunks // far_copies) * n // near_copies chunks, RAID5
    (n - 1) * smallest_chunks, all whole chunks; RAID1 the smallest member
    rounded down to 64 KiB as mdadm does (or to the chunk, if smaller), so
    its last chunk may be partial.  Array data starts at offset 0 of every
    member.

    RAID5: chunk k is data index d = k % (n-1) of stripe s = k // (n-1);
    stripe s is member chunk s of every member, its parity on member
    parity_member(s), which holds the XOR of the stripe's n-1 data chunks.
    """

    def __init__(self, level, sizes, chunk, layout=None):
        self.level = level
        self.sizes = list(sizes)
        self.n = n = len(sizes)
        self.chunk = chunk
        self.layout = layout
        self.smallest_chunks = sc = min(sizes) // chunk
        if level == 0:
            self.chunks = sc * n
        elif level == 1:
            unit = min(64 * KiB, chunk)
            self.size = min(sizes) // unit * unit
            self.chunks = -(-self.size // chunk)
        elif level == 10:
            nc, fc, fo = parse_layout(layout or "n2", n)
            assert 2 <= nc * fc <= n, "copies must fit the members"
            self.nc, self.fc, self.fo = nc, fc, fo
            self.chunks = (sc // fc) * n // nc
            used = -(-self.chunks * nc * fc // n)  # md: DIV_ROUND_UP
            self.stride = 1 if fo else used // fc
        elif level == 5:
            assert n >= 3, "raid5 needs 3 members"
            self.r5 = raid5_layout(layout)
            self.stripes = sc
            self.chunks = sc * (n - 1)
        else:
            raise ValueError("level %r" % level)
        if level != 1:
            self.size = self.chunks * chunk

    def params(self, members=(), extra=()):
        """The plugin parameters describing this geometry over the member
        paths, then the extra key=value strings."""
        p = ["level=%d" % self.level, "chunk=%d" % self.chunk]
        if self.level in (5, 10) and self.layout:
            p.append("layout=%s" % self.layout)
        return p + ["member=%s" % m for m in members] + list(extra)

    def name(self):
        s = "raid%d" % self.level
        if self.level == 10:
            s += "-" + (self.layout or "n2")
        if self.level == 5:
            s += "-" + RAID5_LAYOUTS[self.r5]
        return "%s x%d chunk=%dK sizes=%s" % (
            s, self.n, self.chunk // KiB, ",".join(str(x) for x in self.sizes))

    def label(self, extra=()):
        """name() and the extra plugin parameters, for messages."""
        return self.name() + (" " + " ".join(extra) if extra else "")

    def copies(self, k):
        assert 0 <= k < self.chunks
        if self.level == 0:
            return [(k % self.n, k // self.n)]
        if self.level == 1:
            return [(m, k) for m in range(self.n)]
        if self.level == 5:
            s, d = divmod(k, self.n - 1)
            return [(self.data_member(s, d), s)]
        return self._raid10(k)

    def where(self, x):
        """Where array byte x lives, for messages."""
        k, within = divmod(x, self.chunk)
        if self.level == 5:
            return "stripe %d" % (k // (self.n - 1))
        return "chunk %d at %s" % (k, ", ".join(
            "member %d offset %d" % (m, mc * self.chunk + within)
            for m, mc in self.copies(k)))

    def parity_member(self, s):
        """RAID5: the member holding stripe s's parity (at member chunk s)."""
        n = self.n
        if self.r5.startswith("left-"):
            return (n - 1) - s % n
        return s % n

    def data_member(self, s, d):
        """RAID5: the member holding data index d (0..n-2) of stripe s."""
        p = self.parity_member(s)
        if self.r5.endswith("-symmetric"):
            return (p + 1 + d) % self.n
        return d + 1 if d >= p else d

    def stripe_span(self, s):
        """RAID5: the array bytes [start, end) that stripe s holds."""
        w = (self.n - 1) * self.chunk
        return s * w, (s + 1) * w

    def parity_slots(self):
        """(member, member_chunk) of every parity chunk (RAID5), else []."""
        if self.level != 5:
            return []
        return [(self.parity_member(s), s) for s in range(self.stripes)]

    def _raid10(self, k):
        # md __raid10_find_phys, counted in chunks instead of sectors, with
        # far_set_size == raid_disks (so "d %= far_set_size" wraps on n).
        n, nc, fc = self.n, self.nc, self.fc
        c = k * nc
        stripe, dev = divmod(c, n)
        if self.fo:
            stripe *= fc
        out = []
        for _ in range(nc):
            d, s = dev, stripe
            out.append((d, s))
            for _ in range(1, fc):
                d = (d + nc) % n
                s += self.stride
                out.append((d, s))
            dev += 1
            if dev >= n:
                dev = 0
                stripe += 1
        return out

    def pieces(self, offset, length):
        """Split [offset, offset+length) at chunk boundaries:
        yields (array_offset, length, [(member, member_offset), ...])."""
        end = offset + length
        while offset < end:
            k, within = divmod(offset, self.chunk)
            n = min(end - offset, self.chunk - within)
            yield offset, n, [(m, mc * self.chunk + within)
                              for m, mc in self.copies(k)]
            offset += n

    def self_check(self):
        """Every copy on its own member, in range, no slot used twice; for
        RAID5 every slot of a stripe row used exactly once (data or parity)
        and a stripe's data chunks all in its row."""
        seen = set(self.parity_slots())
        assert len(seen) == len(self.parity_slots()), self.name()
        for k in range(self.chunks):
            cs = self.copies(k)
            members = [m for m, _ in cs]
            assert len(set(members)) == len(members), (self.name(), k, cs)
            for m, mc in cs:
                assert 0 <= m < self.n and 0 <= mc * self.chunk < min(self.sizes), \
                    (self.name(), k, cs)
                assert (m, mc) not in seen, (self.name(), k, cs)
                seen.add((m, mc))
        if self.level == 5:
            assert seen == {(m, r) for m in range(self.n)
                            for r in range(self.stripes)}, self.name()
            for k in range(self.chunks):
                assert self.copies(k)[0][1] == k // (self.n - 1), k


# The model is pinned to md's pictures at import: a model that drifted fails
# every test that uses it.  (geometry_selftest.run imports Geometry from
# this module, which is defined by now.)
from . import geometry_selftest  # noqa: E402

geometry_selftest.run()
