#!/usr/bin/python3
"""tree.py: a deterministic tree of files for filesystem round-trip tests
(used by tests/vm/guest-fs.sh; stdlib only).

  tree.py write  ROOT MANIFEST [--seed N]
      Create the tree under ROOT (an empty, mounted filesystem): files of
      edge-case sizes (0, 1, 511, 4095, 4096, 4097, 65537, 1M+3, ...), a
      sparse file with holes, many small files, and a few "big" files of some
      MiB.  Content is pseudo-random, derived from the seed and the file's
      path.  Some files and directories are fsync'ed.  The manifest (JSON:
      size and sha256 of every file, computed from the bytes handed to
      write(), and which files are big) goes to MANIFEST, outside ROOT.
  tree.py verify ROOT MANIFEST [--state full|small]
      Read every file back and compare size and sha256 with the manifest;
      the set of files must match exactly (lost+found aside).  In state
      "small" the big files must be gone.  Exit 1 listing what differs.
  tree.py big MANIFEST
      Print the big files' paths (relative to ROOT), one per line.
  tree.py big-bytes MANIFEST
      Print the big files' total size in bytes.
"""
import argparse
import hashlib
import json
import os
import random
import sys

MiB = 1 << 20
# Edge-case sizes around sector, page, chunk (64K) and MiB boundaries.
EDGE_SIZES = [0, 1, 511, 512, 513, 4095, 4096, 4097, 65535, 65536, 65537,
              131071, 196609, MiB + 3]
# Big files: deleted before fstrim, so their size is what trim must free.
BIG_SIZES = [4 * MiB + 5, 8 * MiB - 1, 12 * MiB + 3]
N_SMALL = 150          # many small files across a few directories
SPARSE_SIZE = 3 * MiB + 1


def content(seed, rel, size):
    """The bytes of file REL: deterministic in (seed, path)."""
    return random.Random(f"{seed}:{rel}").randbytes(size)


def fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file(root, rel, data, do_fsync, piece=None):
    """Write DATA to ROOT/REL in pieces of PIECE bytes (odd sizes make the
    page cache see unaligned appends); fsync if asked."""
    path = os.path.join(root, rel)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        mv = memoryview(data)
        step = piece or max(len(data), 1)
        for off in range(0, len(data), step):
            chunk = mv[off:off + step]
            while chunk:
                n = os.write(fd, chunk)
                chunk = chunk[n:]
        if do_fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def cmd_write(args):
    seed, root = args.seed, args.root
    files = {}
    dirs = ["edge", "small/a", "small/b", "small/b/deep/er", "big", "sparse"]
    for d in dirs:
        os.makedirs(os.path.join(root, d))

    def add(rel, data, big=False, do_fsync=False, piece=None):
        write_file(root, rel, data, do_fsync, piece)
        files[rel] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                      "big": big}

    # Edge sizes; every other one fsync'ed (journal commit: flush + FUA).
    for i, sz in enumerate(EDGE_SIZES):
        rel = f"edge/f{i:02d}_{sz}"
        add(rel, content(seed, rel, sz), do_fsync=(i % 2 == 0), piece=4093)
    fsync_dir(os.path.join(root, "edge"))

    # Many small files of random sizes in three directories.
    rnd = random.Random(f"{seed}:sizes")
    smalldirs = ["small/a", "small/b", "small/b/deep/er"]
    for i in range(N_SMALL):
        sz = rnd.choice([rnd.randrange(0, 600), rnd.randrange(0, 9000),
                         rnd.randrange(0, 70000)])
        rel = f"{smalldirs[i % 3]}/s{i:03d}"
        add(rel, content(seed, rel, sz), do_fsync=(i % 10 == 0))
    for d in smalldirs:
        fsync_dir(os.path.join(root, d))

    # A sparse file: data, a hole, data at an odd offset, a hole to the end.
    rel = "sparse/holes.bin"
    buf = bytearray(SPARSE_SIZE)
    a = content(seed, rel + "#a", 4097)
    b = content(seed, rel + "#b", 3000)
    boff = 2 * MiB + 17
    buf[0:len(a)] = a
    buf[boff:boff + len(b)] = b
    path = os.path.join(root, rel)
    with open(path, "wb") as f:
        f.write(a)
        f.seek(boff)
        f.write(b)
        f.truncate(SPARSE_SIZE)
        f.flush()
        os.fsync(f.fileno())
    files[rel] = {"size": SPARSE_SIZE, "sha256": hashlib.sha256(buf).hexdigest(),
                  "big": False}

    # Big files, written in 1 MiB + 1 pieces; the last one fsync'ed.
    for i, sz in enumerate(BIG_SIZES):
        rel = f"big/b{i}_{sz}"
        add(rel, content(seed, rel, sz), big=True,
            do_fsync=(i == len(BIG_SIZES) - 1), piece=MiB + 1)
    fsync_dir(os.path.join(root, "big"))
    fsync_dir(root)

    with open(args.manifest, "w") as f:
        json.dump({"seed": seed, "files": files}, f, indent=0, sort_keys=True)
    nbig = sum(1 for v in files.values() if v["big"])
    total = sum(v["size"] for v in files.values())
    print(f"wrote {len(files)} files ({nbig} big), {total / MiB:.1f} MiB, seed {seed}")
    return 0


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(MiB)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def cmd_verify(args):
    with open(args.manifest) as f:
        man = json.load(f)["files"]
    expect = {k: v for k, v in man.items() if args.state == "full" or not v["big"]}
    found = set()
    for dirpath, dirnames, filenames in os.walk(args.root):
        rel_dir = os.path.relpath(dirpath, args.root)
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames if d != "lost+found"]
        for fn in filenames:
            found.add(os.path.normpath(os.path.join(rel_dir, fn)))
    problems = []
    for rel in sorted(set(expect) - found):
        problems.append(f"missing: {rel}")
    for rel in sorted(found - set(expect)):
        problems.append(f"unexpected: {rel}" + (" (big file should be deleted)"
                                                  if rel in man else ""))
    nbytes = 0
    for rel in sorted(set(expect) & found):
        path = os.path.join(args.root, rel)
        st = os.stat(path)
        want = expect[rel]
        if st.st_size != want["size"]:
            problems.append(f"size: {rel}: {st.st_size} != {want['size']}")
            continue
        got = sha256_file(path)
        nbytes += st.st_size
        if got != want["sha256"]:
            problems.append(f"checksum: {rel}: sha256 {got} != {want['sha256']}")
    if problems:
        print(f"tree verify ({args.state}): {len(problems)} problem(s):")
        for p in problems[:20]:
            print("  " + p)
        return 1
    print(f"verified {len(expect)} files, {nbytes / MiB:.1f} MiB, all sha256 match ({args.state})")
    return 0


def cmd_big(args):
    with open(args.manifest) as f:
        man = json.load(f)["files"]
    for rel in sorted(k for k, v in man.items() if v["big"]):
        print(rel)
    return 0


def cmd_big_bytes(args):
    with open(args.manifest) as f:
        man = json.load(f)["files"]
    print(sum(v["size"] for v in man.values() if v["big"]))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("root")
    w.add_argument("manifest")
    w.add_argument("--seed", type=int, default=1)
    v = sub.add_parser("verify")
    v.add_argument("root")
    v.add_argument("manifest")
    v.add_argument("--state", choices=["full", "small"], default="full")
    b = sub.add_parser("big")
    b.add_argument("manifest")
    bb = sub.add_parser("big-bytes")
    bb.add_argument("manifest")
    args = p.parse_args()
    return {"write": cmd_write, "verify": cmd_verify, "big": cmd_big,
            "big-bytes": cmd_big_bytes}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
