#!/usr/bin/python3
"""report.py OUT: the CSVs, charts and report.md of one bench/run.

A generic renderer: it reads what bench/run wrote into OUT (results.csv,
counts.csv, calibration.csv, facts.txt, timing.csv, optionally notes.md, a
hand-written closing note), renders the studies as studies.py describes
them (data: tables, goals, charts, prose) into report.md.in (the fixed
prose), and writes OUT/<study>.csv (medians and ratios), OUT/charts/*.png
(gnuplot scripts and data in OUT/charts/src/) and OUT/report.md.
models.py holds what the figures are held against (the disk model, the
layouts' member I/Os, the ideal speed-ups).

Every ratio is computed per repetition, against the baseline measured in
the same repetition (one member: nbdraid level=0 over that one member), and
the median of those ratios is reported with their min-max range.
Standard library only (Debian's /usr/bin/python3), plus gnuplot on PATH.
"""
import collections
import csv
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


# --- input -------------------------------------------------------------------

def read_csv(name):
    path = os.path.join(OUT, name)
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class Facts(dict):
    """facts.txt, spaces in names as _: a fact that neither it nor
    FACT_DEFAULTS has reads "?"."""
    def __missing__(self, key):
        return "?"


def read_facts():
    facts = Facts(D["FACT_DEFAULTS"])
    path = os.path.join(OUT, "facts.txt")
    if os.path.exists(path):
        with open(path) as f:
            for k, v in (line.rstrip("\n").split(": ", 1) for line in f if ": " in line):
                facts[k.replace(" ", "_")] = v
    return facts


def fnum(x):
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


FACTS = read_facts()
ROWS = read_csv("results.csv")
COUNTS = read_csv("counts.csv")
CALIB = read_csv("calibration.csv")
TIMING = read_csv("timing.csv")
STAND_IN = {s["name"]: s.get("stand_in", {}) for s in D["STUDIES"]}

# DATA[(study, medium)][(config, pattern)][rep] = row
DATA = {}
for r in ROWS:
    if r.get("fio_rc") == "0" and fnum(r["iops"]) is not None:
        DATA.setdefault((r["study"], r["medium"]), {}).setdefault(
            (r["config"], r["pattern"]), {})[int(r["rep"])] = r


def patterns_of(study, medium):
    """The study's patterns, in the order they ran (the baseline may skip
    some, so the order is taken from every configuration)."""
    order = {}
    for r in ROWS:
        if r["study"] == study and r["medium"] == medium:
            order.setdefault(r["config"], {})[r["pattern"]] = None
    return list(max(order.values(), key=len)) if order else []


# --- labels ------------------------------------------------------------------

def parse_config(c):
    """(level, members, chunk) of '1disk', '0x4', '0x4-c64K', '5x4'."""
    if c == BASE:
        return 0, 1, None
    level, rest = c.split("x", 1)
    members, _, chunk = rest.partition("-c")
    return int(level), int(members), chunk or FACTS["chunk"]


def config_label(c):
    if c == BASE:
        return D["BASELINE_LABEL"]
    level, members, _chunk = parse_config(c)
    return D["CONFIG_LABEL"].format(level=level, members=members)


def pattern_parts(p):
    kind, bs, qd = p.split(":")
    return kind, bs, int(qd)


def pattern_label(p):
    kind, bs, qd = pattern_parts(p)
    return D["PATTERN_LABEL"][kind].format(size=size_label(to_bytes(bs)), qd=qd)


def dims(c, p):
    """What a grid pivots on and a CSV row shows of a configuration and a pattern."""
    _level, members, chunk = parse_config(c)
    _kind, bs, qd = pattern_parts(p)
    return {"config": c, "config_label": config_label(c), "members": members, "chunk": chunk,
            "pattern": p, "pattern_label": pattern_label(p), "bs": bs, "qd": qd}


def label(dim, v):
    """A value of a pivot's axis, as a header shows it."""
    if dim in ("pattern", "config"):
        return {"pattern": pattern_label, "config": config_label}[dim](v)
    return size_label(to_bytes(v)) if dim == "bs" else str(v)


