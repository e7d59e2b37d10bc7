"""Shared helpers of the nbdraid integration tests (tests/integration).

Run by /usr/bin/python3 (the interpreter that has python3-libnbd).  A test
puts its own folder on sys.path and imports what it needs from:

  common             exit conventions (0 pass, 77 skip, 1 fail), run_main,
                     the plugin path, the run's seed, temp dirs, threads
                     per connection, the io=psync/uring/direct=true
                     passes, sparse member files, O_DIRECT and io_uring
                     probes
  geometry           Geometry: an independent model of where md puts every
                     array byte (RAID0, RAID1, RAID10 near/far/offset, RAID5
                     with md's four parity layouts) and the md array size
  geometry_selftest  the model against md's own pictures; runs whenever
                     geometry is imported
  model              Model: the expected array contents (trimmed bytes are
                     "either the old value or zero"); pattern() for data
  server             Server: one nbdkit on a unix socket in a private temp
                     dir, --exit-with-parent, signalled only by its pid;
                     run_expect_failure; NBD client helpers (aio_send,
                     aio_result, check_array, ...)
  workload           Workload: random I/O over several connections in
                     disjoint regions, checked against a Model;
                     random_pass, fill, verify_readback, new_array;
                     Background: the load in a thread, for as long as
                     the caller does something to the array
  mdarray            md arrays by `nbdraid create`, examine (nbdraid's
                     and mdadm's), their Geometry, nbdraid map; Control
                     (status --json, fail, remove) and EventLog (an
                     event= program and its log)
  members            verify_members / verify_parity: every copy of every
                     array byte in the member files where Geometry says,
                     nothing written outside the map, RAID5 parity
  contention         Contention: connections fighting over the same few
                     chunks or stripes; every byte read must be one some
                     request could have left there

Environment: NBDRAID_PLUGIN (the plugin; tests skip without it),
NBDRAID_SEED (replay a run), NBDRAID_ONLY (a regex selecting geometries),
NBDRAID_KEEP (keep temp dirs), NBDRAID_TIMEOUT (seconds before a hung test
dumps its threads and fails; default 110).
"""
