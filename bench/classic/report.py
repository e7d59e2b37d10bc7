#!/usr/bin/python3
"""report.py OUT: the CSVs, charts and report.md of one bench/run.

Reads what bench/run wrote into OUT (results.csv, counts.csv,
calibration.csv, facts.txt, timing.csv, optionally notes.md, a hand-written
closing note), renders the studies as studies.py describes them (data)
into report.md.in (the fixed prose) and writes OUT/<study>.csv, the charts
(OUT/charts/*.png, their gnuplot scripts and data in OUT/charts/src/) and
OUT/report.md.  models.py holds what the figures are held against.

Every ratio is computed per repetition, against the baseline measured in
the same repetition (one member: nbdraid level=0 over that one member), and
the median of those ratios is reported with their min-max range.
Standard library only (Debian's /usr/bin/python3), plus gnuplot on PATH.
"""
import collections
import csv
import io
import itertools
import math
import os
import runpy
import statistics
import subprocess
import sys

OUT = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else sys.exit(__doc__)
HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(OUT, "charts", "src")
D = runpy.run_path(os.path.join(HERE, "studies.py"))  # the studies, as data
M = runpy.run_path(os.path.join(HERE, "models.py"))  # what the figures are held against
BASE = D["BASELINE"]
ONE = {"med": 1, "lo": 1, "hi": 1}  # the baseline against itself, on charts
GOALS, SUMMARY = [], []  # the rows of the table of goals; the lines after it


# --- input -------------------------------------------------------------------

def read(name, folder=OUT):
    """A file's text, or None if there is none."""
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return f.read()


class Facts(dict):
    """facts.txt, spaces in names as _; a fact missing there and in
    FACT_DEFAULTS reads "?"."""
    def __missing__(self, key):
        return "?"


