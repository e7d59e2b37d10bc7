# shellcheck shell=bash
# functions.sh: what the shell tests share, in the manner of nbdkit's
# tests/functions.sh.  Sourced, not run, right after `set -euo pipefail`:
#
#     source "$(dirname "$0")/functions.sh"
#
# Exit codes: 0 pass, 77 skipped (skip and the requires checks), 1 fail.
# Sourcing it sets the EXIT trap: at exit it runs what cleanup_fn was given,
# last first, so a test sets no EXIT trap of its own.
# Python tests have the same conventions in raidtest/common.py.

# skip WHY...: say so and exit 77 (skipped).
skip() {
    echo "SKIP: $*"
    exit 77
}

# fail WHY...: say so and exit 1.
fail() {
    echo "FAIL: $*"
    exit 1
}

# requires CMD [ARG...]: skip unless CMD succeeds (its output is hidden).
requires() {
    "$@" >/dev/null 2>&1 || skip "needs '$*' to succeed"
}

# requires_program PROG...: skip unless every PROG is installed.
requires_program() {
    local p
    for p in "$@"; do
        command -v "$p" >/dev/null || skip "$p not installed"
    done
}

# requires_root WHY: skip unless running as root.
requires_root() {
    [ "$(id -u)" = 0 ] || skip "needs root ($1)"
}

# requires_plugin: skip unless $NBDRAID_PLUGIN names the built plugin.
requires_plugin() {
    if [ -z "${NBDRAID_PLUGIN:-}" ] || [ ! -f "$NBDRAID_PLUGIN" ]; then
        skip "plugin not built (NBDRAID_PLUGIN=${NBDRAID_PLUGIN:-})"
    fi
}

# requires_ptrace: skip unless strace is installed and may trace here.
requires_ptrace() {
    requires_program strace
    strace -f -qq -e trace=none true 2>/dev/null || skip "ptrace refused"
}

# ------------------------------------------------------------- cleanup

_cleanup_cmds=()

# cleanup_fn CMD [ARG...]: run CMD ARG... at exit (the arguments as they
# are now; a function named here sees the variables as they are then).
cleanup_fn() {
    _cleanup_cmds+=("$(printf '%q ' "$@")")
}

_run_cleanup() {
    local rc=$? i
    set +e
    for ((i = ${#_cleanup_cmds[@]} - 1; i >= 0; i--)); do
        eval "${_cleanup_cmds[i]}"
    done
    exit $rc
}
trap _run_cleanup EXIT

# make_tmpdir NAME: a private folder /var/tmp/NAME.XXXXXX in $tmpdir (in
# /var/tmp, where O_DIRECT works, unlike on tmpfs), removed at exit unless
# $NBDRAID_KEEP is set.  rm stays on the folder's own file system, so it
# never deletes through a mount left inside it.
make_tmpdir() {
    tmpdir=$(mktemp -d "/var/tmp/$1.XXXXXX")
    cleanup_fn _remove_tmpdir "$tmpdir"
}

_remove_tmpdir() {
    if [ -n "${NBDRAID_KEEP:-}" ]; then
        echo "kept $1"
    else
        rm -rf --one-file-system "$1"
    fi
}

# ------------------------------------------------------------- processes

# waitfor N CMD [ARG...]: wait up to N tenths of a second for CMD to
# succeed; returns as CMD does, tried once more at the end.
waitfor() {
    local n=$1
    shift
    for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
    "$@"
}

# alive PID: the process exists and is not a zombie.
alive() {
    local st
    [ -n "$1" ] && st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) &&
        [ "$st" != Z ]
}

gone() { ! alive "$1"; }

# start_nbdkit PIDFILE ARG...: run `nbdkit --exit-with-parent -f -P PIDFILE
# ARG...` in the background (under the command in the array
# nbdkit_wrapper, when set: nbdkit_wrapper=(strace -f -o LOG)) and wait up
# to 10 s for it to write PIDFILE; fail if it exits first or writes none.
# Sets nbdkit_pid (nbdkit's own pid, from PIDFILE).  One nbdkit at a time;
# stop_nbdkit stops it, and runs at exit.
nbdkit_wrapper=()
nbdkit_pid=
start_nbdkit() {
    local pidfile=$1 rc=0
    shift
    rm -f "$pidfile"
    "${nbdkit_wrapper[@]}" nbdkit --exit-with-parent -f -P "$pidfile" "$@" &
    _nbdkit_child=$!
    cleanup_fn stop_nbdkit
    for _ in $(seq 100); do
        [ -s "$pidfile" ] && break
        alive "$_nbdkit_child" || break
        sleep 0.1
    done
    if [ ! -s "$pidfile" ]; then
        if alive "$_nbdkit_child"; then
            kill "$_nbdkit_child" 2>/dev/null || :
            fail "nbdkit wrote no pid file within 10 s: $*"
        fi
        wait "$_nbdkit_child" || rc=$?
        fail "nbdkit exited ($rc) before writing its pid file: $*"
    fi
    nbdkit_pid=$(cat "$pidfile")
    if [ ${#nbdkit_wrapper[@]} = 0 ] && [ "$nbdkit_pid" != "$_nbdkit_child" ]; then
        fail "nbdkit's pid file says $nbdkit_pid, its pid is $_nbdkit_child"
    fi
}

# stop_nbdkit: SIGTERM to the nbdkit start_nbdkit started (by its pid, and
# only while that pid is still nbdkit), wait up to 5 s for it to exit
# (then SIGKILL), and reap it; returns its exit status (or the wrapper's).
stop_nbdkit() {
    local pid=$nbdkit_pid rc=0
    [ -n "$pid" ] || return 0
    nbdkit_pid=
    if alive "$pid" && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = nbdkit ]; then
        kill "$pid" 2>/dev/null || :
        if ! waitfor 50 gone "$pid"; then
            echo "nbdkit (pid $pid) still running 5 s after SIGTERM: SIGKILL" >&2
            kill -9 "$pid" 2>/dev/null || :
        fi
    fi
    wait "$_nbdkit_child" 2>/dev/null || rc=$?
    return $rc
}
