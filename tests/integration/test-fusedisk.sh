#!/usr/bin/env bash
# Test: bench/classic/fusedisk.c, the emulated disk behind bench/run.
# Built from the tree into a private folder and mounted small (16M, 2 ms
# access, 100 MB/s, one head), then:
#   - data: random O_DIRECT writes at random 4K-aligned offsets and lengths,
#     many overlapping earlier ones, read back whole with O_DIRECT: byte-exact
#     against a model in memory, unwritten areas zero;
#   - the disk model, exactly (time is computed, so the --stats counters are
#     exact integers): every phase's counter deltas are checked against a
#     model of the head at queue depth 1 (fusedisk's position(), its double
#     arithmetic and truncation to ns), and the named cases also against
#     closed forms: N sequential 64K reads pay the access time once, M
#     scattered 4K reads pay it M times, a small forward gap costs
#     gap / bandwidth and no seek, a gap worth more than the access time
#     costs the access time and counts a seek, a backward request seeks;
#     request and byte counts, flushes (fsync, close) and zero queue wait;
#   - umount ends the process (status 0) and removes its pid file;
#   - --exit-with-parent: fusedisk started under a shell that is then
#     killed with SIGKILL unmounts and exits within seconds.
# Needs root, /dev/fuse, cc and linux/fuse.h; exits 77 (skipped) otherwise.
# $NBDRAID_SEED replays a run.  Stops only what it started (by pid) and
# unmounts only its own mount points.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=functions.sh
source "$here/functions.sh"
src=${NBDRAID_SRC:-$(cd "$here/../.." && pwd)}/bench/classic/fusedisk.c

requires_root "fusedisk calls mount(2)"
if [ ! -c /dev/fuse ] || ! : 2>/dev/null </dev/fuse; then
    skip "/dev/fuse missing or not openable"
fi
command -v cc >/dev/null || skip "no C compiler (cc)"
if ! echo '#include <linux/fuse.h>' | cc -E -x c - >/dev/null 2>&1; then
    skip "linux/fuse.h missing (linux-libc-dev)"
fi
[ -x /usr/bin/python3 ] || skip "/usr/bin/python3 missing"

make_tmpdir nbdraid-fusedisk-test
dir=$tmpdir
bin=$dir/fusedisk
mnt=$dir/mnt
mnt2=$dir/mnt2
pid='' shell='' pid2=''

