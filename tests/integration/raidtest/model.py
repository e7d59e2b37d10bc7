"""Model: the expected array contents, and the data tests write.

Model keeps the bytes as a bytearray; bytes that were trimmed are "either
the old value or zero" until a read settles them.  first_mismatch describes
the first byte that breaks that rule; pattern makes write data that is
never all zero, so a lost write shows.
"""


class Model:
    """Expected array bytes.  undef[i] == 1 means byte i was trimmed and may
    read back as its old value (data[i]) or as zero."""

    def __init__(self, size):
        self.size = size
        self.data = bytearray(size)
        self.undef = bytearray(size)

    def write(self, off, buf):
        self.data[off:off + len(buf)] = buf
        self.undef[off:off + len(buf)] = bytes(len(buf))

    def zero(self, off, n):
        self.data[off:off + n] = bytes(n)
        self.undef[off:off + n] = bytes(n)

    def trim(self, off, n):
        self.undef[off:off + n] = b"\x01" * n

    def resolve(self, off, got):
        """After a read, the trimmed bytes that read as zero are now known
        (a read can't change them again): keeps the model exact."""
        n = len(got)
        if self.undef.find(1, off, off + n) < 0:
            return
        self.data[off:off + n] = got
        self.undef[off:off + n] = bytes(n)

    def mismatch(self, off, got):
        """None if got matches the model at off, else a description."""
        return first_mismatch(got, self.data, self.undef, off)


def first_mismatch(got, data, undef, off):
    """Compare got with data[off:]: exact, except bytes marked in undef may
    also be zero.  Returns None or a description of the first bad byte."""
    n = len(got)
    want = data[off:off + n]
    if got == want:
        return None
    bad = None
    if undef.find(1, off, off + n) >= 0:
        step = 4096
        for i in range(0, n, step):
            g, w = got[i:i + step], want[i:i + step]
            if g == w:
                continue
            u = undef[off + i:off + i + len(g)]
            if u.count(1) == len(u) and g.count(0) == len(g):
                continue   # a trimmed block that reads as zero
            for j in range(len(g)):
                if g[j] != w[j] and not (u[j] and g[j] == 0):
                    bad = i + j
                    break
            if bad is not None:
                break
        if bad is None:
            return None
    else:
        bad = next(i for i in range(n) if got[i] != want[i])
    ndiff = sum(1 for i in range(n) if got[i] != want[i])
    return "byte %d: got 0x%02x want 0x%02x%s (%d of %d bytes differ)" % (
        off + bad, got[bad], want[bad],
        " or 0 (trimmed)" if undef[off + bad] else "", ndiff, n)


def pattern(rng, n):
    """n random bytes, never all zero (so a lost write is visible)."""
    b = bytearray(rng.getrandbits(8 * n).to_bytes(n, "little"))
    if n:
        b[0] |= 1
    return b
