"""studies.py: the classic studies as data, for report.py to render.

Only data, no code: the labels, the calibration table, and for every study
its title and prose, the configurations it compares, its tables, goals,
charts and CSV columns.  The fixed prose of report.md is report.md.in.
Strings are str.format templates: {chunk}, {disk_access} and every other
fact of facts.txt (spaces as _), plus the fields each template names; of a
configuration and a pattern: config, config_label, level, members, chunk,
pattern, pattern_label, kind, bs, bytes, size, qd (the dims).
report.py loads this file with runpy (nothing is imported or cached).

Blocks of a study, run per medium (after "### medium"), in order:
  table     rows: patterns; columns: one member, then each configuration's
            ratio to every base, and an ideal
  goals     for each pattern a rule matches: ratio >= threshold
  baseline  one member's absolute figures (all patterns, or the corners)
  grid      a ratio pivoted: split (one table each), rows, columns, out of
            the dims; with a geometric-mean column and ranking, or a
            "lowest cell" goal
  counts    member I/Os per client request (counts.csv) against the layout
  chart     a gnuplot chart of the ratios pivoted (see CHART below)
A rule or a block's "media" limits it; a rule matches a pattern by "kind",
"bs", "qd" and "qd_min".  A study's CSV has a row per configuration and
pattern, ordered by the dims "csv_by" names, and the columns "csv" names:
the dims, medium, base_iops, base_mbps, iops, mbps, ratio, ratio_min,
ratio_max, reps, members_busy_pct, srv_cpu_pct, host_cpu_pct (medians over
the repetitions), and "csv_ratios", ratios to another base.
"""

MEDIA = {"spindle": "emulated disks", "tmpfs": "tmpfs members"}
CHART_MEDIUM = {
    "spindle": "emulated disks ({disk_access}, {disk_mbps} MB/s, {disk_slots} at a time)",
    "tmpfs": "tmpfs members (the CPU and NBD path are the limit)",
}
# Facts that an older facts.txt may lack; any other missing fact reads "?".
FACT_DEFAULTS = {"chunk": "512K", "disk_access": "5ms", "disk_mbps": "100",
                 "cores": "2", "nbdkit_threads": "16", "s8_tmpfs_ramp": "0.5", "s8_settle": "0"}
# The facts listed under "Machine and method", as facts.txt names them.
MACHINE = ["cores", "memory", "kernel", "load before", "nbdkit", "fio", "gnuplot",
           "libnbd", "tree", "plugin"]

BASELINE = "1disk"
BASELINE_LABEL = "one member"
CONFIG_LABEL = "RAID {level} x{members}"
CONFIG_LABEL_MISSING = "RAID {level} x{members} degraded"
# Study 8: appended to the label of a configuration with a cache ("-Cram").
CACHE_LABEL = {"ram": ", cache ram", "log": ", cache log", "filter": ", nbdkit cache filter"}
PATTERN_LABEL = {
    "read": "{size} seq read QD{qd}",
    "write": "{size} seq write QD{qd}",
    "randread": "{size} rand read QD{qd}",
    "randwrite": "{size} rand write QD{qd}",
    "db": "database {size} QD{qd}",
    "fs": "file server {size} QD{qd}",
    "ws": "workstation {size} QD{qd}",
    "fsync": "{size} rand write QD{qd}, FLUSH each",
    "writeflush": "{size} seq write QD{qd} +FLUSH",
    "copy": "copy {size} QD{qd} +FLUSH",
}

REPORT = {
    "goals_intro": "Judged on the emulated disks (on tmpfs the members are not the "
                   "limit), except where a medium is named.",
    "goals_header": ["goal", "medium", "measured", "verdict", "if missed: what limited it"],
    "met": "Every goal measured in this run was met.",
    "missed": "Goals missed in this run: {missed} of {goals} (see the table of goals "
              "for what limited each).",
    "goals_align": ["---", "---", "---:", "---", "---"],
    "timing_header": ["part", "medium", "seconds"],
    "counts_intro": "Member I/Os per client request, counted exactly by the emulated "
                    "disks over a run of a fixed number of client I/Os (no ramp):",
    "counts_header": ["config", "pattern", "client I/Os", "member reads / client I/O",
                      "member writes / client I/O", "member bytes / client byte (r / w)",
                      "expected (layout) reads / writes"],
    "counts_align": ["---", "---"] + ["---:"] * 5,
}

# What limited a cell, for a goal missed: each part whose figures (medians
# over the repetitions) were measured, busy capped at 100; {cores} from facts.
LIMITS = [
    [["busy"], "members busy ~{busy:.0f} %"],
    [["busy", "seeks"], "{seeks:.0f} % of member I/Os paid the access time"],
    [["srv_cpu"], "server CPU {srv_cpu:.0f} % of a core"],
    [["host_cpu"], "machine CPU {host_cpu:.0f} % of {cores}00 %"],
]

