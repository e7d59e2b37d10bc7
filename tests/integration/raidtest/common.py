"""Conventions every integration test follows, and small helpers they share.

Exit codes: 0 pass, 77 skip (skip()), 1 fail (fail()/check() raise
TestFailure; run_main() reports it).  The plugin comes from
$NBDRAID_PLUGIN (plugin() skips when it is missing).  The run's random seed
is printed and $NBDRAID_SEED replays it (seed()); $NBDRAID_ONLY selects
geometries by label (selected()).  Temp dirs are removed unless
$NBDRAID_KEEP is set (TempDir).  Also: one thread per connection
(run_threads), a random test's cases and its io=psync / io=uring /
direct=true passes (run_passes), sparse member files, a file's
fingerprint, and probes for O_DIRECT and io_uring on this machine.
The shell tests follow the same conventions through ../functions.sh.
"""

import ctypes
import faulthandler
import hashlib
import os
import random
import re
import shutil
import sys
import tempfile
import threading
import time


SKIP = 77
KiB = 1024
MiB = 1024 * 1024


def skip(why):
    print("SKIP: %s" % why, flush=True)
    sys.exit(SKIP)


class TestFailure(Exception):
    pass


def fail(why):
    raise TestFailure(why)


def check(cond, why):
    if not cond:
        fail(why)


def run_main(fn):
    """Run fn(); print the failure and exit 1 on TestFailure or any error."""
    start = time.monotonic()
    # A hung plugin must not hang the suite: dump every thread's stack and
    # exit 1 (nbdkit follows us out through --exit-with-parent).
    faulthandler.dump_traceback_later(
        int(os.environ.get("NBDRAID_TIMEOUT", "110")), exit=True)
    try:
        fn()
    except TestFailure as e:
        print("FAIL: %s" % e, flush=True)
        sys.exit(1)
    print("PASS (%.1fs)" % (time.monotonic() - start), flush=True)
    sys.exit(0)


def run_threads(fn, jobs):
    """Call fn(i, *args) for the i-th args of jobs, each in its own thread
    (one per connection), and wait for all of them; then fail with every
    thread's error, each as "connection i: ..." (an exception in a thread
    would otherwise only be printed)."""
    errors = []

    def main(i, args):
        try:
            fn(i, *args)
        except BaseException as e:  # report in the main thread
            errors.append("connection %d: %s" % (i, e))
    threads = [threading.Thread(target=main, args=(i, args))
               for i, args in enumerate(jobs)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        fail("; ".join(errors))


def plugin():
    p = os.environ.get("NBDRAID_PLUGIN")
    if not p:
        skip("NBDRAID_PLUGIN is not set")
    if not os.path.isfile(p):
        skip("plugin %s not built" % p)
    if shutil.which("nbdkit") is None:
        skip("nbdkit not installed")
    return os.path.abspath(p)


def seed(name):
    """The run's seed: $NBDRAID_SEED or a fresh one; printed for replay."""
    s = os.environ.get("NBDRAID_SEED")
    s = int(s) if s else random.SystemRandom().randrange(1 << 32)
    print("%s: seed %d (rerun with NBDRAID_SEED=%d)" % (name, s, s),
          flush=True)
    return s


def keep_tmp():
    return bool(os.environ.get("NBDRAID_KEEP"))


class TempDir:
    """A private temp dir, removed on exit unless $NBDRAID_KEEP is set."""

    def __init__(self, base=None, prefix="nbdraid-"):
        self.path = tempfile.mkdtemp(prefix=prefix, dir=base)

    def __enter__(self):
        return self.path

    def __exit__(self, *exc):
        if keep_tmp():
            print("kept %s" % self.path)
        else:
            shutil.rmtree(self.path, ignore_errors=True)
        return False


def make_members(folder, sizes, prefix="m"):
    """Sparse member files of the given sizes; returns absolute paths."""
    paths = []
    for i, size in enumerate(sizes):
        p = os.path.join(os.path.abspath(folder), "%s%d.img" % (prefix, i))
        with open(p, "wb") as f:
            f.truncate(size)
        paths.append(p)
    return paths


def file_state(path):
    """sha256 and mtime_ns of a file: used to prove it was not modified."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(MiB), b""):
            h.update(b)
    st = os.stat(path)
    return (h.hexdigest(), st.st_mtime_ns, st.st_size)


def o_direct_works(folder):
    """True if a file in folder can be opened O_DIRECT and written."""
    p = os.path.join(folder, ".odirect-probe")
    try:
        with open(p, "wb") as f:
            f.truncate(64 * KiB)
        fd = os.open(p, os.O_RDWR | os.O_DIRECT)
        try:
            import mmap
            buf = mmap.mmap(-1, 4096)
            os.pwrite(fd, buf, 0)
        finally:
            os.close(fd)
        return True
    except OSError:
        return False
    finally:
        try:
            os.unlink(p)
        except OSError:
            pass


def io_uring_works():
    """True if io_uring_setup(2) succeeds here (not disabled, not seccomp)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        params = ctypes.create_string_buffer(120)  # struct io_uring_params
        fd = libc.syscall(425, 4, params)          # __NR_io_uring_setup
        if fd < 0:
            return False
        os.close(fd)
        return True
    except Exception:
        return False


def selected(label):
    """$NBDRAID_ONLY (a regex) selects geometries by label."""
    only = os.environ.get("NBDRAID_ONLY")
    return not only or re.search(only, label)


def run_passes(run, cases, psync=(), uring=(), direct=()):
    """The passes of a random test: run(folder, *case) for every case, then
    run(folder, *case, extra=[...]) for every case of psync with io=psync
    and of uring with io=uring (when io_uring works here), all in one temp
    dir; then for every case of direct with direct=true, in a temp dir in
    /var/tmp (when O_DIRECT works there)."""
    with TempDir() as d:
        for case in cases:
            run(d, *case)
        for case in psync:
            run(d, *case, extra=["io=psync"])
        if io_uring_works():
            for case in uring:
                run(d, *case, extra=["io=uring"])
        else:
            print("io=uring pass skipped: io_uring_setup fails here")
    if o_direct_works("/var/tmp"):
        with TempDir(base="/var/tmp") as d:
            for case in direct:
                run(d, *case, extra=["direct=true"])
    else:
        print("direct=true pass skipped: O_DIRECT fails in /var/tmp")
