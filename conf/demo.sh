#!/usr/bin/env bash
# The nbdraid demo: build, then serve a RAID 10 (md's near-2 layout) over
# four sparse 1 GiB files in a temporary folder, in the foreground, and
# print how to connect.  Ctrl-C stops it and removes the folder.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/deps
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
plugin=$PWD/build/plugin/nbdkit-raid-plugin.so
dir=$(mktemp -d /tmp/nbdraid-demo.XXXXXX)
trap 'rm -rf "$dir"' EXIT
members=()
for i in 0 1 2 3; do
  truncate -s 1G "$dir/member$i.img"
  members+=("member=$dir/member$i.img")
done
sock=$dir/nbd.sock
uri="nbd+unix:///?socket=$sock"
cat <<TXT
nbdraid demo: RAID 10 (near 2), chunk 512K, over 4 sparse 1 GiB files in $dir
array size 2 GiB.  Connect with any NBD client:
    nbdinfo '$uri'
    nbdsh -u '$uri' -c 'print(h.pread(512, 0))'
    nbd-client -unix $sock /dev/nbd0      (needs the nbd kernel module)
    qemu-img info '$uri'
Ctrl-C to stop.
TXT
nbdkit -f -U "$sock" "$plugin" level=10 layout=n2 chunk=512K "${members[@]}"
