"""Checking the member files directly, by the placement model.

verify_members reads the member files and checks every copy of every
array byte where Geometry says it lives, and that bytes no copy maps to
were never written (still zero; member files are created sparse); for
RAID5 also the parity (verify_parity: the XOR of all members is zero on
every stripe row in use).  copy_images gives the bytes of a range as each
copy holds them.
"""

import functools

from .common import check, fail
from .model import first_mismatch


def read_member(path):
    with open(path, "rb") as f:
        return f.read()


def parity_mismatches(geo, mem):
    """RAID5: the stripes whose members do not XOR to zero, given the member
    files' contents mem; returns [(stripe, first bad member offset,
    bytes that differ)]."""
    end = geo.stripes * geo.chunk
    x = 0
    for b in mem:
        x ^= int.from_bytes(b[:end], "little")
    if x == 0:
        return []
    xb = x.to_bytes(end, "little")
    bad = []
    zero = bytes(geo.chunk)
    for st in range(geo.stripes):
        row = xb[st * geo.chunk:(st + 1) * geo.chunk]
        if row != zero:
            first = next(i for i, v in enumerate(row) if v)
            bad.append((st, st * geo.chunk + first,
                        geo.chunk - row.count(0)))
    return bad


def verify_parity(geo, mem, paths, label=""):
    """RAID5: every stripe row in use XORs to zero across the members."""
    bad = parity_mismatches(geo, mem)
    if not bad:
        return
    st, off, ndiff = bad[0]
    c = geo.chunk
    who = ["%d:%s" % (m, "P" if m == geo.parity_member(st) else "D%d" % (
        st * (geo.n - 1) + [geo.data_member(st, d)
                            for d in range(geo.n - 1)].index(m)))
           for m in range(geo.n)]
    fail("%s: parity: %d of %d stripes do not XOR to zero; first: stripe %d "
         "(member offset %d, members %s): byte %d of the row (member offset "
         "%d) XORs to 0x%02x, %d bytes of the row differ; bad stripes %s%s" % (
             label, len(bad), geo.stripes, st, st * c, " ".join(who),
             off - st * c, off,
             functools.reduce(lambda a, b: a ^ b, (m[off] for m in mem)),
             ndiff, [b[0] for b in bad[:20]],
             "..." if len(bad) > 20 else ""))


def verify_members(geo, model, paths, label=""):
    """Check every copy of every array byte in the member files, and that
    member bytes no copy maps to are still zero (never written).  RAID5:
    parity chunks count as mapped, and every stripe's parity must hold."""
    mem = [read_member(p) for p in paths]
    for i, p in enumerate(paths):
        check(len(mem[i]) == geo.sizes[i], "%s: member %d size %d != %d" % (
            label, i, len(mem[i]), geo.sizes[i]))
    covered = [bytearray(geo.sizes[i] // geo.chunk + 1) for i in range(geo.n)]
    c = geo.chunk
    for k in range(geo.chunks):
        off = k * c
        for copy, (m, mc) in enumerate(geo.copies(k)):
            covered[m][mc] = 1
            got = mem[m][mc * c:(mc + 1) * c]
            bad = first_mismatch(got, model.data, model.undef, off)
            if bad:
                fail("%s: array chunk %d copy %d on member %d (%s) at member "
                     "offset %d: %s" % (label, k, copy, m, paths[m], mc * c,
                                        bad))
    for m, mc in geo.parity_slots():
        covered[m][mc] = 1
    for m in range(geo.n):
        for mc in range(-(-geo.sizes[m] // c)):
            if covered[m][mc]:
                continue
            got = mem[m][mc * c:(mc + 1) * c]
            if got.count(0) != len(got):
                nz = next(i for i, b in enumerate(got) if b)
                fail("%s: member %d (%s) byte %d is 0x%02x but lies outside "
                     "the array's map (should never be written)" % (
                         label, m, paths[m], mc * c + nz, got[nz]))
    if geo.level == 5:
        verify_parity(geo, mem, paths, label)


def copy_images(geo, mem, lo, hi):
    """The array bytes [lo, hi) as each copy holds them in the member files
    (mem: their contents): images[j] is copy j of every chunk."""
    ncopies = len(geo.copies(0))
    images = [bytearray(hi - lo) for _ in range(ncopies)]
    for off, n, locs in geo.pieces(lo, hi - lo):
        for j, (m, moff) in enumerate(locs):
            images[j][off - lo:off - lo + n] = mem[m][moff:moff + n]
    return images