CALIBRATION = {
    "title": "### Calibration: one emulated disk against its parameters",
    "intro": "Each cell: the measured figure and, in brackets, its ratio to the model's "
             "prediction (the disk kept busy: QD1 adds the client's round trip to every "
             "request, so QD1 cells sit a little below 1.00).",
    "model": "model: access + size / bandwidth",
    "targets": {
        "raw": "fio on the member file (io_uring, O_DIRECT)",
        "1disk": "**one member: nbdraid level=0 over it, through NBD (the baseline)**",
        "file": "nbdkit file plugin over the member, through NBD",
        "filters": "filter recipe: nbdkit memory + noparallel + delay + rate, via nbdfuse",
    },
    # [target, pattern, note]: the note when that cell was measured; {mbps}
    # is the cell's MB/s.
    "notes": [
        ["file", "read:1M:8",
         "- The file plugin's 1M transfers at QD8 (reads and writes) fall short because "
         "nbdkit's request buffers are not page aligned: 1M spans 257 pages, more than "
         "one FUSE request carries (256), so each 1M transfer reaches the disk as two "
         "requests and the second one waits behind others.  nbdraid opens the members "
         "`direct=true`, whose bounce buffers are aligned.  In the rows below 1M the two "
         "NBD baselines agree."],
        ["filters", "read:64k:8",
         "- The filter recipe charges its delay on every request, sequential or not: "
         "64K sequential reads run at one request per delay ({mbps:.0f} MB/s), where a "
         "disk streams at its bandwidth.  And its rate filter (`burstiness=0.1`) refills "
         "its bucket during the delay, so a large random request costs about the larger "
         "of the delay and the transfer, not their sum (1M random reads above the "
         "model).  That is why the studies use fusedisk."],
    ],
}

# --- charts --------------------------------------------------------------------
# A chart pivots the ratios: "pivot" names its split (a data file, and a panel,
# each), rows (a line of the data file each, keyed by "row": {v}, {label},
# {kib}) and columns (a series each), out of the dims; "baseline" adds one
# member's row.  Each cell gives its ratio's "values" in "fmt"; "long" data
# files have a line per cell instead (x, y, value).  Series templates get
# {dat}, {col} ({lo}, {hi}: the range's columns), {pt}, {color} and {title};
# "SERIES" in a list of plots stands for them, and a {medium: plot} entry is
# drawn on that medium only.  Scripts, sizes, panels and plots are templates
# of the spec's fields, {medium}, {dat}, {plots}, the split's value, {xtics},
# {ytics} (an axis's labels), {xend}, {yend} (its last index + 0.5), {lines}
# (a "line" per "lines" entry), and in panels {left}, {right}, {ymax}, {key},
# {width}, {xlo}, {xhi}.  "published" and "ideal": the study's published
# figures and an ideal of models.py, by members, as data files.
CHART = {"baseline": False, "dat": "{name}.dat", "values": ["med", "lo", "hi"], "fmt": "{:.4f}",
         "first": 2, "plots": ["SERIES"], "line": "", "lines": []}

COLORS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02",
          "#a6761d", "#666666", "#1f78b4", "#b2df8a"]
COMMON = """set grid ytics lc rgb '#dddddd'
set border 3
set tics nomirror
"""
BARS = """set ylabel '{ylabel}'
set yrange [0:{ymax:g}]
set style data histogram
set style histogram errorbars gap 1.5 lw 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics font ',10' nomirror
set key top right box opaque
{lines}
plot {plots}
"""
BAR_LINE = """set arrow from graph 0, first {y:g} to graph 1, first {y:g} nohead {style}
set label '{label}' at graph 0.005, first {y:g} left offset 0,0.6 font ',9'
"""
BAR_CHART = {"block": "chart", "size": "1150,620", "pivot": [None, "pattern", "config"],
             "ylabel": "throughput / one member",
             "head": "# group", "row": '"{label}"', "line": BAR_LINE,
             "series": "'{dat}' using {col}:{lo}:{hi}:xtic(1) lc rgb '{color}' title '{title}'"}
ONE_MEMBER_LINE = [1, "one member", "lc rgb '#000000' lw 1.5"]

# --- the studies ---------------------------------------------------------------