mounted() {
    awk -v m="$1" '$5 == m { found = 1 } END { exit !found }' /proc/self/mountinfo
}
# Our fusedisk: the pid still runs the binary this test built.
ours() {
    alive "$1" && [ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$bin" ]
}
# Stop our fusedisks and unmount their mount points (before make_tmpdir's
# cleanup removes the folder).
cleanup() {
    local p m
    [ -n "$shell" ] && kill -9 "$shell" 2>/dev/null || :
    for p in "$pid" "$pid2"; do
        if [ -n "$p" ] && ours "$p"; then
            kill "$p" || :   # SIGTERM: it unmounts itself
        fi
    done
    for m in "$mnt" "$mnt2"; do
        for _ in $(seq 20); do mounted "$m" || break; sleep 0.1; done
        mounted "$m" && umount -l "$m" || :
    done
    for p in "$pid" "$pid2"; do
        if [ -n "$p" ] && ours "$p"; then
            kill -9 "$p" || :
        fi
    done
}
cleanup_fn cleanup
unmounted() { ! mounted "$1"; }

echo "building $src"
cc -O2 -Wall -o "$bin" "$src"

size=16M access=2ms mbps=100
mkdir "$mnt"
"$bin" --size $size --access $access --mbps $mbps --stats "$dir/stats" \
    --pidfile "$dir/pid" --exit-with-parent "$mnt" &
pid=$!
waitfor 50 test -s "$dir/pid" || fail "fusedisk wrote no pid file within 5 s"
[ "$(cat "$dir/pid")" = "$pid" ] || fail "pid file says $(cat "$dir/pid"), pid is $pid"
mounted "$mnt" || fail "pid file written but $mnt not mounted"
[ "$(stat -c %s "$mnt/disk")" = 16777216 ] || fail "$mnt/disk is not 16M"
echo "mounted $mnt (pid $pid)"

/usr/bin/python3 - "$here" "$mnt" "$dir/stats" 16777216 2000000 $mbps <<'EOF'
import mmap, os, random, struct, sys

sys.path.insert(0, sys.argv[1])
from raidtest.common import KiB, MiB, check, fail, run_main, seed

mnt, stats_path = sys.argv[2], sys.argv[3]
SIZE, ACCESS_NS, MBPS = int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
# fusedisk: bytes_per_ns = m * 1e6 / 1e9 (doubles, as here); a transfer of
# len bytes takes (int64_t)(len / bytes_per_ns) ns, truncated.
BPN = float(MBPS) * 1e6 / 1e9
NAMES = ("reads", "writes", "rbytes", "wbytes", "seeks", "busy_ns",
         "wait_ns", "flushes")          # fusedisk.c's enum, in order


def xfer(n):
    return int(n / BPN)


def counters():
    with open(stats_path, "rb") as f:
        raw = f.read()
    check(len(raw) == 8 * len(NAMES), "stats file is %d bytes, want %d" % (
        len(raw), 8 * len(NAMES)))
    return dict(zip(NAMES, struct.unpack("<%dQ" % len(NAMES), raw)))


class Head:
    """fusedisk's one head at queue depth 1: position() and dispatch()."""

    def __init__(self):
        self.pos = -1                   # unknown until the first request
        self.d = dict.fromkeys(NAMES, 0)

    def cost(self, off):
        if self.pos < 0 or off < self.pos:
            return ACCESS_NS
        return min(int((off - self.pos) / BPN), ACCESS_NS)

    def serve(self, off, n, write):
        c = self.cost(off)
        self.d["seeks"] += c == ACCESS_NS
        self.d["busy_ns"] += c + xfer(n)
        # wait_ns stays 0: at QD1 a request arrives after the previous ended
        self.d["writes" if write else "reads"] += 1
        self.d["wbytes" if write else "rbytes"] += n
        self.pos = off + n

    def take(self):
        d, self.d = self.d, dict.fromkeys(NAMES, 0)
        return d


head = Head()
model = bytearray(SIZE)
written = bytearray(SIZE // 4096)       # 4K blocks ever written
buf = mmap.mmap(-1, MiB)                # page-aligned, for O_DIRECT
mv = memoryview(buf)
fd = os.open(os.path.join(mnt, "disk"), os.O_RDWR | os.O_DIRECT)


def pwrite(off, data):
    n = len(data)
    mv[:n] = data
    got = os.pwritev(fd, [mv[:n]], off)
    check(got == n, "pwrite %d at %d returned %d" % (n, off, got))
    model[off:off + n] = data
    written[off // 4096:(off + n) // 4096] = b"\1" * (n // 4096)
    head.serve(off, n, True)


def pread(off, n):
    got = os.preadv(fd, [mv[:n]], off)
    check(got == n, "pread %d at %d returned %d" % (n, off, got))
    head.serve(off, n, False)
    if mv[:n] != model[off:off + n]:
        bad = next(i for i in range(n) if mv[i] != model[off + i])
        fail("read %d at %d: byte %d is %#x, want %#x%s" % (
            n, off, off + bad, mv[bad], model[off + bad],
            "" if written[(off + bad) // 4096] else " (never written)"))


def phase(name, fn, want=None):
    """Run fn, then check the counter deltas against the head model and,
    if given, against `want` (a closed form, fields not given must be 0)."""
    before = counters()
    fn()
    os.statvfs(mnt)     # a barrier: fusedisk counts a read or write just
                        # after its reply; it answers STATFS after that
    after = counters()
    got = {k: after[k] - before[k] for k in NAMES}
    model_d = head.take()
    check(got == model_d, "%s: counters moved by\n  %s\nthe model says\n  %s"
          % (name, got, model_d))
    if want is not None:
        full = dict.fromkeys(NAMES, 0)
        full.update(want)
        check(got == full, "%s: counters moved by\n  %s\nwant\n  %s" % (
            name, got, full))
    print("ok %-28s %s" % (name, " ".join(
        "%s=%d" % (k, v) for k, v in got.items() if v)), flush=True)
    return got


def main():
    rng = random.Random(seed("test-fusedisk"))
    blocks = SIZE // 4096

    check(all(v == 0 for v in counters().values()),
          "counters not zero after mount: %s" % counters())

    # --- 1. data: overlapping random writes, whole-disk read-back --------
    ops, overlaps = [], 0
    ops.append((0, 8 * KiB))                        # the first bytes
    ops.append((SIZE - 12 * KiB, 12 * KiB))         # the last bytes
    ops.append((5 * MiB, MiB))                      # the largest request
    while len(ops) < 80:
        n = rng.randint(1, 64) * 4096
        prev_off, prev_n = ops[rng.randrange(len(ops))]
        kind = rng.random()
        if kind < 0.35:     # overlap an earlier write, starting before/in it
            lo = max(0, prev_off - n + 4096)
            hi = min(prev_off + prev_n - 4096, SIZE - n)
            off = rng.randint(lo // 4096, hi // 4096) * 4096
        elif kind < 0.45:   # rewrite inside an earlier write
            n = min(n, prev_n)
            off = prev_off + rng.randint(0, (prev_n - n) // 4096) * 4096
        else:
            off = rng.randint(0, (SIZE - n) // 4096) * 4096
        if any(o < off + n and off < o + m for o, m in ops):
            overlaps += 1
        ops.append((off, n))

    def writes():
        for off, n in ops:
            pwrite(off, rng.randbytes(n))
        os.fsync(fd)
        head.d["flushes"] += 1

    # Seeks and busy time: the head model only (a random offset may happen
    # to land just after the previous write); the counts in closed form.
    d = phase("random writes", writes)
    check(d["writes"] == len(ops) and d["wbytes"] == sum(n for _, n in ops)
          and d["flushes"] == 1 and d["reads"] == 0 and d["wait_ns"] == 0,
          "random writes: counts %s" % d)
    untouched = written.count(0)
    check(overlaps >= 20 and untouched >= blocks // 4,
          "workload: %d overlapping writes, %d blocks never written"
          % (overlaps, untouched))
    print("   %d writes, %d overlapping earlier ones, %d of %d 4K blocks "
          "never written" % (len(ops), overlaps, untouched, blocks))

    phase("read-back (16 x 1M)", lambda: [pread(o, MiB)
                                         for o in range(0, SIZE, MiB)],
          {"reads": 16, "rbytes": SIZE, "seeks": 1,
           "busy_ns": ACCESS_NS + 16 * xfer(MiB)})

    # --- 2. the model --------------------------------------------------------
    # (a) N sequential 64K reads from X at QD1: one access time.  The head
    # is at the end of the disk (read-back), so X seeks.
    N, X = 32, rng.randint(0, (SIZE - 32 * 64 * KiB) // 4096) * 4096
    check(head.cost(X) == ACCESS_NS, "setup: X must seek")
    phase("(a) %d seq 64K reads" % N,
          lambda: [pread(X + i * 64 * KiB, 64 * KiB) for i in range(N)],
          {"reads": N, "rbytes": N * 64 * KiB, "seeks": 1,
           "busy_ns": ACCESS_NS + N * xfer(64 * KiB)})

    # The same for writes (reads and writes cost the same).
    W, Y = 8, rng.randint(0, (SIZE - 8 * 64 * KiB) // 4096) * 4096
    if Y >= head.pos:
        Y = 0
    check(head.cost(Y) == ACCESS_NS, "setup: Y must seek")
    phase("(a) %d seq 64K writes" % W,
          lambda: [pwrite(Y + i * 64 * KiB, rng.randbytes(64 * KiB))
                   for i in range(W)],
          {"writes": W, "wbytes": W * 64 * KiB, "seeks": 1,
           "busy_ns": ACCESS_NS + W * xfer(64 * KiB)})

    # (b) M 4K reads at scattered offsets: each is behind the previous end
    # or ahead of it by more than the access time's worth of bytes.
    M, far = 24, ACCESS_NS * BPN + 4096
    offs, pos = [], head.pos
    while len(offs) < M:
        o = rng.randrange(blocks) * 4096
        if o < pos or o - pos > far:
            offs.append(o)
            pos = o + 4096
    phase("(b) %d scattered 4K reads" % M,
          lambda: [pread(o, 4 * KiB) for o in offs],
          {"reads": M, "rbytes": M * 4 * KiB, "seeks": M,
           "busy_ns": M * (ACCESS_NS + xfer(4 * KiB))})

    # (c) the gap rule: a request starting gap bytes after the previous end
    # costs min(access, gap / bandwidth); only the full access time counts
    # as a seek.  196K is worth just under 2 ms at 100 MB/s, 196K + 4K just
    # over.
    g_small, g_under, g_over = 8 * KiB, 192 * KiB, 196 * KiB
    check(xfer(g_small) < xfer(g_under) < ACCESS_NS <= xfer(g_over),
          "setup: gaps %d %d %d ns vs access %d" % (
              xfer(g_small), xfer(g_under), xfer(g_over), ACCESS_NS))
    L = 64 * KiB
    A = 2 * MiB if head.pos > 2 * MiB else 10 * MiB   # either way a seek
    check(head.cost(A) == ACCESS_NS, "setup: A must seek")
    seqs = [A]
    for g in (g_small, g_under, g_over, 0):
        seqs.append(seqs[-1] + L + g)
    seqs.append(seqs[-1] + L - 4 * KiB)         # 4K backwards: a seek
    phase("(c) gap rule", lambda: [pread(o, L) for o in seqs],
          {"reads": 6, "rbytes": 6 * L, "seeks": 3,
           "busy_ns": 3 * ACCESS_NS + xfer(g_small) + xfer(g_under)
           + 6 * xfer(L)})

    # Edges: a read at the end returns nothing, a write across the end is
    # refused (ENOSPC); neither reaches the disk model.
    def edges():
        check(os.preadv(fd, [mv[:4096]], SIZE) == 0, "read at EOF not empty")
        mv[:8192] = b"\xa5" * 8192
        try:
            os.pwritev(fd, [mv[:8192]], SIZE - 4096)
        except OSError as e:
            check(e.errno == 28, "write across the end: %s, want ENOSPC" % e)
        else:
            fail("write across the end succeeded")
        pread(SIZE - 16 * KiB, 16 * KiB)        # the last bytes unchanged
    check(head.cost(SIZE - 16 * KiB) == ACCESS_NS, "setup: edges must seek")
    phase("edges (EOF, ENOSPC)", edges,
          {"reads": 1, "rbytes": 16 * KiB, "seeks": 1,
           "busy_ns": ACCESS_NS + xfer(16 * KiB)})

    # The whole disk once more, after everything: still byte-exact.
    phase("final read-back", lambda: [pread(o, MiB)
                                      for o in range(0, SIZE, MiB)])

    # close: one FLUSH, nothing else.
    def close():
        os.close(fd)
        head.d["flushes"] += 1
    phase("close", close, {"flushes": 1})


run_main(main)
EOF

# --- 3. umount ends the process and removes its pid file ---------------------
umount "$mnt"
waitfor 50 gone "$pid" || fail "fusedisk (pid $pid) still running 5 s after umount"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] || fail "fusedisk exited $rc after umount"
[ ! -e "$dir/pid" ] || fail "pid file left behind after umount"
echo "ok umount: fusedisk exited 0, pid file removed"

# --- 4. --exit-with-parent: kill -9 the shell that started it ---------------
mkdir "$mnt2"
bash -c '"$0" --size 4M --access 1ms --pidfile "$1" --exit-with-parent "$2" &
wait' "$bin" "$dir/pid2" "$mnt2" &
shell=$!
waitfor 50 test -s "$dir/pid2" || fail "second fusedisk wrote no pid file within 5 s"
pid2=$(cat "$dir/pid2")
ppid=$(awk '{ print $4 }' "/proc/$pid2/stat")
[ "$ppid" = "$shell" ] || fail "fusedisk's parent is $ppid, not the shell $shell"
mounted "$mnt2" || fail "$mnt2 not mounted"
{ kill -9 "$shell"; wait "$shell"; } 2>/dev/null || :   # no "Killed" notice
shell=
waitfor 50 unmounted "$mnt2" || fail "$mnt2 still mounted 5 s after its parent was killed"
waitfor 50 gone "$pid2" || fail "fusedisk (pid $pid2) still running after its parent was killed"
[ ! -e "$dir/pid2" ] || fail "pid file left behind (exit-with-parent)"
pid2=
echo "ok exit-with-parent: parent killed, mount gone, fusedisk exited"
echo PASS
