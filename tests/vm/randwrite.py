#!/usr/bin/python3
"""randwrite.py: random writes of many sizes to a block device or an NBD
export, mirrored into a reference file, so the two can be compared byte for
byte afterwards.

  randwrite.py dev  /dev/md0            REF COUNT SEED
  randwrite.py nbd  nbd+unix:///?socket= REF COUNT SEED

Sizes run from one 512-byte sector to 1 MiB at 512-byte aligned offsets
(what a block device takes), so RAID 5 sees partial-chunk, partial-stripe,
chunk-crossing and multi-stripe writes, read-modify-write and reconstruct-
write alike.  The device is fsync'ed (dev) or flushed (nbd) at the end.
"""
import os
import random
import sys


def main():
    mode, target, ref, count, seed = sys.argv[1:6]
    rng = random.Random(int(seed))
    size = os.path.getsize(ref)
    rf = os.open(ref, os.O_RDWR)
    if mode == "dev":
        fd = os.open(target, os.O_RDWR)

        def write(buf, off):
            if os.pwrite(fd, buf, off) != len(buf):
                sys.exit("randwrite: short write to %s at %d" % (target, off))

        def done():
            os.fsync(fd)
            os.close(fd)
    elif mode == "nbd":
        import nbd

        h = nbd.NBD()
        h.connect_uri(target)
        if h.get_size() != size:
            sys.exit("randwrite: export is %d bytes, reference %d"
                     % (h.get_size(), size))

        def write(buf, off):
            h.pwrite(buf, off)

        def done():
            h.flush()
            h.shutdown()
    else:
        sys.exit("randwrite: mode must be dev or nbd")

    sectors = size // 512
    for _ in range(int(count)):
        # Mostly small writes (RAID 5's read-modify-write), some large.
        n = rng.choice([1, 1, 2, 7, 8, 8, 9, 64, 127, 128, 255, 1024, 2048])
        n = min(n, sectors)
        off = rng.randrange(0, sectors - n + 1) * 512
        buf = rng.randbytes(n * 512)
        write(buf, off)
        os.pwrite(rf, buf, off)
    done()
    os.close(rf)


if __name__ == "__main__":
    main()
