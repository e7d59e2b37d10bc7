"""The placement model against the layouts md draws.

run() checks Geometry against md(4), the md raid10 comments, the kernel
commit adding far/offset (DDF stripe/offset example) and raid5.c's parity
layouts, runs Geometry.self_check over a spread of geometries, and checks
members.parity_mismatches on a hand-built RAID5.  geometry imports this and
runs it, so a model that drifted fails every test that uses it.
"""

import random

from .members import parity_mismatches


def _rows(geo):
    """Member-chunk table: rows[member_chunk][member] = logical chunk."""
    rows = {}
    for k in range(geo.chunks):
        for m, mc in geo.copies(k):
            rows.setdefault(mc, {})[m] = k
    return [[rows[r].get(m) for m in range(geo.n)] for r in sorted(rows)]


def _raid5_picture(geo):
    """RAID5 member-chunk table as md draws it: rows[stripe][member] is
    "D<k>" or "P"."""
    rows = [["P" if m == geo.parity_member(s) else None
             for m in range(geo.n)] for s in range(geo.stripes)]
    for k in range(geo.chunks):
        (m, s), = geo.copies(k)
        assert rows[s][m] is None, (geo.name(), k)
        rows[s][m] = "D%d" % k
    return [" ".join(r) for r in rows]


def run():
    """The model against layouts drawn in md(4), the md raid10 comments and
    the kernel commit adding far/offset (DDF stripe/offset example)."""
    # Imported here: geometry runs this while it is itself being imported.
    from .geometry import RAID5_LAYOUTS, Geometry
    c = 4096
    # near=2 over 3 drives: A1 A1 A2 / A2 A3 A3 / ...
    g = Geometry(10, [3 * c] * 3, c, "n2")
    assert g.chunks == 4, g.chunks
    assert _rows(g)[:2] == [[0, 0, 1], [1, 2, 2]], _rows(g)
    # offset=2 over 4 drives: A B C D / D A B C / E F G H / H E F G
    g = Geometry(10, [4 * c] * 4, c, "o2")
    assert _rows(g) == [[0, 1, 2, 3], [3, 0, 1, 2],
                        [4, 5, 6, 7], [7, 4, 5, 6]], _rows(g)
    # far=2 over 2 drives: the second half holds the copies, rotated by one
    g = Geometry(10, [4 * c] * 2, c, "f2")
    assert _rows(g) == [[0, 1], [2, 3], [1, 0], [3, 2]], _rows(g)
    # far=2 over 3 drives, 4 chunks each: stride is used // 2 = 2 rows
    g = Geometry(10, [4 * c] * 3, c, "f2")
    assert g.chunks == 6 and g.stride == 2
    assert _rows(g) == [[0, 1, 2], [3, 4, 5], [2, 0, 1], [5, 3, 4]], _rows(g)
    # near=2 over 5 drives, odd chunk count: one slot stays unused
    g = Geometry(10, [3 * c] * 5, c, "n2")
    assert g.chunks == 7, g.chunks
    # RAID10 with near_copies == n is RAID1; near 1 far 1 would be RAID0
    for n in (2, 3):
        a = Geometry(10, [5 * c] * n, c, "n%d" % n)
        b = Geometry(1, [5 * c] * n, c)
        assert a.size == b.size
        assert all(sorted(a.copies(k)) == sorted(b.copies(k))
                   for k in range(a.chunks))
    # RAID5 over 4 drives, as md draws them (md(4), drivers/md/raid5.c
    # raid5_compute_sector, the linux-raid wiki)
    pictures = {
        "left-symmetric": ["D0 D1 D2 P", "D4 D5 P D3", "D8 P D6 D7",
                           "P D9 D10 D11"],
        "left-asymmetric": ["D0 D1 D2 P", "D3 D4 P D5", "D6 P D7 D8",
                            "P D9 D10 D11"],
        "right-symmetric": ["P D0 D1 D2", "D5 P D3 D4", "D7 D8 P D6",
                            "D9 D10 D11 P"],
        "right-asymmetric": ["P D0 D1 D2", "D3 P D4 D5", "D6 D7 P D8",
                             "D9 D10 D11 P"],
    }
    for name, want in pictures.items():
        for lay in (name, RAID5_LAYOUTS[name]):
            g = Geometry(5, [4 * c + 100] * 3 + [6 * c], c, lay)
            assert g.chunks == 12 and g.size == 12 * c, (lay, g.chunks)
            assert _raid5_picture(g) == want, (lay, _raid5_picture(g))
    # the default is left-symmetric; there chunk k always sits on member k%n
    g = Geometry(5, [9 * c] * 5, c)
    assert g.r5 == "left-symmetric" and g.chunks == 36
    assert all(g.copies(k)[0][0] == k % 5 for k in range(g.chunks))
    # over 3 drives: left-symmetric D0 D1 P / D3 P D2 / P D4 D5
    g = Geometry(5, [3 * c] * 3, c, "ls")
    assert _raid5_picture(g) == ["D0 D1 P", "D3 P D2", "P D4 D5"]
    # parity_mismatches finds exactly the stripes a flipped byte breaks
    g = Geometry(5, [5 * c + 7] * 4, c, "ra")
    rnd = random.Random(5)
    mem = [bytearray(g.sizes[m]) for m in range(4)]
    for k in range(g.chunks):
        (m, r), = g.copies(k)
        mem[m][r * c:(r + 1) * c] = rnd.randbytes(c)
    for st in range(g.stripes):
        pm = g.parity_member(st)
        for m in range(4):
            if m != pm:
                for i in range(st * c, (st + 1) * c, 512):
                    mem[pm][i:i + 512] = (int.from_bytes(
                        mem[pm][i:i + 512], "little") ^ int.from_bytes(
                        mem[m][i:i + 512], "little")).to_bytes(512, "little")
    assert parity_mismatches(g, mem) == []
    mem[1][3 * c + 100] ^= 0x40
    mem[2][g.sizes[2] - 1] ^= 1     # past the last stripe: not a stripe
    assert parity_mismatches(g, mem) == [(3, 3 * c + 100, 1)]
    for lv, lay, n in [(0, None, 1), (0, None, 3), (1, None, 3),
                       (10, "n2", 4), (10, "n3", 4), (10, "f3", 4),
                       (10, "o3", 3), (10, "o2", 5), (10, "f2", 5),
                       (5, "ls", 3), (5, "la", 4), (5, "rs", 5),
                       (5, "ra", 6), (5, "left-symmetric", 7)]:
        Geometry(lv, [7 * c + 100] * (n - 1) + [9 * c], c, lay).self_check()
