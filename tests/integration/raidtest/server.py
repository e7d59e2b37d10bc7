"""Server: one nbdkit serving the raid plugin, and NBD client helpers.

nbdkit runs on a unix socket in a private temp dir, started with
--exit-with-parent and a pid file, and is only ever signalled by its own
pid.  run_expect_failure starts one that must refuse its parameters.  The
rest are small helpers for libnbd handles: sending a request and taking
its reply (aio_send, aio_wait, aio_result), an nbd.Error's errno, the
features every array offers, the largest request to send, a clean stop.
"""

import errno
import os
import shutil
import signal
import subprocess
import tempfile
import time

import nbd

from .common import MiB, check, fail, plugin


def socket_dir():
    """Unix socket paths must be short (108 bytes): keep them in /tmp."""
    return tempfile.mkdtemp(prefix="nbdraid-sock-", dir="/tmp")


class Server:
    """nbdkit serving the raid plugin on a unix socket.

        with Server(params) as srv:
            h = srv.connect()

    params are key=value strings.  nbdkit's stderr goes to a file;
    srv.stderr() returns it (shown on failure).  Only this nbdkit, by its
    pid, is ever signalled.  Start it from the main thread: nbdkit's
    --exit-with-parent follows the thread that forked it.
    """

    def __init__(self, params, cwd=None, start=True, timeout=20):
        self.params = list(params)
        self.cwd = cwd
        self.sockdir = socket_dir()
        self.sock = os.path.join(self.sockdir, "sock")
        self.pidfile = os.path.join(self.sockdir, "pid")
        self.errfile = os.path.join(self.sockdir, "stderr")
        self.proc = None
        self.handles = []
        if start:
            self.start(timeout)

    def argv(self):
        return ["nbdkit", "--exit-with-parent", "-f", "-U", self.sock,
                "-P", self.pidfile, plugin()] + self.params

    def start(self, timeout=20):
        rc = self._launch(timeout, "nbdkit did not start")
        if rc is not None:
            self._cleanup_files()
            fail("nbdkit exited with %d at startup: %s\nstderr:\n%s" % (
                rc, " ".join(self.params), self.stderr()))
        with open(self.pidfile) as f:
            pid = int(f.read().strip() or 0)
        check(pid == self.proc.pid, "pid file %d != child %d" % (
            pid, self.proc.pid))
        return self

    def _launch(self, timeout, timeout_why):
        """Run nbdkit and wait until it has written its pid file (returns
        None) or exited (returns its exit status).  If neither happens
        within timeout seconds, kill it and fail with timeout_why."""
        err = open(self.errfile, "wb")
        self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL,
                                     stdout=err, stderr=err, cwd=self.cwd)
        err.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                return rc
            if os.path.exists(self.pidfile) and os.path.getsize(self.pidfile):
                return None
            time.sleep(0.01)
        self.kill(signal.SIGKILL)
        fail("%s within %ds: %s\nstderr:\n%s" % (
            timeout_why, timeout, " ".join(self.params), self.stderr()))

    def stderr(self):
        try:
            with open(self.errfile, "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def connect(self, meta_base=False, strict_align=False):
        h = nbd.NBD()
        if not strict_align:
            h.set_strict_mode(h.get_strict_mode() & ~nbd.STRICT_ALIGN)
        if meta_base:
            h.add_meta_context(nbd.CONTEXT_BASE_ALLOCATION)
        h.connect_unix(self.sock)
        self.handles.append(h)
        return h

    def close_handles(self):
        for h in self.handles:
            try:
                h.shutdown()
            except nbd.Error:
                pass
        self.handles = []   # libnbd 1.14 closes a handle when it is freed

    def kill(self, sig):
        """Signal our nbdkit (by pid) and reap it."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
        if self.proc is not None:
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._cleanup_files()

    def stop(self):
        """Close our connections, SIGTERM nbdkit, return its exit status."""
        self.close_handles()
        self.kill(signal.SIGTERM)
        return self.proc.returncode

    def kill9(self):
        """Crash nbdkit: no chance to flush anything."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.handles = []
        self._cleanup_files()

    def _cleanup_files(self):
        # nbdkit 1.32 leaves the socket behind when killed.
        for p in (self.sock, self.pidfile):
            try:
                os.unlink(p)
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            if self.proc is not None and self.proc.poll() is None:
                self.close_handles()
                self.kill(signal.SIGTERM)
            if exc[0] is not None and exc[0] is not SystemExit:
                print("--- nbdkit stderr (%s) ---\n%s--- end ---" % (
                    " ".join(self.params), self.stderr()), flush=True)
        finally:
            shutil.rmtree(self.sockdir, ignore_errors=True)
        return False


def run_expect_failure(params, cwd=None, timeout=20):
    """Start nbdkit expecting a startup error: returns (exit status, stderr).
    If nbdkit starts serving instead, it is killed and the test fails."""
    srv = Server(params, cwd=cwd, start=False)
    try:
        rc = srv._launch(timeout, "nbdkit neither failed nor started")
        if rc is not None:
            return rc, srv.stderr()
        srv.kill(signal.SIGTERM)
        fail("nbdkit started, but should have refused: %s\n%s" % (
            " ".join(params), srv.stderr()))
    finally:
        srv._cleanup_files()
        shutil.rmtree(srv.sockdir, ignore_errors=True)


def nbd_errno(e):
    """The numeric errno of an nbd.Error (its .errno is a name like
    'ENOTSUP' in libnbd 1.14's python binding)."""
    for a in e.args[1:]:
        if isinstance(a, int):
            return a
    return getattr(errno, str(getattr(e, "errno", "")), None)


def aio_send(h, op, data=None):
    """Send op = (kind, offset, length, flags) on h without waiting for its
    reply; a write sends data.  Returns (cookie, the nbd.Buffer a read
    fills, else None)."""
    kind, off, n, flags = op
    if kind == "write":
        return h.aio_pwrite(nbd.Buffer.from_bytearray(data), off,
                            flags=flags), None
    if kind == "read":
        buf = nbd.Buffer(n)
        return h.aio_pread(buf, off), buf
    if kind == "trim":
        return h.aio_trim(n, off, flags=flags), None
    if kind == "zero":
        return h.aio_zero(n, off, flags=flags), None
    return h.aio_flush(), None


def aio_wait(h):
    """Wait until every request in flight on h has its reply."""
    while h.aio_in_flight() > 0:
        h.poll(-1)


def aio_result(h, cookie, op, who=""):
    """The reply to op (sent by aio_send): returns op's kind, or
    "fast-zero-unsupported" when a fast zero was refused with ENOTSUP
    (allowed; it must change nothing).  Any other error fails the test,
    the message starting with who."""
    kind, off, n, flags = op
    try:
        h.aio_command_completed(cookie)
    except nbd.Error as e:
        if kind == "zero" and flags & nbd.CMD_FLAG_FAST_ZERO and \
                nbd_errno(e) == errno.ENOTSUP:
            return "fast-zero-unsupported"
        fail("%s%s %d+%d flags=0x%x failed: %s" % (who, kind, off, n, flags,
                                                   e))
    return kind


def check_array(h, geo, label):
    """The export on h has md's size for geo and every feature an array
    offers."""
    check(h.get_size() == geo.size, "%s: get_size() %d, md says %d" % (
        label, h.get_size(), geo.size))
    check_flags(h)


def check_flags(h):
    """The NBD features every array offers."""
    for name in ("can_multi_conn", "can_fua", "can_flush", "can_trim",
                 "can_zero"):
        check(getattr(h, name)(), "%s() is false" % name)
    check(not h.is_read_only(), "export is read-only")


def max_request(h, cap=4 * MiB):
    """Largest request we send: the advertised maximum, at most cap."""
    try:
        mx = h.get_block_size(nbd.SIZE_MAXIMUM)
    except nbd.Error:
        mx = 0
    return min(cap, mx) if mx > 0 else cap


def stop_clean(srv, label):
    """Stop nbdkit with SIGTERM; it must exit 0."""
    rc = srv.stop()
    check(rc == 0, "%s: nbdkit exited %d on SIGTERM\n%s" % (
        label, rc, srv.stderr()))
