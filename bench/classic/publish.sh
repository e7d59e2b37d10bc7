#!/usr/bin/env bash
# publish.sh RESULTS [DOCS]: put the report of one bench/run into the docs.
#
# Copies RESULTS/report.md to DOCS/classic-studies.md (DOCS: the tree's
# docs/), its charts and every CSV of RESULTS (the per-study ones and
# results.csv, counts.csv, calibration.csv, timing.csv; plus facts.txt and
# the gnuplot scripts and data) to DOCS/classic-studies/, with the report's
# links pointed there.  The raw fio JSON and logs stay in RESULTS.  Refuses
# a quick run and a report that names no tree (docs carry full runs of a
# known commit).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
res=${1:?usage: publish.sh RESULTS [DOCS]}
docs=${2:-$here/../../docs}
[ -f "$res/report.md" ] || { echo "publish.sh: $res/report.md: no report there" >&2; exit 1; }
grep -q '^mode: full$' "$res/facts.txt" ||
	{ echo "publish.sh: $res is not a full run (facts.txt: $(grep '^mode:' "$res/facts.txt"))" >&2; exit 1; }
grep -q '^tree: [0-9a-f]\{7,\}$' "$res/facts.txt" ||
	{ echo "publish.sh: $res: facts.txt names no clean tree ($(grep '^tree:' "$res/facts.txt"))" >&2; exit 1; }
dst=$docs/classic-studies
rm -rf "$dst"
mkdir -p "$dst/src"
cp "$res"/charts/*.png "$dst/"
cp "$res"/charts/src/* "$dst/src/"
cp "$res"/*.csv "$res/facts.txt" "$dst/"
sed -e 's#](charts/#](classic-studies/#g' \
	-e 's#`charts/src/`#`classic-studies/src/`#g' \
	-e '1a\
\
*This is the report of one full `bench/run`, put here by `bench/classic/publish.sh`: its charts and CSVs are in [classic-studies/](classic-studies/); the raw fio JSON and logs named under Files stayed in the results folder.  Run `bench/run` for your own.*' \
	"$res/report.md" >"$docs/classic-studies.md"
echo "publish.sh: $docs/classic-studies.md and $dst/ ($(du -sh "$dst" | cut -f1))"