def axis(dim, v):
    """A value of a pivot's axis (v), its label and, a size, its KiB."""
    return {"v": v, "label": label(dim, v),
            "kib": to_bytes(v) // 1024 if dim in ("bs", "chunk") else None}


def matches(rule, p):
    """Whether pattern p is one of those the rule's kind, bs, qd and qd_min select."""
    kind, bs, qd = pattern_parts(p)
    return (kind in rule.get("kind", [kind]) and qd == rule.get("qd", qd)
            and qd >= rule.get("qd_min", qd) and to_bytes(bs) == to_bytes(rule.get("bs", bs)))


def fmt_abs(v, p):
    """Absolute figure: MB/s for transfers of 64K and more, else IOPS."""
    if v is None:
        return "NA"
    if to_bytes(pattern_parts(p)[1]) >= 64 * 1024:
        return "%.0f MB/s" % v[1]
    return "%.1fk IOPS" % (v[0] / 1000) if v[0] >= 10000 else "%.0f IOPS" % v[0]


def fmt_ratio(r, bold=False, rng=True):
    if r is None:
        return "NA"
    s = ("**%.2f**" if bold else "%.2f") % r["med"]
    return s + " (%.2f–%.2f)" % (r["lo"], r["hi"]) if rng and r["n"] > 1 else s


# --- statistics --------------------------------------------------------------

def cell(study, medium, cfg, pat):
    """{rep: row} of one configuration and pattern (a baseline pattern may
    stand in for another)."""
    if cfg == BASE:
        pat = STAND_IN.get(study, {}).get(medium, {}).get(pat, pat)
    return DATA.get((study, medium), {}).get((cfg, pat), {})


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def per_rep(fn, *where):
    """The median over the repetitions of cell(*where) of fn(row)."""
    return med([fn(r) for r in cell(*where).values()])


def column(name):
    return lambda r: fnum(r[name])


def absval(*where):
    """(median IOPS, median MB/s) over the repetitions, or None."""
    if not cell(*where):
        return None
    return per_rep(column("iops"), *where), per_rep(column("mbps"), *where)


def ratio(study, medium, cfg, pat, base=BASE):
    """Median, min and max of the per-repetition ratios cfg/base, and n.
    Bytes per second, as IOPS x transfer size: a stand-in baseline has
    another transfer size, and the mbps column is rounded to 0.01."""
    a, b = cell(study, medium, cfg, pat), cell(study, medium, base, pat)
    rs = [fnum(a[n]["iops"]) * to_bytes(a[n]["bs"]) / (fnum(b[n]["iops"]) * to_bytes(b[n]["bs"]))
          for n in a if n in b and fnum(b[n]["iops"])]
    if not rs:
        return None
    return {"med": statistics.median(rs), "lo": min(rs), "hi": max(rs), "n": len(rs)}


def busy(r):
    """Share of the members' time spent serving (emulated disks), over
    runtime + ramp: the counters span a little more (connecting, the last
    completions), so a saturated member can show a few per cent over 100
    (clamped where shown); the wall clock would overstate idleness."""
    b, rt, ramp = fnum(r["m_busy_s"]), fnum(r.get("runtime_s")), fnum(r.get("ramp_s"))
    return 100 * b / ((rt + (ramp or 0)) * int(r["members"])) if b and rt else None


def seeks(r):
    """Share of the members' I/Os that paid the full access time."""
    n = (fnum(r["m_reads"]) or 0) + (fnum(r["m_writes"]) or 0)
    return 100 * (fnum(r["m_seeks"]) or 0) / n if n else None


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def model(p):
    """What one emulated disk should deliver (IOPS) if kept busy."""
    kind, bs, _qd = pattern_parts(p)
    return M["disk_iops"](kind, to_bytes(bs), to_seconds(FACTS["disk_access"]),
                            float(FACTS["disk_mbps"]))


def expected_ios(cfg, pat):
    """Member (reads, writes) per client request that the layout implies."""
    level, n, chunk = parse_config(cfg)
    kind, bs, _qd = pattern_parts(pat)
    return M["expected_ios"](level, n, to_bytes(chunk), kind, to_bytes(bs))


# --- goals -------------------------------------------------------------------

GOALS = []  # [goal, medium, measured, verdict, if missed: why]


def goal(text, medium, value, threshold, why):
    ok = value is not None and value >= threshold
    GOALS.append([text, medium, "NA" if value is None else "%.2f" % value,
                  "no data" if value is None else "met" if ok else "**missed**",
                  "" if ok else why])


def why_limits(*where):
    """What limited one cell: members' busy time, server and host CPU."""
    b, sk = per_rep(busy, *where), per_rep(seeks, *where)
    s, h = per_rep(column("srv_cpu"), *where), per_rep(column("host_cpu"), *where)
    parts = [] if b is None else ["members busy ~%.0f %%" % min(b, 100)]
    if b is not None and sk is not None:
        parts.append("%.0f %% of member I/Os paid the access time" % sk)
    if s is not None:
        parts.append("server CPU %.0f %% of a core" % s)
    if h is not None:
        parts.append("machine CPU %.0f %% of %s00 %%" % (h, FACTS["cores"].split()[0]))
    return ", ".join(parts)


# --- output helpers ----------------------------------------------------------

def md_table(header, rows, align=None):
    align = align or ["---"] + ["---:"] * (len(header) - 1)
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    return "\n".join(out + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def dat_text(spec, dim, rows, titles, rs):
    """A gnuplot data file of the ratios rs[row][column]: a header, then per
    row its key and each column's values (spec's, NaN where there is none);
    or, if spec says "long", a line per cell: x, y (indexes) and its value."""
    keys, fmt = spec["values"], spec["fmt"]

    def vals(r):
        return [fmt.format(r[k]) if r else "NaN" for k in keys]
    if spec.get("long"):
        return "".join(" ".join(["%d %d" % (x, y)] + vals(r)) + "\n"
                       for y, row in enumerate(rs) for x, r in enumerate(row))
    lo_hi = " lo hi" if len(keys) == 3 else ""
    out = [" ".join([spec["head"]] + ['"%s"%s' % (t, lo_hi) for t in titles])]
    for v, row in zip(rows, rs):
        out.append(" ".join([spec["row"].format(**axis(dim, v))] + sum(map(vals, row), [])))
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


class Part:
    """One study on one medium: its configurations and patterns, what its
    blocks read, and what they add to (the study's CSV rows, the summary)."""

    def __init__(self, spec, medium, rows, summary):
        self.spec, self.study, self.medium = spec, spec["name"], medium
        self.name = "%s-%s" % (self.study, medium)  # of its charts
        self.rows, self.summary = rows, summary
        self.pats = patterns_of(self.study, medium)
        found = dict.fromkeys(c for c, _p in DATA[(self.study, medium)])
        self.cfgs = [c for c in spec.get("configs", found) if c in found and c != BASE]

    def ratio(self, c, p, base=BASE):
        return ratio(self.study, self.medium, c, p, base)

    def one(self, p):
        """One member's figure for pattern p."""
        return fmt_abs(absval(self.study, self.medium, BASE, p), p)

    def csv_row(self, c, p, extra=()):
        """A row of the study's CSV: what its columns ask of c and p."""
        where = self.study, self.medium, c, p
        base = absval(self.study, self.medium, BASE, p) or (None, None)
        a, r = absval(*where) or (None, None), ratio(*where) or {}
        f = dict(dims(c, p), medium=self.medium, base_iops=base[0], base_mbps=base[1],
                 iops=a[0], mbps=a[1], ratio=r.get("med"), ratio_min=r.get("lo"),
                 ratio_max=r.get("hi"), reps=r.get("n"), members_busy_pct=per_rep(busy, *where),
                 srv_cpu_pct=per_rep(column("srv_cpu"), *where),
                 host_cpu_pct=per_rep(column("host_cpu"), *where), **dict(extra))
        self.rows.append([f.get(k) for k in self.spec["csv"]])

    def pivot(self, names, cfgs):
        """The cells of cfgs x the patterns by their values of names (as dims
        names them): {values: (config, pattern)}, and each name's values."""
        cells = {tuple(dims(c, p).get(n) for n in names): (c, p) for c in cfgs for p in self.pats}
        order = {"members": int, "qd": int, "chunk": to_bytes, "bs": to_bytes,
                 "pattern": self.pats.index, "config": cfgs.index}
        return cells, [sorted({k[i] for k in cells}, key=order.get(n, str))
                       for i, n in enumerate(names)]

    def at(self, cells, key):
        """The ratio of a pivot's cell (ONE for the baseline), or None."""
        c, p = cells.get(key, (None, None))
        return ONE if c == BASE else self.ratio(c, p)


# --- blocks: each returns its paragraphs --------------------------------------

def table(part, spec):
    """Rows: patterns; columns: one member, each configuration's ratio to
    each base, the ideal."""
    bases, stand_in = spec["bases"], STAND_IN[part.study].get(part.medium, {})
    header = spec["header"] + [h.format(config=config_label(c), members=parse_config(c)[1])
                               for c in part.cfgs for b, h, *_ in bases if b != c]
    rows = []
    for p in part.pats:
        row = [pattern_label(p), part.one(p)]
        if p in stand_in:
            row[1] += part.spec["stand_in_note"].format(size=label("bs", stand_in[p].split(":")[1]))
        for c in part.cfgs:
            rs = {b: part.ratio(c, p, b) for b, *_ in bases if b != c}
            row += [fmt_ratio(r) for r in rs.values()]
            part.csv_row(c, p, [(col[0], rs[b] and rs[b]["med"])
                                for b, _h, *col in bases if col and b in rs])
        rows.append(row + ([ideal(spec["ideal"], p, part.cfgs)] if "ideal" in spec else []))
    return [md_table(header + ([spec["ideal"]["header"]] if "ideal" in spec else []), rows)]


def ideal(spec, p, cfgs):
    """The ideal column: the first rule that selects p, its text or its
    IDEAL for each configuration."""
    rule = next(r for r in spec["rules"] if matches(r, p))
    if "text" in rule:
        return rule["text"]
    qd = pattern_parts(p)[2]
    return " / ".join("%.2f" % M["IDEAL"][rule["ideal"]](parse_config(c)[1], qd)
                      for c in cfgs) + rule.get("suffix", "")


def goals(part, spec):
    """Each rule's goals, for every pattern it selects."""
    for p in part.pats:
        for rule in (r for r in spec["rules"] if matches(r, p)):
            for c, threshold in rule["configs"]:
                r = part.ratio(c, p)
                text = rule["text"].format(pattern=pattern_label(p), config=config_label(c),
                                           threshold=threshold)
                goal(text, part.medium, r and r["med"], threshold,
                     why_limits(part.study, part.medium, c, p))
    return []


def baseline(part, spec):
    """One member's figures: every pattern, or the grid's four corners."""
    pats = part.pats
    if spec.get("corners"):
        bss = sorted({to_bytes(pattern_parts(p)[1]) for p in pats})
        qds = sorted({pattern_parts(p)[2] for p in pats})
        pats = [p for p in pats if to_bytes(pattern_parts(p)[1]) in (bss[0], bss[-1])
                and pattern_parts(p)[2] in (qds[0], qds[-1])]
    return [spec["text"] + "; ".join("%s %s" % (pattern_label(p), part.one(p)) for p in pats) + "."]


def grid(part, spec):
    """A ratio pivoted: a table per split value, rows by columns."""
    names = (spec.get("split"), spec["rows"], spec["cols"])
    cells, values = part.pivot(names, part.cfgs)
    low, out, gms = spec.get("lowest", {}).get("threshold"), [], {}
    for s in values[0]:
        lines = []
        for rv in values[1]:
            rs = [part.at(cells, (s, rv, cv)) for cv in values[2]]
            lines.append([spec["row_label"].format(rv)] + [
                fmt_ratio(r, bold=bool(low and r and r["med"] < low), rng=False) for r in rs])
            for cv in (cv for cv in values[2] if (s, rv, cv) in cells):
                part.csv_row(*cells[(s, rv, cv)])
            if "geomean" in spec:
                gms.setdefault(rv, []).append(geomean([r and r["med"] for r in rs]))
                lines[-1].append("**%.2f**" % gms[rv][-1] if gms[rv][-1] else "NA")
        out += [spec["caption"].format_map({names[0]: s})] if "caption" in spec else []
        header = [spec["corner"]] + [label(names[2], v) for v in values[2]]
        out.append(md_table(header + ([spec["geomean"]] if "geomean" in spec else []), lines))
    out += rank(part, spec, gms) if "rank" in spec else []
    return out + (lowest(part, spec["lowest"], cells) if low else [])


def rank(part, spec, gms):
    """The grid's rows ranked by the geometric mean of their ratios; the
    best of them into the summary, on the medium it names."""
    ranked = sorted(((geomean(v), k) for k, v in gms.items() if geomean(v)), reverse=True)
    if not ranked:
        return []
    best = spec["best"]
    if part.medium == best["medium"]:
        ties = [k for g, k in ranked if g >= best["tie"] * ranked[0][0]]
        more = best["ties"].format(tie_pct=round((1 - best["tie"]) * 100, 6))
        part.summary.append(best["text"].format_map(collections.ChainMap(
            {"best": ", ".join("**%s**" % k for k in ties), "geomean": ranked[0][0],
             "ties": more if len(ties) > 1 else ""}, FACTS)))
    return [spec["rank"] + ", ".join("%s %.2f" % (k, g) for g, k in ranked) + "."]


def lowest(part, spec, cells):
    """The grid's goal: no cell under the threshold.  The cells under it
    were measured again on their own (study spec["confirm"]): the lowest
    of many noisy cells is biased low, so the goal is judged on the worst
    of those second measurements and of the cells not measured again."""
    judged = []  # (value, config, pattern, ratio judged, grid's if measured again)
    for c, p in cells.values():
        r, again = part.ratio(c, p), ratio(spec["confirm"], part.medium, c, p)
        if again or r:
            judged.append(((again or r)["med"], c, p, again or r, again and r))
    if not judged:
        return []
    again, out = [j for j in judged if j[4]], []
    if again:
        _v, c, p, a, _g = again[0]
        runtime = next(iter(cell(spec["confirm"], part.medium, c, p).values()))["runtime_s"]
        out = [spec["again"].format(threshold=spec["threshold"], reps=a["n"], runtime=runtime,
                                    cells=len(cells)),
               md_table(spec["header"], [[pattern_label(p), "%.2f" % g["med"], fmt_ratio(a)]
                                         for _v, _c, p, a, g in again])]
    v, c, p, r, g = min(judged, key=lambda j: j[0])
    text = spec["text"].format(config=config_label(c), threshold=spec["threshold"],
                               pattern=pattern_label(p),
                               again=spec["again_note"].format(grid=g["med"]) if g else "")
    why = why_limits(spec["confirm"] if g else part.study, part.medium, c, p)
    goal(text, part.medium, v, spec["threshold"], why + spec["why"].format(lo=r["lo"]))
    return out


def counts(part, spec):
    """Member I/Os per client request, counted, against the layout's."""
    out = []
    for r in (r for r in COUNTS if (r["study"], r["medium"]) == (part.study, part.medium)):
        n = int(r["client_ios"]) or 1
        b = to_bytes(pattern_parts(r["pattern"])[1]) * n
        er, ew = expected_ios(r["config"], r["pattern"])
        out.append([config_label(r["config"]), pattern_label(r["pattern"]), n,
                    "%.2f" % (int(r["m_reads"]) / n), "%.2f" % (int(r["m_writes"]) / n),
                    "%.2f / %.2f" % (int(r["m_rbytes"]) / b, int(r["m_wbytes"]) / b),
                    "NA" if er is None else "%g / %g" % (round(er, 2), round(ew, 2))])
    if not out:
        return []
    rep = D["REPORT"]
    return [rep["counts_intro"], md_table(rep["counts_header"], out, ["---", "---"] + ["---:"] * 5)]


def chart(part, spec):
    """A gnuplot chart of the ratios pivoted as spec["pivot"] says (split,
    rows, columns): per split a data file (a line per row, a series per
    column) and, in a chart of panels, a panel.  The script's fields: the
    spec's, the axes' and the last split's.  Its link, or nothing if gnuplot
    failed (the script names its files relative to charts/src/)."""
    spec, names = dict(D["CHART"], **spec), spec["pivot"]
    cfgs = ([BASE] if spec["baseline"] else []) + part.cfgs
    cells, (splits, rows, cols) = part.pivot(names, cfgs)
    titles, n, files, panels = [label(names[2], v) for v in cols], len(splits), {}, []
    f = dict(spec, medium=D["CHART_MEDIUM"][part.medium].format_map(FACTS),
             xtics=tics(names[2], cols), ytics=tics(names[1], rows),
             xend=len(cols) - 0.5, yend=len(rows) - 0.5,
             lines="".join(spec["line"].format(y=y, label=t, style=st)
                           for y, t, st in spec["lines"]))
    for k, s in enumerate(splits):
        f.update({names[0]: s, "dat": spec["dat"].format_map({"name": part.name, names[0]: s})})
        rs = [[part.at(cells, (s, rv, cv)) for cv in cols] for rv in rows]
        files[f["dat"]] = dat_text(spec, names[1], rows, titles, rs)
        if "panel" in spec:
            f.update(panel_fields(spec, k, n, s, rows))
        f["plots"] = plots(spec, part.medium, f, titles)
        panels.append(spec.get("panel", "").format_map(f))
    files.update(side_files(part, spec))
    files[part.name + ".gp"] = (
        "set terminal pngcairo size %s font 'DejaVu Sans,11'\n" % spec["size"].format_map(f)
        + "set output '../%s.png'\n" % part.name + spec["script"].format_map(
            dict(f, panels="\n".join(panels))))
    for fname, text in files.items():
        with open(os.path.join(SRC, fname), "w") as out:
            out.write(text)
    res = subprocess.run(["gnuplot", part.name + ".gp"], cwd=SRC, capture_output=True, text=True)
    if res.returncode != 0:
        print("report.py: gnuplot failed on %s.gp:\n%s" % (part.name, res.stderr), file=sys.stderr)
        return []
    return ["![%s, %s](charts/%s.png)" % (spec["alt"], D["MEDIA"][part.medium], part.name)]


def tics(dim, values):
    return ", ".join("'%s' %d" % (label(dim, v), i) for i, v in enumerate(values))


def panel_fields(spec, k, n, s, rows):
    """Panel k of n (split value s): its margins, y range and key, and the
    x range of its rows (sizes, on a log scale)."""
    first, span, gap = spec["margins"]
    left = first + k * span / n
    return {"left": left, "right": left + span / n - gap, "ymax": s + spec["headroom"],
            "key": spec["keys"][k == n - 1], "width": spec["width"][0] + spec["width"][1] * n,
            "xlo": to_bytes(rows[0]) // 1024 / 1.5, "xhi": to_bytes(rows[-1]) // 1024 * 1.5}


def side_files(part, spec):
    """The study's published figures and an ideal, by members, if the
    chart plots them."""
    if "published" not in spec:
        return {}
    pub, (dat, ideal, qd) = part.spec["published"], spec["ideal"]
    return {spec["published"]: "".join("%d %s\n" % (i + 1, v) for i, v in enumerate(pub)),
            dat: "".join("%d %.3f\n" % (n, M["IDEAL"][ideal](n, qd))
                         for n in range(1, len(pub) + 1))}


BLOCKS = {"table": table, "goals": goals, "baseline": baseline, "grid": grid, "counts": counts,
          "chart": chart}


# --- sections ----------------------------------------------------------------

def calibration():
    """The emulated disk against its model, and the notes its cells call for."""
    if not CALIB:
        return []
    spec, pats = D["CALIBRATION"], list(dict.fromkeys(r["pattern"] for r in CALIB))
    val = {(r["target"], r["pattern"]): (fnum(r["iops"]), fnum(r["mbps"])) for r in CALIB}
    measured = {k for k, v in val.items() if v[0] is not None}
    rows = [[spec["model"]] + [fmt_abs((model(p), model(p) * to_bytes(p.split(":")[1]) / 1e6), p)
                               for p in pats]]
    for t in dict.fromkeys(r["target"] for r in CALIB):
        rows.append([spec["targets"].get(t, t)] + [
            "%s (%.2f)" % (fmt_abs(val[(t, p)], p), val[(t, p)][0] / model(p))
            if (t, p) in measured else "NA" for p in pats])
    notes = [text.format(mbps=val[(t, p)][1]) for t, p, text in spec["notes"]
             if (t, p) in measured and val[(t, p)][0]]
    table = md_table(["target"] + [pattern_label(p) for p in pats], rows)
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


def study(spec, summary):
    """A study's section (its CSV written, its summary lines added)."""
    media = [m for m in D["MEDIA"] if (spec["name"], m) in DATA]
    if not media:
        return []
    fmt = collections.ChainMap({"published": ", ".join(spec.get("published", []))}, FACTS)
    out = [spec["title"]] + [p.format_map(fmt) for p in spec["intro"]]
    out += simulation(spec["simulation"]) if "simulation" in spec else []
    rows = []
    for m in media:
        part = Part(spec, m, rows, summary)
        out.append("### " + D["MEDIA"][m])
        for block in (b for b in spec["blocks"] if m in b.get("media", [m])):
            out += BLOCKS[block["block"]](part, block)
    with open(os.path.join(OUT, spec["name"] + ".csv"), "w", newline="") as f:
        csv.writer(f).writerows([spec["csv"]] + rows)
    return out


def paragraphs(ps):
    return "".join(p + "\n\n" for p in ps)


def main():
    os.makedirs(SRC, exist_ok=True)
    summary, rep = [], D["REPORT"]
    body = calibration() + [p for spec in D["STUDIES"] for p in study(spec, summary)]
    missed = [g for g in GOALS if g[3] != "met"]
    closing = rep["missed"].format(missed=len(missed), goals=len(GOALS)) if missed else rep["met"]
    if os.path.exists(os.path.join(OUT, "notes.md")):
        with open(os.path.join(OUT, "notes.md"), encoding="utf-8") as f:
            closing = f.read().strip()
    goals = [rep["goals_intro"], md_table(rep["goals_header"], GOALS,
                                          ["---", "---", "---:", "---", "---"])] if GOALS else []
    timing = [md_table(rep["timing_header"], [[t["study"], t["medium"], t["seconds"]]
                                              for t in TIMING])] if TIMING else []
    machine = [(k, k.replace(" ", "_")) for k in D["MACHINE"]]
    with open(os.path.join(HERE, "report.md.in"), encoding="utf-8") as f:
        template = f.read().split("-->\n", 1)[-1]  # the comment at the top
    text = template.format_map(collections.ChainMap(dict(
        quick="" if FACTS["mode"] == "full" else " --quick", closing=closing,
        machine="".join("- %s: %s\n" % (k, FACTS[f]) for k, f in machine if f in FACTS),
        goals=paragraphs(goals + summary), body=paragraphs(body), timing=paragraphs(timing),
        study_csvs=", ".join("`%s.csv`" % s["name"] for s in D["STUDIES"])), FACTS))
    with open(os.path.join(OUT, "report.md"), "w", encoding="utf-8") as f:
        f.write(text)
    print("report.py: wrote %s" % os.path.join(OUT, "report.md"))


main()
