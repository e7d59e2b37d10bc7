#!/usr/bin/env bash
# publish.sh RESULTS [DOCS [NAME]]: put the report of one bench/run into
# the docs.
#
# Copies RESULTS/report.md to DOCS/NAME.md (DOCS: the tree's docs/; NAME:
# classic-studies, or e.g. cache-study for a run of one study), its charts
# and every CSV of RESULTS (the per-study ones and results.csv,
# counts.csv, calibration.csv, timing.csv; plus facts.txt and the gnuplot
# scripts and data) to DOCS/NAME/, with the report's links pointed there.  The raw fio JSON and logs stay in RESULTS.  Refuses
# a quick run and a report that names no tree (docs carry full runs of a
# known commit).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
res=${1:?usage: publish.sh RESULTS [DOCS [NAME]]}
docs=${2:-$here/../../docs}
name=${3:-classic-studies}
case $name in '' | */* | .*) echo "publish.sh: NAME '$name': want a plain name, as cache-study" >&2; exit 1 ;; esac
[ -f "$res/report.md" ] || { echo "publish.sh: $res/report.md: no report there" >&2; exit 1; }
grep -q '^mode: full$' "$res/facts.txt" ||
	{ echo "publish.sh: $res is not a full run (facts.txt: $(grep '^mode:' "$res/facts.txt"))" >&2; exit 1; }
grep -q '^tree: [0-9a-f]\{7,\}$' "$res/facts.txt" ||
	{ echo "publish.sh: $res: facts.txt names no clean tree ($(grep '^tree:' "$res/facts.txt"))" >&2; exit 1; }
dst=$docs/$name
rm -rf "$dst"
mkdir -p "$dst/src"
cp "$res"/charts/*.png "$dst/"
cp "$res"/charts/src/* "$dst/src/"
cp "$res"/*.csv "$res/facts.txt" "$dst/"
sed -e "s#](charts/#]($name/#g" \
	-e "s#\`charts/src/\`#\`$name/src/\`#g" \
	-e '1a\
\
*This is the report of one full `bench/run`, put here by `bench/classic/publish.sh`: its charts and CSVs are in ['"$name"'/]('"$name"'/); the raw fio JSON and logs named under Files stayed in the results folder.  Run `bench/run` for your own.*' \
	"$res/report.md" >"$docs/$name.md"
echo "publish.sh: $docs/$name.md and $dst/ ($(du -sh "$dst" | cut -f1))"