def fnum(x):
    """x as a finite float, or None."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def to_bytes(s):
    s = s.strip()
    mult = {"k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}.get(s[-1].lower())
    return int(float(s[:-1]) * mult) if mult else int(s)


def size_label(nbytes):
    mib = 1024 ** 2
    if nbytes < mib:
        return "%dK" % (nbytes // 1024)
    return "%dM" % (nbytes // mib) if nbytes % mib == 0 else "%gM" % (nbytes / mib)


def to_seconds(s):
    for suf, m in (("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9), ("s", 1.0)):
        if s.endswith(suf):
            return float(s[: -len(suf)]) * m
    return float(s) * 1e-3


def figures(r):
    """A results.csv row, with as numbers (None: not measured) IOPS, MB/s,
    CPU, bytes/s (IOPS x size: MB/s is rounded, and a stand-in baseline has
    another size), the members' busy share (over runtime + ramp: a saturated
    member can show a few per cent over 100, the counters span a little
    more) and the share of their I/Os that paid the access time."""
    n = {k: fnum(v) for k, v in r.items()}
    b, rt, ios = n["m_busy_s"], n.get("runtime_s"), (n["m_reads"] or 0) + (n["m_writes"] or 0)
    busy = 100 * b / ((rt + (n.get("ramp_s") or 0)) * int(r["members"])) if b and rt else None
    seeks = 100 * (n["m_seeks"] or 0) / ios if ios else None
    return dict(r, **{k: n[k] for k in ("iops", "mbps", "srv_cpu", "host_cpu")},
                bps=n["iops"] * to_bytes(r["bs"]), busy=busy, seeks=seeks)


FACTS = Facts(D["FACT_DEFAULTS"], **{k.replace(" ", "_"): v for k, v in (
    line.split(": ", 1) for line in (read("facts.txt") or "").split("\n") if ": " in line)})
ROWS, COUNTS, CALIB, TIMING = (list(csv.DictReader(io.StringIO(read(n + ".csv") or "")))
                               for n in ("results", "counts", "calibration", "timing"))
STAND_IN = {s["name"]: s.get("stand_in", {}) for s in D["STUDIES"]}
DATA = {}  # DATA[(study, medium, config, pattern)][rep]: the figures of a run that succeeded
for row in ROWS:
    if row.get("fio_rc") == "0" and fnum(row["iops"]) is not None:
        key = tuple(row[k] for k in ("study", "medium", "config", "pattern"))
        DATA.setdefault(key, {})[int(row["rep"])] = figures(row)


# --- labels ------------------------------------------------------------------

def config(c):
    """Level, members, chunk, missing role (or None), cache and label of
    '1disk', '0x4', '0x4-c64K', '5x4', '5x4-m3' (role 3 missing), '5x4-Cram'
    (study 8: a cache, or nbdkit's cache filter)."""
    if c == BASE:
        return dict(config=c, level=0, members=1, chunk=None, missing=None, cache="none",
                    config_label=D["BASELINE_LABEL"])
    level, rest = c.split("x", 1)
    members, *parts = rest.split("-")
    opt = {x[0]: x[1:] for x in parts}
    d = dict(config=c, level=int(level), members=int(members), chunk=opt.get("c") or FACTS["chunk"],
             missing=int(opt["m"]) if "m" in opt else None, cache=opt.get("C", "none"))
    tmpl = D["CONFIG_LABEL"] if d["missing"] is None else D["CONFIG_LABEL_MISSING"]
    return dict(d, config_label=tmpl.format_map(d) + D["CACHE_LABEL"].get(d["cache"], ""))


def pattern(p):
    """Kind, size (bs, bytes, size), queue depth and label of 'randread:4k:8'."""
    kind, bs, qd = p.split(":")
    d = dict(pattern=p, kind=kind, bs=bs, bytes=to_bytes(bs), size=size_label(to_bytes(bs)),
             qd=int(qd))
    return dict(d, pattern_label=D["PATTERN_LABEL"][kind].format_map(d))


def dims(c, p):
    return dict(config(c), **pattern(p))


def label(dim, v):
    """A value of a pivot's axis, as a header shows it."""
    if dim in ("config", "pattern"):
        return (config if dim == "config" else pattern)(v)[dim + "_label"]
    return size_label(to_bytes(v)) if dim == "bs" else str(v)


def matches(rule, p):
    """Whether a rule's kind, bs, qd and qd_min select pattern p."""
    d = pattern(p)
    return (d["kind"] in rule.get("kind", [d["kind"]]) and d["qd"] == rule.get("qd", d["qd"])
            and d["qd"] >= rule.get("qd_min", d["qd"])
            and d["bytes"] == to_bytes(rule.get("bs", d["bs"])))


def fmt_abs(iops, mbps, p):
    """MB/s for transfers of 64K and more, else IOPS."""
    if iops is None:
        return "NA"
    if pattern(p)["bytes"] >= 64 * 1024:
        return "%.0f MB/s" % mbps
    return "%.1fk IOPS" % (iops / 1000) if iops >= 10000 else "%.0f IOPS" % iops


def fmt_ratio(r, bold=False, rng=True):
    """A ratio's median and, over several repetitions, its range."""
    if r is None:
        return "NA"
    s = ("**%.2f**" if bold else "%.2f") % r["med"]
    return s + " (%.2f–%.2f)" % (r["lo"], r["hi"]) if rng and r["n"] > 1 else s


# --- statistics --------------------------------------------------------------

def cell(where):
    """{rep: figures} of (study, medium, config, pattern); a baseline
    pattern may stand in for another."""
    study, medium, c, p = where
    if c == BASE:
        p = STAND_IN.get(study, {}).get(medium, {}).get(p, p)
    return DATA.get((study, medium, c, p), {})


def med(where, key):
    """The median of a figure over a cell's repetitions, or None."""
    vals = [r[key] for r in cell(where).values() if r[key] is not None]
    return statistics.median(vals) if vals else None


def ratio(where, base=BASE):
    """Median, min, max and number of the per-repetition ratios of a cell's
    throughput to base's (same study, medium and pattern)."""
    a, b = cell(where), cell(where[:2] + (base, where[3]))
    rs = [a[n]["bps"] / b[n]["bps"] for n in a if n in b and b[n]["bps"]]
    if not rs:
        return None
    return {"med": statistics.median(rs), "lo": min(rs), "hi": max(rs), "n": len(rs)}


def below(where, base, threshold):
    """How many of a cell's repetitions are under threshold times base's
    (same study, medium and pattern), of how many; and whether that many
    shows the cell below it: a one-sided sign test, the chance of that
    many or more under it in a tie (half each way) under 2.5 %."""
    a, b = cell(where), cell(where[:2] + (base, where[3]))
    rs = [a[n]["bps"] / b[n]["bps"] for n in a if n in b and b[n]["bps"]]
    k, n = sum(r < threshold for r in rs), len(rs)
    return k, n, k >= sign_needed(n)


def sign_needed(n):
    """The fewest of n repetitions under that show a cell under: a tie
    gives that many or more less than 2.5 % of the time (n + 1: never)."""
    return next((k for k in range(n + 1)
                 if sum(math.comb(n, i) for i in range(k, n + 1)) / 2 ** n < 0.025), n + 1)


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def goal(text, medium, value, threshold, where, why="", ok=None):
    """A row of the table of goals: value >= threshold (or ok, where the
    caller judged it), else what limited the cell where (LIMITS: each part
    whose figures were measured)."""
    ok = value is not None and value >= threshold if ok is None else ok
    f = dict({k: med(where, k) for k in ("busy", "seeks", "srv_cpu", "host_cpu")},
             cores=FACTS["cores"].split()[0])
    f["busy"] = f["busy"] if f["busy"] is None else min(f["busy"], 100)
    why = ", ".join(t.format_map(f) for keys, t in D["LIMITS"]
                    if all(f[k] is not None for k in keys)) + why
    GOALS.append([text, medium, "NA" if value is None else "%.2f" % value,
                  "no data" if value is None else "met" if ok else "**missed**",
                  "" if ok else why])


# --- output ------------------------------------------------------------------

def md_table(header, rows, align=None):
    align = align or ["---"] + ["---:"] * (len(header) - 1)
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    return "\n".join(out + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def dat_text(spec, dim, rows, titles, rs):
    """A gnuplot data file of the ratios rs[row][column]: a header, then per
    row its key and each column's values (NaN where there is none); or, if
    "long", a line per cell: x, y (indexes) and its value."""
    def vals(r):
        return [spec["fmt"].format(r[k]) if r else "NaN" for k in spec["values"]]
    if spec.get("long"):
        return "".join(" ".join(["%d %d" % (x, y)] + vals(r)) + "\n"
                       for y, row in enumerate(rs) for x, r in enumerate(row))
    lo_hi = " lo hi" if len(spec["values"]) == 3 else ""
    out = [" ".join([spec["head"]] + ['"%s"%s' % (t, lo_hi) for t in titles])]
    for v, row in zip(rows, rs):
        kib = to_bytes(v) // 1024 if dim in ("bs", "chunk") else None
        text = label(dim, v)
        if spec.get("wrap"):  # long tic labels on two lines (gnuplot's \n)
            text = text.replace(", ", "\\n").replace(" +", "\\n+")
        key = spec["row"].format(v=v, label=text, kib=kib)
        out.append(" ".join([key] + [x for r in row for x in vals(r)]))
    return "\n".join(out) + "\n"


def plots(spec, medium, fields, titles):
    """The plot clauses: the spec's, with a series per title where it says
    SERIES (data columns first + len(values) * i)."""
    out = []
    for p in spec["plots"]:
        if p == "SERIES":
            cols = [spec["first"] + len(spec["values"]) * i for i in range(len(titles))]
            out += [spec["series"].format(dat=fields["dat"], col=c, lo=c + 1, hi=c + 2, pt=5 + i,
                                          color=D["COLORS"][i], title=t)
                    for i, (c, t) in enumerate(zip(cols, titles))]
        elif isinstance(p, dict):
            out += [p[medium]] if medium in p else []
        else:
            out.append(p.format_map(fields))
    return ", \\\n     ".join(out)


def panel_fields(spec, k, n, s, rows):
    """Panel k of n (split value s): its margins, y range and key; the
    chart's width, and the x range of its rows (sizes, on a log scale)."""
    first, span, gap = spec["margins"]
    left = first + k * span / n
    return {"left": left, "right": left + span / n - gap, "ymax": s + spec["headroom"],
            "key": spec["keys"][k == n - 1], "width": spec["width"][0] + spec["width"][1] * n,
            "xlo": to_bytes(rows[0]) // 1024 / 1.5, "xhi": to_bytes(rows[-1]) // 1024 * 1.5}


def side_files(published, spec):
    """The study's published figures and an ideal, by members, as data
    files, if the chart plots them."""
    if "published" not in spec:
        return {}
    dat, ideal, qd = spec["ideal"]
    return {spec["published"]: "".join("%d %s\n" % (i + 1, v) for i, v in enumerate(published)),
            dat: "".join("%d %.3f\n" % (n, M["IDEAL"][ideal](n, qd))
                         for n in range(1, len(published) + 1))}


def gnuplot(name, files):
    """Write a chart's files into charts/src/ and run its script there;
    whether gnuplot succeeded."""
    for fname, text in files.items():
        with open(os.path.join(SRC, fname), "w") as out:
            out.write(text)
    res = subprocess.run(["gnuplot", name + ".gp"], cwd=SRC, capture_output=True, text=True)
    if res.returncode != 0:
        print("report.py: gnuplot failed on %s.gp:\n%s" % (name, res.stderr), file=sys.stderr)
    return res.returncode == 0


# --- a study on one medium, and its blocks ------------------------------------

class Part:
    """One study on one medium: its configurations and patterns, and its
    blocks (named as studies.py names them), each returning paragraphs."""

    def __init__(self, spec, medium):
        self.spec, self.study, self.medium = spec, spec["name"], medium
        self.name = "%s-%s" % (self.study, medium)  # of its charts
        order = {}  # the patterns in the order they ran (the baseline may skip some)
        for r in ROWS:
            if (r["study"], r["medium"]) == (self.study, medium):
                order.setdefault(r["config"], {})[r["pattern"]] = None
        self.pats = list(max(order.values(), key=len))
        found = dict.fromkeys(k[2] for k in DATA if k[:2] == (self.study, medium))
        self.cfgs = [c for c in spec.get("configs", found) if c in found and c != BASE]

    def where(self, c, p, study=None):
        return (study or self.study, self.medium, c, p)

    def base(self, c):
        """What c is measured against: the study's "base" for it, else one
        member."""
        return self.spec.get("base", {}).get(c, BASE)

    def ratio(self, c, p, base=None):
        return ratio(self.where(c, p), base or self.base(c))

    def one(self, p):
        """One member's figure for pattern p, and what stood in for it."""
        w, alt = self.where(BASE, p), STAND_IN[self.study].get(self.medium, {}).get(p)
        note = self.spec["stand_in_note"].format(size=pattern(alt)["size"]) if alt else ""
        return fmt_abs(med(w, "iops"), med(w, "mbps"), p) + note

    def pivot(self, names, cfgs):
        """The cells of cfgs x the patterns by their dims names names:
        {values: (config, pattern)}, and each name's values in order."""
        cells = {tuple(dims(c, p).get(n) for n in names): (c, p) for c in cfgs for p in self.pats}
        order = {"members": int, "qd": int, "chunk": to_bytes, "bs": to_bytes,
                 "pattern": self.pats.index, "config": cfgs.index}
        return cells, [sorted({k[i] for k in cells}, key=order.get(n, str))
                       for i, n in enumerate(names)]

    def at(self, cells, key):
        """The ratio of a pivot's cell (ONE for the baseline), or None."""
        c, p = cells.get(key, (None, None))
        return ONE if c == BASE else self.ratio(c, p)

    def csv_rows(self):
        """The study's CSV rows, ordered by the dims "csv_by" names: what its
        columns ask of each configuration and pattern."""
        cells, values = self.pivot(self.spec["csv_by"], self.cfgs)
        out = []
        for c, p in (cells[k] for k in itertools.product(*values) if k in cells):
            w, b, r = self.where(c, p), self.where(self.base(c), p), self.ratio(c, p) or {}
            f = dict(dims(c, p), medium=self.medium, base_iops=med(b, "iops"),
                     base_mbps=med(b, "mbps"), iops=med(w, "iops"), mbps=med(w, "mbps"),
                     ratio=r.get("med"), ratio_min=r.get("lo"), ratio_max=r.get("hi"),
                     reps=r.get("n"), members_busy_pct=med(w, "busy"),
                     srv_cpu_pct=med(w, "srv_cpu"), host_cpu_pct=med(w, "host_cpu"))
            for k, base in self.spec.get("csv_ratios", {}).items():  # to another base
                f[k] = (self.ratio(c, p, base) or {}).get("med") if base != c else None
            out.append([f.get(k) for k in self.spec["csv"]])
        return out

    def table(self, spec):
        """Rows: patterns; columns: one member, each configuration's ratio to
        each base, the ideal."""
        cols = [(c, b, h) for c in self.cfgs for b, h in spec["bases"] if b != c]
        ideal = spec.get("ideal")
        rows = [[label("pattern", p), self.one(p)]
                + [fmt_ratio(self.ratio(c, p, b)) for c, b, _h in cols]
                + ([self.ideal(ideal, p)] if ideal else []) for p in self.pats]
        header = spec["header"] + [h.format_map(config(c)) for c, _b, h in cols]
        return [md_table(header + ([ideal["header"]] if ideal else []), rows)]

    def pairs(self, spec):
        """Rows: patterns; for each configuration, its base's figure, its
        own, and the ratio of the two (median of the per-repetition
        ratios, with their range)."""
        header = [spec["header"]]
        for c in self.cfgs:
            f = dict(config(c), base_label=config(self.base(c))["config_label"])
            header += [t.format_map(f) for t in spec["columns"]]
        rows = []
        for p in self.pats:
            row = [label("pattern", p)]
            for c in self.cfgs:
                b, w = self.where(self.base(c), p), self.where(c, p)
                row += [fmt_abs(med(b, "iops"), med(b, "mbps"), p),
                        fmt_abs(med(w, "iops"), med(w, "mbps"), p),
                        fmt_ratio(self.ratio(c, p), bold=True)]
            rows.append(row)
        return [md_table(header, rows)]

    def ideal(self, spec, p):
        """The first rule that selects p: its text, or its ideal (models.py)
        for each configuration."""
        rule = next(r for r in spec["rules"] if matches(r, p))
        if "text" in rule:
            return rule["text"]
        fn, qd = M["IDEAL"][rule["ideal"]], pattern(p)["qd"]
        return " / ".join("%.2f" % fn(config(c)["members"], qd)
                          for c in self.cfgs) + rule.get("suffix", "")

    def goals(self, spec):
        """Each rule's goals, for every pattern it selects."""
        for p in self.pats:
            for rule in (r for r in spec["rules"] if matches(r, p)):
                for c, threshold in rule["configs"]:
                    r = self.ratio(c, p, rule.get("base"))
                    text = rule["text"].format_map(dict(dims(c, p), threshold=threshold))
                    goal(text, self.medium, r and r["med"], threshold, self.where(c, p))
        return []

    def versus(self, spec):
        """Study 8: per level, a table of patterns: the level without a
        cache (absolute), then each column's configuration (the level with
        a cache) over its base (the level without one, or with another
        cache); an "extra" line per pattern it names; and the "floor" goal:
        each mode at or above a base on every row."""
        out = []
        for lv in spec["levels"]:
            def cfg(mode):
                return lv if mode in (None, "none") else "%s-C%s" % (lv, mode)
            pats = [p for p in self.pats if cell(self.where(lv, p))]
            cols = [(cfg(a), cfg(b), h) for a, b, h in spec["columns"]
                    if any(cell(self.where(cfg(a), p)) for p in pats)]
            rows = []
            for p in pats:
                w = self.where(lv, p)
                rows.append([label("pattern", p), fmt_abs(med(w, "iops"), med(w, "mbps"), p)]
                            + [fmt_ratio(self.ratio(a, p, b)) for a, b, _h in cols])
            out += [spec["caption"].format_map(config(lv)),
                    md_table(spec["header"] + [h for _a, _b, h in cols], rows)]
            for p in pats:
                ref, text = spec.get("extra", {}).get(pattern(p)["kind"], (None, None))
                if ref and cell(self.where(ref, p)):
                    w = self.where(ref, p)
                    out.append(text.format(
                        abs=fmt_abs(med(w, "iops"), med(w, "mbps"), p),
                        level=config(lv)["config_label"], **{
                            m: fmt_ratio(self.ratio(cfg(m), p, ref)) for m in ("ram", "log")}))
            out += self.floor(spec.get("floor"), cfg, pats)
        return out

    def floor(self, fl, cfg, pats):
        """Study 8's goal: each mode at or above the filter on every row.
        The rows under it were measured again on their own (study
        fl["confirm"]); the goal is judged on those second measurements and
        on the rows not measured again, as lowest() does."""
        out, again = [], []
        for mode in (fl or {}).get("modes", []):
            c, b = cfg(mode), cfg("filter")
            judged = []  # (ratio judged, pattern, the grid's if measured again)
            for p in pats:
                r = self.ratio(c, p, b)
                a = fl.get("confirm") and ratio(self.where(c, p, fl["confirm"]), b)
                if a or r:
                    judged.append((a or r, p, a and r))
            again += [(c, p, g, a) for a, p, g in judged if g]
            if not judged:
                continue
            # A row measured again is missed only if its repetitions show
            # it under the filter (a sign test); the lowest such row, else
            # the lowest row.
            verdicts = []
            for r, p, g in judged:
                k, n, shown = below(self.where(c, p, fl["confirm"]), b, fl["threshold"]) \
                    if g else (None, None, r["med"] < fl["threshold"])
                verdicts.append((not shown, r["med"], r, p, g, k, n))
            ok, _m, r, p, g, k, n = min(verdicts, key=lambda v: v[:2])
            text = fl["text"].format_map(dict(dims(c, p), again=fl["again_note"].format(
                grid=g["med"], k=k, n=n) if g else ""))
            goal(text, self.medium, r["med"], fl["threshold"],
                 self.where(c, p, fl["confirm"] if g else None), fl["why"].format(lo=r["lo"]),
                 ok=ok)
        if again:
            timed = [r["runtime_s"] for c, p, _g, _a in again
                     if pattern(p)["kind"] not in ("writeflush", "copy")
                     for r in cell(self.where(c, p, fl["confirm"])).values()]
            reps = max(a["n"] for *_x, a in again)
            out = [fl["again"].format(reps=reps, need=sign_needed(reps), timed=(
                       fl["timed"].format(runtime=max(float(t) for t in timed)) if timed else "")),
                   md_table(fl["header"], [
                       [label("pattern", p), config(c)["config_label"], "%.2f" % g["med"],
                        fmt_ratio(a), "%d of %d" % below(self.where(c, p, fl["confirm"]),
                                                         cfg("filter"), fl["threshold"])[:2]]
                       for c, p, g, a in again])]
        return out

    def baseline(self, spec):
        """One member's figures: every pattern, or the grid's four corners."""
        pats = self.pats
        if spec.get("corners"):
            bss, qds = ({pattern(p)[k] for p in pats} for k in ("bytes", "qd"))
            pats = [p for p in pats if pattern(p)["bytes"] in (min(bss), max(bss))
                    and pattern(p)["qd"] in (min(qds), max(qds))]
        return [spec["text"] + "; ".join("%s %s" % (label("pattern", p), self.one(p))
                                         for p in pats) + "."]

    def grid(self, spec):
        """A ratio pivoted: a table per split value, rows by columns; a
        geometric-mean column and ranking, or the lowest cell's goal."""
        names = (spec.get("split"), spec["rows"], spec["cols"])
        cells, (splits, rows, cols) = self.pivot(names, self.cfgs)
        low, out, gms = spec.get("lowest", {}).get("threshold"), [], collections.defaultdict(list)
        for s in splits:
            lines = []
            for rv in rows:
                rs = [self.at(cells, (s, rv, cv)) for cv in cols]
                lines.append([spec["row_label"].format(rv)] + [
                    fmt_ratio(r, bold=bool(low and r and r["med"] < low), rng=False) for r in rs])
                if "geomean" in spec:
                    gms[rv].append(geomean([r and r["med"] for r in rs]))
                    lines[-1].append("**%.2f**" % gms[rv][-1] if gms[rv][-1] else "NA")
            out += [spec["caption"].format_map({names[0]: s})] if "caption" in spec else []
            header = [spec["corner"]] + [label(names[2], v) for v in cols]
            out.append(md_table(header + ([spec["geomean"]] if "geomean" in spec else []), lines))
        out += self.rank(spec, gms) if "rank" in spec else []
        return out + (self.lowest(spec["lowest"], cells) if low else [])

    def rank(self, spec, gms):
        """The grid's rows ranked by the geometric mean of their ratios; the
        best of them into the summary, on the medium it names."""
        ranked = sorted(((geomean(v), k) for k, v in gms.items() if geomean(v)), reverse=True)
        best = spec["best"]
        if not ranked:
            return []
        if self.medium == best["medium"]:
            ties = [k for g, k in ranked if g >= best["tie"] * ranked[0][0]]
            more = best["ties"].format(tie_pct=round((1 - best["tie"]) * 100, 6))
            SUMMARY.append(best["text"].format_map(collections.ChainMap(
                {"best": ", ".join("**%s**" % k for k in ties), "geomean": ranked[0][0],
                 "ties": more if len(ties) > 1 else ""}, FACTS)))
        return [spec["rank"] + ", ".join("%s %.2f" % (k, g) for g, k in ranked) + "."]

    def lowest(self, spec, cells):
        """The grid's goal: no cell under the threshold.  The lowest of many
        noisy cells is biased low: the cells under it were measured again on
        their own (study spec["confirm"]), and the goal is judged on the
        worst of those and of the cells not measured again."""
        judged = []  # (ratio judged, config, pattern, the grid's if measured again)
        for c, p in cells.values():
            r, again = self.ratio(c, p), ratio(self.where(c, p, spec["confirm"]))
            if again or r:
                judged.append((again or r, c, p, again and r))
        again, out = [j for j in judged if j[3]], []
        if again:
            a, c, p, _g = again[0]
            runs = cell(self.where(c, p, spec["confirm"])).values()
            out = [spec["again"].format(threshold=spec["threshold"], reps=a["n"], cells=len(cells),
                                        runtime=next(iter(runs))["runtime_s"]),
                   md_table(spec["header"], [[label("pattern", p), "%.2f" % g["med"],
                                              fmt_ratio(a)] for a, _c, p, g in again])]
        if judged:
            r, c, p, g = min(judged, key=lambda j: j[0]["med"])
            again_note = spec["again_note"].format(grid=g["med"]) if g else ""
            text = spec["text"].format_map(dict(dims(c, p), threshold=spec["threshold"],
                                                again=again_note))
            goal(text, self.medium, r["med"], spec["threshold"],
                 self.where(c, p, spec["confirm"] if g else None), spec["why"].format(lo=r["lo"]))
        return out

    def counts(self, spec):
        """Member I/Os per client request, counted, against the layout's."""
        out = []
        for r in (r for r in COUNTS if (r["study"], r["medium"]) == (self.study, self.medium)):
            n, c, p = int(r["client_ios"]) or 1, config(r["config"]), pattern(r["pattern"])
            er, ew = M["expected_ios"](c["level"], c["members"], to_bytes(c["chunk"]), p["kind"],
                                       p["bytes"], c["missing"] is not None)
            out.append([c["config_label"], p["pattern_label"], n,
                        "%.2f" % (int(r["m_reads"]) / n), "%.2f" % (int(r["m_writes"]) / n),
                        "%.2f / %.2f" % (int(r["m_rbytes"]) / (p["bytes"] * n),
                                         int(r["m_wbytes"]) / (p["bytes"] * n)),
                        "NA" if er is None else "%g / %g" % (round(er, 2), round(ew, 2))])
        rep = D["REPORT"]
        return [rep["counts_intro"],
                md_table(rep["counts_header"], out, rep["counts_align"])] if out else []

    def chart(self, spec):
        """A gnuplot chart of the ratios pivoted as spec["pivot"] says (split,
        rows, columns): per split a data file (a line per row, a series per
        column) and, in a chart of panels, a panel.  The script's fields: the
        spec's, the axes' and the last split's; it names its files relative
        to charts/src/, where gnuplot runs.  The link to the PNG, if any."""
        spec, names = dict(D["CHART"], **spec), spec["pivot"]
        cfgs = ([BASE] if spec["baseline"] else []) + self.cfgs
        cells, (splits, rows, cols) = self.pivot(names, cfgs)
        titles, files, panels = [label(names[2], v) for v in cols], {}, []
        tics = [", ".join("'%s' %d" % (label(n, v), i) for i, v in enumerate(vs))
                for n, vs in ((names[2], cols), (names[1], rows))]
        f = dict(spec, medium=D["CHART_MEDIUM"][self.medium].format_map(FACTS), xtics=tics[0],
                 ytics=tics[1], xend=len(cols) - 0.5, yend=len(rows) - 0.5,
                 lines="".join(spec["line"].format(y=y, label=t, style=st)
                               for y, t, st in spec["lines"]))
        for k, s in enumerate(splits):
            f.update({names[0]: s, "dat": spec["dat"].format_map({"name": self.name, names[0]: s})})
            rs = [[self.at(cells, (s, rv, cv)) for cv in cols] for rv in rows]
            files[f["dat"]] = dat_text(spec, names[1], rows, titles, rs)
            f.update(panel_fields(spec, k, len(splits), s, rows) if "panel" in spec else {})
            f["plots"] = plots(spec, self.medium, f, titles)
            panels.append(spec.get("panel", "").format_map(f))
        files.update(side_files(self.spec.get("published"), spec))
        files[self.name + ".gp"] = (
            "set terminal pngcairo size %s font 'DejaVu Sans,11'\n" % spec["size"].format_map(f)
            + "set output '../%s.png'\n" % self.name
            + ("set bmargin 4\n" if spec.get("wrap") else "")
            + spec["script"].format_map(dict(f, panels="\n".join(panels))))
        link = "![%s, %s](charts/%s.png)" % (spec["alt"], D["MEDIA"][self.medium], self.name)
        return [link] if gnuplot(self.name, files) else []


BLOCKS = {b: getattr(Part, b) for b in ("table", "pairs", "goals", "baseline", "grid", "counts",
                                        "chart", "versus")}


# --- sections ----------------------------------------------------------------

def calibration():
    """The emulated disk against its model, and the notes its cells call for."""
    if not CALIB:
        return []
    spec, pats = D["CALIBRATION"], list(dict.fromkeys(r["pattern"] for r in CALIB))
    model = {p: M["disk_iops"](pattern(p)["kind"], pattern(p)["bytes"],
                               to_seconds(FACTS["disk_access"]), float(FACTS["disk_mbps"]))
             for p in pats}
    val = {(r["target"], r["pattern"]): (fnum(r["iops"]), fnum(r["mbps"])) for r in CALIB
           if fnum(r["iops"]) is not None}
    rows = [[spec["model"]] + [fmt_abs(model[p], model[p] * pattern(p)["bytes"] / 1e6, p)
                               for p in pats]]
    for t in dict.fromkeys(r["target"] for r in CALIB):
        rows.append([spec["targets"].get(t, t)] + [
            "%s (%.2f)" % (fmt_abs(*val[(t, p)], p), val[(t, p)][0] / model[p])
            if (t, p) in val else "NA" for p in pats])
    notes = [text.format(mbps=val[(t, p)][1]) for t, p, text in spec["notes"]
             if (t, p) in val and val[(t, p)][0]]
    table = md_table(["target"] + [label("pattern", p) for p in pats], rows)
    return [spec["title"], spec["intro"], table] + (["\n".join(notes)] if notes else [])


def simulation(spec):
    """The study's simulation, for this run's disk, if it ran."""
    try:
        res = subprocess.run([sys.executable, os.path.join(HERE, spec["script"]),
                              "--access-ms", str(to_seconds(FACTS["disk_access"]) * 1000),
                              "--mbps", FACTS["disk_mbps"]],
                             capture_output=True, text=True, timeout=120)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return []
    return [spec["text"], res.stdout.strip()] if res.returncode == 0 else []


def study(spec):
    """A study's section (its CSV written, its goals and summary lines added)."""
    media = [m for m in D["MEDIA"] if any(k[:2] == (spec["name"], m) for k in DATA)]
    if not media:
        return []
    fmt = collections.ChainMap({"published": ", ".join(spec.get("published", []))}, FACTS)
    out, rows = [spec["title"]] + [p.format_map(fmt) for p in spec["intro"]], []
    out += simulation(spec["simulation"]) if "simulation" in spec else []
    for m in media:
        part = Part(spec, m)
        out.append("### " + D["MEDIA"][m])
        for block in (b for b in spec["blocks"] if m in b.get("media", [m])):
            out += BLOCKS[block["block"]](part, block)
        rows += part.csv_rows()
    with open(os.path.join(OUT, spec["name"] + ".csv"), "w", newline="") as f:
        csv.writer(f).writerows([spec["csv"]] + rows)
    return out


# --- study 7: recovery (its own CSV, recovery-runs.csv) ----------------------

def recovery(spec):
    """Study 7's section: per medium, the idle table (recovery against dd,
    sparse against full) and the load table, each figure the median of
    per-repetition ratios of runs of the same repetition; its goals; its
    CSV."""
    runs = list(csv.DictReader(io.StringIO(read("recovery-runs.csv") or "")))
    if not runs:
        return []
    fmt = collections.ChainMap({"r7_dd": FACTS["r7_dd"]}, FACTS)
    out, csv_rows = [spec["title"]] + [p.format_map(fmt) for p in spec["intro"]], []

    def val(r, k):
        return fnum(r.get(k))

    def stats(xs):
        xs = [x for x in xs if x is not None]
        return {"med": statistics.median(xs), "lo": min(xs), "hi": max(xs), "n": len(xs)} \
            if xs else None

    def mbps(b, t):
        return "%.0f MB/s" % (b / t / 1e6) if b and t else "NA"

    def med_of(rs, k):
        xs = [val(r, k) for r in rs if val(r, k) is not None]
        return statistics.median(xs) if xs else None

    for medium in (m for m in D["MEDIA"] if any(r["medium"] == m for r in runs)):
        mr = [r for r in runs if r["medium"] == medium]
        out.append("### " + D["MEDIA"][medium])
        by = collections.defaultdict(dict)  # (config, case, load, speed) -> {rep: row}
        for r in mr:
            by[(r["config"], r["case"], r["load"], r["speed_min"])][int(r["rep"])] = r
        cfgs = list(dict.fromkeys(r["config"] for r in mr))
        idle_rows, load_rows = [], []
        for c in cfgs:
            lab = config(c)["config_label"]
            full = {k: v for k, v in by[(c, "full", "idle", FACTS["r7_fast"])].items()
                    if val(v, "seconds")}
            dd, sparse = by[(c, "dd", "", "")], by[(c, "sparse", "idle", FACTS["r7_fast"])]
            rdd = stats([(val(full[n], "bytes") / val(full[n], "seconds"))
                         / (val(dd[n], "bytes") / val(dd[n], "seconds"))
                         for n in full if n in dd and val(dd[n], "seconds")])
            rsp = stats([val(sparse[n], "seconds") / val(full[n], "seconds")
                         for n in full if n in sparse and val(sparse[n], "seconds")])
            fr = list(full.values())
            idle_rows.append([
                lab, "%.0f MiB" % (val(fr[0], "bytes") / 2 ** 20) if fr else "NA",
                mbps(med_of(dd.values(), "bytes"), med_of(dd.values(), "seconds")),
                "%s (%s s; server CPU %.0f %% of a core)" % (
                    mbps(med_of(fr, "bytes"), med_of(fr, "seconds")),
                    "%.2f" % med_of(fr, "seconds"), med_of(fr, "srv_cpu") or 0) if fr else "NA",
                fmt_ratio(rdd, bold=True),
                "%.0f %%, %.0f %%" % (med_of(sparse.values(), "data_pct"),
                                      med_of(sparse.values(), "rows_pct")) if sparse else "–",
                fmt_ratio(rsp, bold=True) if sparse else "–"])
            g = spec["goals"]
            for key, r, ok, text in (
                    ("dd", rdd, rdd and rdd["med"] >= g["dd"], spec["goal_dd"]),
                    ("sparse", rsp, rsp and rsp["med"] <= g["sparse"], spec["goal_sparse"])):
                if r is None:
                    continue
                why = "" if ok else "server CPU %.0f %% of a core during the recovery, machine %.0f %% of %s00 %%" % (
                    med_of(fr, "srv_cpu") or 0, med_of(fr, "host_cpu") or 0, FACTS["cores"].split()[0])
                GOALS.append([text.format_map(collections.ChainMap(dict(
                    config_label=lab, threshold=g[key], medium_label=D["MEDIA"][medium]), FACTS)),
                    medium, "%.2f" % r["med"], "met" if ok else "**missed**", why])
                csv_rows.append([medium, c, key, "idle", FACTS["r7_fast"], r["n"], None, r["med"],
                                 r["lo"], r["hi"], med_of(fr, "srv_cpu"), med_of(fr, "host_cpu")])
            for (c2, case, load, smin), reps in by.items():
                if c2 != c or case != "load":
                    continue
                client, slow, rate = [], [], []
                for n, r in reps.items():
                    b, d, a = val(r, "before_iops"), val(r, "during_iops"), val(r, "after_iops")
                    if b and a and d is not None:
                        client.append(d / ((b + a) / 2))
                    t = val(r, "seconds")
                    if not t and val(r, "done_bytes") and val(r, "during_seconds"):
                        # Capped: the time to the end projected from the
                        # rate over the timed part (member bytes).
                        rate.append(val(r, "done_bytes") / val(r, "during_seconds"))
                        t = val(r, "total_bytes") / rate[-1]
                    if t and n in full:
                        slow.append(t / val(full[n], "seconds"))
                rc, rt, rr = stats(client), stats(slow), list(reps.values())
                if rate:
                    rec = "%.1f MB/s over %.0f s (%d of %d timed runs unfinished)" % (
                        statistics.median(rate) / 1e6, med_of(rr, "during_seconds"),
                        len(rate), len(rr))
                else:
                    rec = "%s (%.2f s)" % (mbps(med_of(rr, "bytes"), med_of(rr, "seconds")),
                                           med_of(rr, "seconds"))
                csv_rows.append([medium, c, "client", load, smin, rc and rc["n"],
                                 med_of(rr, "before_iops"), rc and rc["med"], rc and rc["lo"],
                                 rc and rc["hi"], med_of(rr, "srv_cpu"), med_of(rr, "host_cpu")])
                csv_rows.append([medium, c, "time_vs_idle", load, smin, rt and rt["n"],
                                 med_of(rr, "seconds"), rt and rt["med"], rt and rt["lo"],
                                 rt and rt["hi"], med_of(rr, "srv_cpu"), med_of(rr, "host_cpu")])
                load_rows.append([lab, spec["labels"].get(load, load),
                                  "%s / %s" % (smin, next(iter(rr))["speed_max"]),
                                  "%.1fk" % (statistics.median(
                                      (val(r, "before_iops") + val(r, "after_iops")) / 2
                                      for r in rr) / 1000),
                                  fmt_ratio(rc, bold=True), rec,
                                  fmt_ratio(rt, bold=True) + (" (projected)" if rate else "")])
        out.append(md_table(spec["idle_header"], idle_rows))
        if load_rows:
            out.append(md_table(spec["load_header"], load_rows))
    with open(os.path.join(OUT, spec["name"] + ".csv"), "w", newline="") as f:
        csv.writer(f).writerows([spec["csv"]] + csv_rows)
    return out


def paragraphs(ps):
    return "".join(p + "\n\n" for p in ps)


def main():
    os.makedirs(SRC, exist_ok=True)
    rep = D["REPORT"]
    body = calibration() + [p for spec in D["STUDIES"] for p in (
        recovery(spec) if spec.get("kind") == "recovery" else study(spec))]
    missed = [g for g in GOALS if g[3] != "met"]
    closing = rep["missed"].format(missed=len(missed), goals=len(GOALS)) if missed else rep["met"]
    notes = read("notes.md")
    goals = [rep["goals_intro"],
             md_table(rep["goals_header"], GOALS, rep["goals_align"])] if GOALS else []
    timing = [md_table(rep["timing_header"], [[t["study"], t["medium"], t["seconds"]]
                                              for t in TIMING])] if TIMING else []
    machine = [(k, k.replace(" ", "_")) for k in D["MACHINE"]]
    template = read("report.md.in", HERE).split("-->\n", 1)[-1]  # the comment at the top
    text = template.format_map(collections.ChainMap(dict(
        quick="" if FACTS["mode"] == "full" else " --quick",
        closing=closing if notes is None else notes.strip(),
        machine="".join("- %s: %s\n" % (k, FACTS[f]) for k, f in machine if f in FACTS),
        goals=paragraphs(goals + SUMMARY), body=paragraphs(body), timing=paragraphs(timing),
        study_csvs=", ".join("`%s.csv`" % s["name"] for s in D["STUDIES"]
                             if os.path.exists(os.path.join(OUT, s["name"] + ".csv")))), FACTS))
    with open(os.path.join(OUT, "report.md"), "w", encoding="utf-8") as f:
        f.write(text)
    print("report.py: wrote %s" % os.path.join(OUT, "report.md"))


main()
