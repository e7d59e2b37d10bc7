#!/usr/bin/python3
"""make-corpus.py: the seed corpus of tests/fuzz/fuzz_superblock.c.

Copies a few of mdadm's own superblocks from tests/data/md (one per
metadata version, and ones with a bitmap) into corpus/superblock/ and
writes the hand-made edge cases beside them, each from mdadm's RAID 5
superblock with a few bytes changed and its checksum made right again:

  edge-max-dev-0       no role table; dev_number 0 is past it (a spare)
  edge-max-dev-127     an odd max_dev: the checksum ends on a half word
  edge-max-dev-1920    the largest role table, up to byte 4096; spares
  edge-max-dev-1921    one role too many: refused
  edge-ff-after-roles  every byte after the 128 roles is 0xff
  edge-name-32         a set_name of 32 bytes with no NUL

Run it again after changing the list; the files are committed.  Beside
them, crash-* are inputs the fuzzer once failed on, kept as it wrote them
(a bug fixed in src/superblock.c each, with its unit test):

  crash-name-after-nul  set_name bytes after its NUL (a decoded
                        superblock did not encode back to itself)
  crash-encode-max-dev  a struct md_sb with max_dev past 1920 (encode
                        summed the checksum past its 4096 bytes)
"""
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "md")
OUT = os.path.join(HERE, "corpus", "superblock")

REAL = [
    "raid5-ls-x4.d0.sb",  # 1.2
    "raid1-x2-v1.0.d0.sb",  # 1.0, at the end
    "raid10-n2-x4-v1.1.d1.sb",  # 1.1, at 0
    "raid1-x2-bitmap.d0.sb",  # 1.2, bitmap after the superblock
    "raid5-ra-x3-v1.0-bitmap.d2.sb",  # 1.0, bitmap before it (-16)
]

OFF_NAME, OFF_DEV_NUMBER, OFF_CSUM, OFF_MAX_DEV = 32, 160, 216, 220


def csum(sb, max_dev):
    """md.c calc_sb_1_csum: little-endian words, csum as 0, folded once."""
    size = 256 + 2 * max_dev
    b = bytearray(sb[:size])
    b[OFF_CSUM:OFF_CSUM + 4] = bytes(4)
    total = sum(struct.unpack_from("<I", b, i)[0]
                for i in range(0, size - size % 4, 4))
    if size % 4:
        total += struct.unpack_from("<H", b, size - 2)[0]
    return ((total & 0xffffffff) + (total >> 32)) & 0xffffffff


def edge(base, max_dev, roles_fill=0xffff, tail=0x00, name=None,
         dev_number=None):
    """mdadm's RAID 5 superblock with max_dev roles and the rest changed."""
    sb = bytearray(base)
    struct.pack_into("<I", sb, OFF_MAX_DEV, max_dev)
    if dev_number is not None:
        struct.pack_into("<I", sb, OFF_DEV_NUMBER, dev_number)
    if name is not None:
        sb[OFF_NAME:OFF_NAME + 32] = name
    kept = min(max_dev, 4)  # the array's own four roles
    end = 256 + 2 * min(max_dev, 1920)
    for i in range(kept, min(max_dev, 1920)):
        struct.pack_into("<H", sb, 256 + 2 * i, roles_fill)
    sb[end:] = bytes([tail]) * (4096 - end)
    if max_dev <= 1920:
        struct.pack_into("<I", sb, OFF_CSUM, csum(sb, max_dev))
    return sb


def main():
    os.makedirs(OUT, exist_ok=True)
    for name in REAL:
        shutil.copyfile(os.path.join(DATA, name), os.path.join(OUT, name))
    with open(os.path.join(DATA, REAL[0]), "rb") as f:
        base = f.read()
    edges = {
        "edge-max-dev-0": edge(base, 0),
        "edge-max-dev-127": edge(base, 127, tail=0xff),
        "edge-max-dev-1920": edge(base, 1920),
        "edge-max-dev-1921": edge(base, 1921),
        "edge-ff-after-roles": edge(base, 128, tail=0xff),
        "edge-name-32": edge(base, 128, name=b"n" * 32, dev_number=200),
    }
    for name, sb in edges.items():
        with open(os.path.join(OUT, name + ".sb"), "wb") as f:
            f.write(sb)


if __name__ == "__main__":
    main()