STUDIES = [
    {
        "name": "scaling",
        "title": "## 1. Member scaling: what do 2, 3, 4 members buy?",
        "intro": [
            "RAID 0 (chunk {chunk}) over 1 to 4 members, each figure a ratio to one "
            "member measured in the same run.  The ideal is N x for sequential "
            "transfers; for random 4k at QD8 the requests land on random members, and "
            "some members sit idle while others queue: the *random-placement ideal* is "
            "simulated (8 requests, fixed service time, uniform placement).  Maximum PC "
            "(June 2004), four PATA drives on a 32-bit PCI card, HD Tach average read: "
            "{published} (the bus saturated at three).",
        ],
        # Maximum PC's figures for 1, 2, 3, 4 drives.
        "published": ["1.00", "2.02", "2.40", "2.28"],
        "configs": ["0x2", "0x3", "0x4"],
        "blocks": [
            {"block": "table", "header": ["pattern", "one member"],
             "bases": [["1disk", "x{members}"]],
             "ideal": {"header": "ideal", "rules": [
                 {"kind": ["randread", "randwrite"], "qd_min": 2, "ideal": "placement",
                  "suffix": " (random placement)"},
                 {"kind": ["randread", "randwrite"], "text": "1.00 (one request at a time)"},
                 {"ideal": "members"},
             ]}},
            {"block": "goals", "media": ["spindle"], "rules": [
                {"kind": ["read", "write"], "bs": "1M", "qd": 8,
                 "configs": [["0x2", 1.95], ["0x3", 2.9], ["0x4", 3.8]],
                 "text": "scaling: {pattern_label}, {config_label} >= {threshold:.2f}x"},
                {"kind": ["randread"], "bs": "4k", "qd": 8, "configs": [["0x4", 3.2]],
                 "text": "scaling: {pattern_label}, {config_label} >= {threshold}x"},
            ]},
            {"block": "chart", "alt": "member scaling", "size": "900,600",
             "pivot": [None, "members", "pattern"], "baseline": True, "head": "# members",
             "row": "{v}", "fmt": "{}", "published": "mpc.dat", "ideal": ["rp.dat", "placement", 8],
             "script": COMMON + 'set title "RAID 0 member scaling, {medium}\\n'
                                 'ratio to one member, same run"\n' + """set xlabel 'members'
set ylabel 'throughput / one member'
set xrange [0.8:4.2]
set xtics 1
set yrange [0:4.5]
set key top left box opaque
set arrow from 0.8,1 to 4.2,1 nohead lc rgb '#000000' lw 1
plot {plots}
""",
             "plots": [
                 "x title 'ideal: N x' dt 2 lw 2 lc rgb '#999999'",
                 {"spindle": "'rp.dat' using 1:2 with lines dt 3 lw 2 lc rgb '#7570b3' "
                             "title 'ideal for random QD8 (random placement)'"},
                 "SERIES",
                 "'mpc.dat' using 1:2 with linespoints dt 4 lw 1.5 pt 6 lc rgb '#444444' "
                 "title 'Maximum PC 2004, 4 PATA drives on PCI (read)'",
             ],
             "series": "'{dat}' using 1:{col}:{lo}:{hi} with yerrorlines lw 2 pt {pt} "
                       "ps 1.3 lc rgb '{color}' title '{title}'"},
        ],
        "csv_by": ["pattern", "config"],
        "csv": ["medium", "config", "config_label", "pattern", "pattern_label", "base_iops",
                "base_mbps", "iops", "mbps", "ratio", "ratio_min", "ratio_max", "reps",
                "members_busy_pct", "srv_cpu_pct", "host_cpu_pct"],
    },
    {
        "name": "chunk",
        "title": "## 2. Chunk size: which stripe unit?",
        "intro": [
            "RAID 0 over 2 and 4 members at every chunk, each figure a ratio to one member "
            "in the same run.  The mixed patterns are PassMark's (database: 90 % random, "
            "90 % read, 2K, QD128, here at 4K, see below; file server: 100 % random, 80 % "
            "read, 16K, QD128; workstation: 80 % random, 70 % read, 16K, QD1).  *geomean*: "
            "the geometric mean of the row's ratios, one figure per chunk to rank them.  "
            "The published studies: Maximum PC (2 drives, 16K..128K) found differences of "
            "a few per cent, smaller stripes slightly ahead; an SSD study (2 x OCZ Vertex) "
            "chose 128K as the best balance and warned against anything below 32K; "
            "Tweakers.net found 64K best for games and 128K slightly better for desktop "
            "and workstation traces.  The database pattern runs at 4K instead of "
            "PassMark's 2K: over O_DIRECT members nbdraid advertises a 4K minimum block "
            "size, and libnbd (fio's nbd engine) refuses smaller requests.",
        ],
        "blocks": [
            {"block": "baseline", "text": "One member: "},
            {"block": "grid", "split": "members", "rows": "chunk", "cols": "pattern",
             "caption": "RAID 0 x{members} (ratio to one member; ranges in chunk.csv):",
             "corner": "chunk", "row_label": "{}", "geomean": "geomean",
             "rank": "Chunks ranked by the geometric mean over every width and pattern: ",
             "best": {"medium": "spindle", "tie": 0.99,
                      "text": "Best chunk on the emulated disks by the geometric mean of "
                              "every chunk-study ratio: {best} ({geomean:.2f}){ties}; the "
                              "default is {chunk}.  See section 2 and the closing note.",
                      "ties": ", within {tie_pct:g} % of each other"}},
            {"block": "chart", "alt": "chunk size", "pivot": ["members", "chunk", "pattern"],
             "dat": "{name}-x{members}.dat", "head": "# chunk_bytes label", "row": "{kib} {v}",
             "values": ["med"], "first": 3, "size": "{width},620", "width": [400, 550],
             "margins": [0.06, 0.82, 0.07], "headroom": 0.6,
             "script": COMMON + "set multiplot title 'Chunk size, {medium}: ratio to one member "
                                 "(same run)' font ',12'\n" + """set logscale x 2
set xrange [{xlo:g}:{xhi:g}]
set xlabel 'chunk (log scale)'
set ylabel 'throughput / one member'
set tmargin at screen 0.88
set bmargin at screen 0.12
{panels}
unset multiplot
""",
             "panel": """set title 'RAID 0 x{members}'
set lmargin at screen {left:g}
set rmargin at screen {right:g}
set yrange [0:{ymax:g}]
{key}
plot {plots}
""",
             "keys": ["unset key",
                      "set key at screen 0.99, graph 0.5 right center font ',10' box opaque"],
             "plots": ["{members} title 'ideal: {members} x' dt 2 lw 2 lc rgb '#999999'",
                       "1 notitle lw 1 lc rgb '#000000'", "SERIES"],
             "series": "'{dat}' using 1:{col}:xtic(2) with linespoints lw 2 pt {pt} ps 1.2 "
                       "lc rgb '{color}' title '{title}'"},
        ],
        "csv_by": ["members", "chunk", "pattern"],
        "csv": ["medium", "members", "chunk", "pattern", "pattern_label", "base_iops",
                "base_mbps", "iops", "mbps", "ratio", "ratio_min", "ratio_max", "reps"],
    },
    {
        "name": "qdsize",
        "title": "## 3. Queue depth x transfer size: where does striping pay?",
        "intro": [
            "Random reads, RAID 0 over 2 members (chunk {chunk}) against one member, at "
            "every queue depth and transfer size of the grid; each cell the ratio (median "
            "of the per-repetition ratios).  Tweakers.net (2004, 1 drive against 2 in "
            "RAID 0): at one outstanding I/O the single drive was faster for transfers up "
            "to 32K, the array led from 64K; at eight outstanding I/Os the array led "
            "everywhere.  **Goal: RAID 0 over 2 is never below 0.97x of one member.**",
        ],
        "configs": ["0x2"],
        "blocks": [
            {"block": "baseline", "text": "One member, for scale: ", "corners": True},
            {"block": "grid", "rows": "qd", "cols": "bs", "corner": "QD \\ transfer",
             "row_label": "QD{}",
             # Cells under the threshold were measured again on their own
             # (s3-qd-size.sh confirm_low, study qdsize-confirm): the goal is
             # judged on the worst of those and of the cells not measured again.
             "lowest": {
                 "threshold": 0.97, "confirm": "qdsize-confirm",
                 "again": "Cells under {threshold} in the grid were measured again, each "
                          "on its own: {reps} repetitions of {runtime} s runs, one member "
                          "and the array back to back.  The lowest of {cells} noisy cells "
                          "is biased low (the minimum of many estimates), so the goal is "
                          "judged on these second, independent measurements:",
                 "header": ["cell", "grid", "measured again"],
                 "text": "QD x size: {config_label} >= {threshold}x of one member everywhere "
                         "(lowest cell: {pattern_label}{again})",
                 "again_note": ", measured again; grid {grid:.2f}",
                 "why": "; its lowest single repetition {lo:.2f}",
             }},
            {"block": "chart", "alt": "QD x transfer size", "size": "900,620",
             "pivot": [None, "qd", "bs"], "long": True, "values": ["med"], "fmt": "{:.3f}",
             "script": 'set title "Where striping pays: random reads, RAID 0 x2 / one member'
                       '\\n{medium}"\n' + """set xlabel 'transfer size'
set ylabel 'queue depth (outstanding I/Os)'
set xtics ({xtics})
set ytics ({ytics})
set xrange [-0.5:{xend:g}]
set yrange [-0.5:{yend:g}]
set cblabel 'ratio (RAID 0 x2 / one member)'
set cbrange [0.5:2.0]
set palette defined ({palette})
set tics nomirror
plot {plots}
""",
             "plots": ["'{dat}' using 1:2:3 with image notitle",
                       "'' using 1:2:(sprintf('%.2f', $3)) with labels font ',11' notitle"],
             "palette": "0.5 '#b2182b', 0.9 '#f4a582', 0.97 '#f7f7f7', 1.03 '#f7f7f7', "
                        "1.5 '#92c5de', 2.0 '#2166ac'"},
        ],
        "csv_by": [None, "qd", "bs"],
        "csv": ["medium", "bs", "qd", "base_iops", "base_mbps", "iops", "mbps", "ratio",
                "ratio_min", "ratio_max", "reps"],
    },
    {
        "name": "raid1",
        "title": "## 4. RAID 1: faster reads, slower writes?",
        "intro": [
            "RAID 1 with 2 and 3 copies against one member.  A read goes to one copy: a "
            "random read to the member with the fewest I/Os in flight; a read continuing a "
            "sequential stream stays on the member that read the bytes before it, unless "
            "that member is busy and another copy is idle, which then starts a run of its "
            "own (docs/layouts.md).  A write goes to every copy.  The published 2-SSD "
            "mirror: sequential reads +172 %, 4K reads faster only with many threads, "
            "writes 20 % to 63 % slower.  md keeps a single sequential reader on one disk "
            "(1.00x).  On a spindle, 2x on one sequential stream needs each copy to read "
            "long contiguous runs of it: each run costs one access time, and the runs are "
            "about as long as the client's queue, so the figure rises with the queue "
            "depth.  At QD1 there is one request at a time and one copy serves it (ideal "
            "1.00).  **Goals: reads at QD >= 2 at least 1.9x of one member for 2 copies; "
            "writes at least 0.9x.**",
        ],
        # Printed after the intro with the script's table for this run's disk.
        "simulation": {
            "script": "mirror-sim.py",
            "text": "What a two-way mirror can give one stream of 1M sequential reads on "
                    "this run's emulated disk, by queue depth, under six read rules, "
                    "simulated without NBD or CPU (`bench/classic/mirror-sim.py`; an upper "
                    "bound for the measured figures; *nbdraid* is src/layout/layout.c's "
                    "rule):",
        },
        "configs": ["1x2", "1x3"],
        "blocks": [
            {"block": "table", "header": ["pattern", "one member"],
             "bases": [["1disk", "{config_label}"]],
             # Only QD requests are in flight: at most QD copies busy.
             "ideal": {"header": "ideal (2 / 3 copies)", "rules": [
                 {"kind": ["read", "randread"], "ideal": "queue"},
                 {"ideal": "one"},
             ]}},
            {"block": "goals", "media": ["spindle"], "rules": [
                {"kind": ["read", "randread"], "qd_min": 2, "configs": [["1x2", 1.9]],
                 "text": "{config_label}: {pattern_label} >= {threshold}x"},
                {"kind": ["write", "randwrite"], "configs": [["1x2", 0.9]],
                 "text": "{config_label}: {pattern_label} >= {threshold}x"},
            ]},
            {"block": "counts"},
            {**BAR_CHART, "alt": "RAID 1", "ymax": 3.6,
             "script": (COMMON + 'set title "RAID 1 against one member (same run)\\n{medium}"\n'
                        + BARS),
             "lines": [ONE_MEMBER_LINE, [2, "2x", "dt 2 lc rgb '#999999' lw 1.5"],
                       [3, "3x", "dt 2 lc rgb '#999999' lw 1.5"]]},
        ],
        "csv_by": ["pattern", "config"],
        "csv": ["medium", "config", "pattern", "pattern_label", "base_iops", "base_mbps",
                "iops", "mbps", "ratio", "ratio_min", "ratio_max", "reps"],
    },
    {
        "name": "parity",
        "title": "## 5. RAID 5 and RAID 10 against RAID 0 on the same members",
        "intro": [
            "Four members, chunk {chunk}.  RAID 5 writes parity: a small write reads the "
            "old data and parity and writes both (4 member I/Os where RAID 0 does 1); a "
            "write of a whole stripe (3 data chunks, 1.5M here) computes parity from the "
            "new data alone and writes 4 chunks, no reads.  RAID 10 (n2) writes every chunk "
            "twice.  Each figure a ratio to one member and, in the second column of each "
            "level, to RAID 0 over the same 4 members.  **Goal: RAID 5 full-stripe "
            "sequential writes over 4 members at least 2.8x of one member.**",
            "What RAID 5 costs with a member missing is section 6.",
        ],
        # One member cannot take a 1.5M request whole (FUSE carries at most 1M
        # per request): its sequential write bandwidth is measured with 1M.
        "stand_in": {"spindle": {"write:1536k:8": "write:1M:8"}},
        "stand_in_note": " ({size} requests: FUSE takes at most 1M)",
        "configs": ["0x4", "5x4", "10x4"],
        "blocks": [
            {"block": "table", "header": ["pattern", "one member"],
             "bases": [["1disk", "{config_label} / one"],
                       ["0x4", "{config_label} / RAID 0"]]},
            {"block": "goals", "media": ["spindle"], "rules": [
                {"kind": ["write"], "bs": "1536k", "qd": 8, "configs": [["5x4", 2.8]],
                 "text": "{config_label}: {pattern_label} (full stripes) >= {threshold}x "
                         "of one member"},
            ]},
            {"block": "counts"},
            {**BAR_CHART, "alt": "RAID 5 and 10", "ymax": 4.8,
             "script": (COMMON + 'set title "RAID 0, 5, 10 over 4 members against one member '
                        '(same run)\\n{medium}"\n' + BARS),
             "lines": [ONE_MEMBER_LINE, [4, "4x", "dt 2 lc rgb '#999999' lw 1.5"]]},
        ],
        "csv_by": ["pattern", "config"],
        "csv": ["medium", "config", "pattern", "pattern_label", "base_iops", "base_mbps",
                "iops", "mbps", "ratio", "ratio_min", "ratio_max", "reps", "ratio_vs_raid0"],
        "csv_ratios": {"ratio_vs_raid0": "0x4"},
    },
    {
        "name": "degraded",
        "title": "## 6. Degraded: what does losing a member cost?",
        "intro": [
            "RAID 5 over 4 members and RAID 1 over 2 (chunk {chunk}), each served twice in "
            "the same run: with every member (optimal) and with its last member missing "
            "(degraded).  The degraded array is the same array started with that role given "
            "as `member=missing`: nbdraid then reads around it and writes without it by the "
            "same code as after a member failed.  Each figure: degraded / optimal, the two "
            "run back to back (the order alternating per repetition), the median of the "
            "per-repetition ratios.",
            "What each costs, in member I/Os.  **RAID 5, reads:** 1 data chunk in 4 is on the "
            "missing member, and reading it means reading the same bytes of the 3 others and "
            "XORing them (under the stripe's lock): 1.5 member reads per 4k read instead of 1, "
            "on 3 members instead of 4, so random reads that keep the members busy should "
            "fall to about 1 / (1.5 x 4 / 3) = 0.5; a sequential stream reads 1.5 bytes per "
            "byte (up to 3 member reads per 1M request where optimal does 2; a rebuild's "
            "read and the next chunk's, adjacent on a member, may go as one), and the "
            "members read some chunks twice (once for the client, once to rebuild the "
            "missing chunk beside it).  **RAID 5, writes:** a 4k write to the "
            "missing member's chunk writes parity alone, computed from the 2 other data "
            "chunks (2 reads, 1 write); to a stripe whose parity is missing, the data alone "
            "(0 reads, 1 write); otherwise read-modify-write as usual (2 and 2): 1.5 reads "
            "and 1.5 writes on average against 2 and 2, on 3 members instead of 4, about the "
            "same work per member.  **RAID 1 x2:** every read on the one copy left (no "
            "balancing across copies: a mirror that read about 2x of one disk at depth reads "
            "1x), every write to one copy instead of two (no waiting for the slower copy).  "
            "On tmpfs members the CPU and the NBD path are the limit, not the members: only "
            "the extra CPU of a member I/O and of the XOR shows.",
        ],
        "configs": ["5x4-m3", "1x2-m1"],
        "base": {"5x4-m3": "5x4", "1x2-m1": "1x2"},
        "blocks": [
            {"block": "pairs", "header": "pattern",
             "columns": ["{base_label}", "{config_label}", "degraded / optimal"]},
            {"block": "counts"},
            {**BAR_CHART, "alt": "degraded / optimal", "ymax": 2.0,
             "ylabel": "degraded / optimal (same run)",
             "script": (COMMON + 'set title "RAID 5 x4 and RAID 1 x2 with one member missing, '
                        'against the same array whole (same run)\\n{medium}"\n' + BARS),
             "lines": [[1, "optimal", "lc rgb '#000000' lw 1.5"],
                       [0.5, "0.5", "dt 2 lc rgb '#999999' lw 1.5"]]},
        ],
        "csv_by": ["pattern", "config"],
        "csv": ["medium", "config", "config_label", "pattern", "pattern_label", "base_iops",
                "base_mbps", "iops", "mbps", "ratio", "ratio_min", "ratio_max", "reps",
                "srv_cpu_pct", "host_cpu_pct"],
    },
    {
        "name": "recovery",
        "kind": "recovery",  # its own renderer (report.py recovery()), from recovery-runs.csv
        "title": "## 7. Recovery: how fast does an array heal, and what does it cost its clients?",
        "intro": [
            "RAID 1 x2 and RAID 5 x4 (md superblocks, `nbdraid create`, chunk 512K) with a "
            "spare given as `spare=`.  The last member is failed through the control socket "
            "(`fail`): the spare takes its role at once and is rebuilt.  The time is from the "
            "fail request to the first status that says optimal (status polled every 2 ms over "
            "one control connection, `bench/classic/recovery-timer.py`).  After each recovery "
            "the failed member's file is wiped and becomes the next spare.",
            "**Idle:** no client; speed limits far above what the pass does (min = max = "
            "{r7_fast} KiB/s), so the limit is not what is measured; on tmpfs every spare was "
            "written with zeros beforehand, so nothing timed allocates memory (a sparse "
            "recovery punches the holes it keeps).  Against `dd "
            "bs=1M` of one member file of the same array ({r7_dd}), run back to back with it: "
            "the recovery's "
            "member data bytes per second over dd's bytes per second.  **Sparse:** an array "
            "whose export was written {r7_sparse} % in pieces of a row (RAID 1: 1M; RAID 5: a full stripe) at random places (the rest "
            "never written): its recovery time over the full array's, same repetition.  "
            "**Under load:** a client load (fio, nbd engine) runs; the client's requests per "
            "second during the recovery over their rate in the {r7_win} s before the fail and "
            "the {r7_win} s after the end (the server's own counters), and the recovery's time "
            "over the idle one.  With md's default limits (min 1000, max 200000 KiB/s per "
            "member: the pass is throttled to the minimum while clients are busy) the pass is "
            "timed for {r7_cap} s only and its time to the end projected from its rate; then "
            "it is let finish fast.",
        ],
        "labels": {"randread:4k:8": "4k rand read QD8", "randwrite:4k:8": "4k rand write QD8",
                   "randrw:4k:8": "4k rand read/write QD8"},
        "idle_header": ["array", "member data", "dd of a member", "recovery, idle",
                        "recovery / dd", "sparse member: data, rows with data",
                        "sparse / full (time)"],
        "load_header": ["array", "client load", "speed min / max, KiB/s",
                        "client IOPS without recovery", "client during / without",
                        "recovery under load", "time under load / idle"],
        "goals": {"dd": 0.5, "sparse": 0.15},
        "goal_dd": "{config_label}: recovery at >= {threshold}x dd's speed ({medium_label})",
        "goal_sparse": "{config_label}: a {r7_sparse} % full member recovers in <= {threshold}x "
                       "the time of a full one",
        "csv": ["medium", "config", "case", "load", "speed", "reps", "value", "ratio",
                "ratio_min", "ratio_max", "srv_cpu_pct", "host_cpu_pct"],
    },
    {
        "name": "cache",
        "title": "## 8. Write-back cache: what does a RAID card's cache buy?",
        "intro": [
            "RAID 0 x4 and RAID 5 x4 (md superblocks, chunk {chunk}) with nbdraid's write-back "
            "cache in RAM (`cache=ram`, 256 MiB: a card without a battery), with its log "
            "(`cache=log`, a {s8_log_size} log on tmpfs: a card with a battery, where a FLUSH "
            "only syncs the log), and with nbdkit's own cache filter in front of the array "
            "(`nbdkit --filter=cache raid ...`, its file on tmpfs), each against the same array "
            "without a cache and run back to back with it in every repetition (the order "
            "reversed on even ones).  Each server runs over an array made for it just before "
            "(`nbdraid create --assume-clean`) and is killed after its run: what a cache left "
            "dirty is not waited for.",
            "Two kinds of rows.  *Timed* rows ({runtime} s after a {ramp} s ramp; on tmpfs after "
            "{s8_tmpfs_ramp} s, as a fresh server there takes about 2 s to reach its pace: its "
            "first requests' buffers are new memory, each first touch a page fault) measure what "
            "a client sees while the cache takes a burst whole; random writes there are "
            "answered from memory.  *Fixed amount* rows are timed from the start of fio's jobs to "
            "the end of their last FLUSH, so that nothing a cache defers is left out (each "
            "after the server idled {s8_settle} s: a fresh cache=ram server spends its first "
            "0.5 s of CPU populating its pool, and a copy on tmpfs lasts about that long): "
            "{s8_write_size} of 1M sequential writes, and a copy of {s8_copy_size} (read from the start of the array "
            "and written 1 GiB further on, the reader and the writer running at once, as a "
            "copy tool with the kernel's read-ahead and write-back does; 128K requests, QD1 "
            "each).  *FLUSH each*: a FLUSH after every write, as a database's fsync.  "
            "Intel's \"Cache "
            "Write-Back\" on a 2-SSD RAID 0: file copies +13 % to +60 %, sequential reads up "
            "to 2x, small random I/O unchanged or up to 20 % slower; LSI's MegaRAID with its "
            "cache made 4-disk RAID 5 fast enough to retire \"RAID 5 is slow\".  **Goals, on "
            "the emulated disks: cache ram at least 10x of no cache on 4K random writes at "
            "QD1; cache log at least 20x with a FLUSH after every write; RAID 5 x4 sequential "
            "writes through the cache at least 0.9x of RAID 0 x3 on the same disks; and, on "
            "both media, at or above nbdkit's cache filter on every row.**  Rows where a "
            "cache's median is under the filter's are measured again on their own (below each "
            "table), and that goal is judged on the second measurement: under the filter "
            "only where its repetitions show it (a sign test).",
        ],
        "configs": ["0x4-Cram", "0x4-Clog", "0x4-Cfilter", "5x4-Cram", "5x4-Clog",
                    "5x4-Cfilter"],
        "base": {"0x4-Cram": "0x4", "0x4-Clog": "0x4", "0x4-Cfilter": "0x4",
                 "5x4-Cram": "5x4", "5x4-Clog": "5x4", "5x4-Cfilter": "5x4"},
        "blocks": [
            {"block": "versus", "levels": ["0x4", "5x4"],
             "header": ["pattern", "no cache"],
             "caption": "{config_label}: without a cache, and each cache's throughput over "
                        "it and over nbdkit's cache filter (medians of same-repetition "
                        "ratios, ranges in brackets):",
             "columns": [["ram", None, "ram / none"], ["log", None, "log / none"],
                         ["filter", None, "filter / none"], ["ram", "filter", "ram / filter"],
                         ["log", "filter", "log / filter"]],
             "extra": {"writeflush": ["0x3", "RAID 0 x3: {abs}; {level} through the "
                                             "cache / RAID 0 x3: ram {ram}, log {log}"]},
             # Rows under the filter were measured again on their own
             # (s8-cache.sh confirm_floor, study cache-confirm): the goal is
             # judged on those and on the rows not measured again.
             "floor": {"threshold": 1.0, "modes": ["ram", "log"], "confirm": "cache-confirm",
                       "text": "{config_label}: at or above nbdkit's cache filter on every "
                               "row (lowest: {pattern_label}{again})",
                       "again_note": ", measured again: under the filter in {k} of {n} "
                                     "repetitions; grid {grid:.2f}",
                       "why": "; its lowest single repetition {lo:.2f}",
                       "again": "Rows where a cache's median was under the filter's were "
                                "measured again, each on its own: {reps} repetitions, the cache "
                                "and the filter back to back{timed}.  The lowest of many noisy "
                                "ratios is biased low (the minimum of many estimates), so the "
                                "goal is judged on these second, independent measurements, and "
                                "a row there counts as under the filter only if its repetitions "
                                "show it: so many of them under 1 that a tie (each repetition "
                                "as likely above as under) would give that many less than "
                                "2.5 % of the time (a one-sided sign test: {need} of {reps}).  Where "
                                "neither cache is in a row's path (reads that miss both, on "
                                "tmpfs) the two are the same work, and such a row can only "
                                "tie:",
                       "timed": " (timed rows {runtime:g} s)",
                       "header": ["row", "cache", "grid", "measured again",
                                  "repetitions under the filter"]}},
            {"block": "goals", "media": ["spindle"], "rules": [
                {"kind": ["randwrite"], "bs": "4k", "qd": 1,
                 "configs": [["0x4-Cram", 10], ["5x4-Cram", 10]],
                 "text": "{config_label}: {pattern_label} >= {threshold}x of no cache"},
                {"kind": ["fsync"], "configs": [["0x4-Clog", 20], ["5x4-Clog", 20]],
                 "text": "{config_label} (log on tmpfs): {pattern_label} >= {threshold}x "
                         "of no cache"},
                {"kind": ["writeflush"], "base": "0x3",
                 "configs": [["5x4-Cram", 0.9], ["5x4-Clog", 0.9]],
                 "text": "{config_label}: {pattern_label} >= {threshold}x of RAID 0 x3 on "
                         "the same disks"},
            ]},
            {**BAR_CHART, "alt": "write-back cache", "ymax": 2000, "size": "1300,640", "wrap": True,
             "ylabel": "throughput / no cache (log scale)",
             "script": (COMMON + 'set title "Write-back cache: each cache against the same '
                        'array without one (same run)\\n{medium}"\n'
                        + BARS.replace("set yrange [0:{ymax:g}]",
                                       "set logscale y\nset yrange [0.1:{ymax:g}]")),
             "lines": [[1, "no cache", "lc rgb '#000000' lw 1.5"],
                       [10, "10x", "dt 2 lc rgb '#999999' lw 1.5"]]},
        ],
        "csv_by": ["pattern", "config"],
        "csv": ["medium", "config", "config_label", "pattern", "pattern_label", "base_iops",
                "base_mbps", "iops", "mbps", "ratio", "ratio_min", "ratio_max", "reps",
                "members_busy_pct", "srv_cpu_pct", "host_cpu_pct"],
    },
]
