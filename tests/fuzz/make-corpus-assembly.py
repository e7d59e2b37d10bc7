#!/usr/bin/python3
"""make-corpus-assembly.py: the seed corpus of tests/fuzz/fuzz_assembly.c.

Each of mdadm's own arrays in tests/data/md (every level, metadata 1.0,
1.1 and 1.2, with and without md's bitmap) made small: the members' real
superblocks (and bitmap pages) with their places and sizes moved to
256 KiB members (RAID 1: 1 MiB, its chunk the default 512K, which
every member must hold), as mdadm would lay out a member that size (1.1 and 1.2:
data from sector 64, after the superblock, the bitmap and the bad-block
log; 1.0: data from 0, the bitmap, the log and the superblock at the end),
checksums right, then a few requests.  Beside every whole redundant
array of 3 or 4, the same without its last member, with degraded=ok.  The input format is
fuzz_assembly.c's.  Run it again after changing the list; the files are
committed.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "md")
OUT = os.path.join(HERE, "corpus", "assembly")

CASES = ["raid0-x3", "raid1-x2-bitmap", "raid1-x2-v1.0", "raid5-ls-x4",
         "raid5-ra-x3-v1.0-bitmap", "raid10-n2-x4-v1.1",
         "raid10-f2-x3-bitmap"]
MEMBER = 256 * 1024                 # bytes (RAID 1: 1 MiB, below)
HEAD = 16 * 1024                    # 1.1 and 1.2: the first 16 KiB
TAIL = 16 * 1024                    # 1.0: the last 16 KiB
DATA_1X = 64                        # 1.1, 1.2: data offset (sectors)
# A write, a read of it, a zero, a flush, a FUA write, a read elsewhere.
REQUESTS = [(1, 12, 4096), (0, 12, 4096), (2, 9, 70000), (3, 0, 0),
            (1, 15, 100000), (0, 16, 1)]


def csum(sb):
    """md.c calc_sb_1_csum: little-endian words, csum as 0, folded once."""
    max_dev = struct.unpack_from("<I", sb, 220)[0]
    size = 256 + 2 * max_dev
    b = bytearray(sb[:size])
    b[216:220] = bytes(4)
    total = sum(struct.unpack_from("<%dI" % (size // 4), b))
    if size % 4:
        total += struct.unpack_from("<H", b, size - 2)[0]
    return ((total & 0xffffffff) + (total >> 32)) & 0xffffffff


def info(case):
    out = {}
    with open(os.path.join(DATA, case + ".info")) as f:
        for line in f:
            k, v = line.split()
            out[k] = v
    return out


def small(sb, round_to, member):
    """The superblock moved to a member of member bytes: (its sector,
    bytes)."""
    sectors = member // 512
    sb = bytearray(sb)
    level = struct.unpack_from("<i", sb, 72)[0]
    soff = struct.unpack_from("<Q", sb, 144)[0]
    bitmap = struct.unpack_from("<I", sb, 8)[0] & 1
    if soff > 8:                                    # 1.0, at the end
        soff = (sectors - 16) & ~7
        doff = 0
        dsize = soff - 8 - (8 if bitmap else 0)     # the log, the bitmap
    else:
        doff = DATA_1X
        dsize = sectors - doff
    size = dsize // round_to * round_to
    struct.pack_into("<Q", sb, 80, 0 if level == 0 else size)
    struct.pack_into("<Q", sb, 128, doff)
    struct.pack_into("<Q", sb, 136, size if level == 0 else dsize)
    struct.pack_into("<Q", sb, 144, soff)
    struct.pack_into("<I", sb, 216, csum(sb))
    return soff, bytes(sb)


def member_image(case, d, meta):
    """(head, tail) bytes of mdadm's member d, made small."""
    sb = open(os.path.join(DATA, "%s.d%d.sb" % (case, d)), "rb").read()
    chunk = struct.unpack_from("<I", sb, 88)[0] or 128   # RAID 1: 64K
    member = member_bytes(case)
    soff, sb = small(sb, chunk, member)
    img = bytearray(member)
    img[soff * 512:soff * 512 + 4096] = sb
    if "bitmap_offset" in meta:
        bm = open(os.path.join(DATA, "%s.d%d.bitmap" % (case, d)),
                  "rb").read()
        at = (soff + int(meta["bitmap_offset"])) * 512
        img[at:at + 4096] = bm
    if soff > 8:
        return b"", bytes(img[member - TAIL:])
    return bytes(img[:HEAD]), b""


def member_bytes(case):
    return 1024 * 1024 if case.startswith("raid1-") else MEMBER


def seed(case, images, flags):
    out = bytearray([len(images) - 2, flags])
    for head, tail in images:
        out += struct.pack("<HHH", member_bytes(case) // 1024, len(head),
                           len(tail))
        out += head + tail
    for op, lg, off in REQUESTS:
        out += struct.pack("<BBI", op, lg, off)
    return bytes(out)


def main():
    os.makedirs(OUT, exist_ok=True)
    for case in CASES:
        meta = info(case)
        n = len([f for f in os.listdir(DATA)
                 if f.startswith(case + ".d") and f.endswith(".sb")])
        images = [member_image(case, d, meta) for d in range(n)]
        with open(os.path.join(OUT, case), "wb") as f:
            f.write(seed(case, images, 0))
        if case.startswith("raid0") or n == 2:
            continue    # RAID 0 has no redundancy; 1 member is too few
        with open(os.path.join(OUT, case + "-degraded"), "wb") as f:
            f.write(seed(case, images[:-1], 2))


if __name__ == "__main__":
    main()
