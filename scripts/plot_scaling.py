"""Writes docs/scaling.svg from the scaling and literal bench output (workload 2).

    LOADER_BENCH_PAGES=10,1000,100000,1000000 cargo bench --bench scaling 2>&1 | tee /tmp/scaling.txt
    cargo bench --bench literal 2>&1 | tee /tmp/literal.txt
    python3 scripts/plot_scaling.py /tmp/scaling.txt /tmp/literal.txt docs/scaling.svg

Plots ns/event against view size (log x, log y) for ours: the per-event rows ("view N pages,
0 stale") and the whole-round rows ("(round)", 0 and 10,000 stale). The literal bench runs the
bare ledger and has no view-size axis, so its rows appear as labelled horizontal references
(literal and production ledger, workload 1, at 10,000 live requests). Stdlib only.
"""
import math
import re
import sys

ROW = re.compile(r"^view\s+(\d+) pages, (\d+) stale( \(round\))?\s+([\d.]+) ns/event")
LIT = re.compile(r"^(w1 at 10000 live, (?:literal|production))\s+([\d.]+) ns/event")


def parse(scaling_text, literal_text):
    series = {}
    for line in scaling_text.splitlines():
        m = ROW.match(line)
        if m:
            pages, stale, rnd, ns = int(m[1]), int(m[2]), bool(m[3]), float(m[4])
            name = f"ours, {'whole round' if rnd else 'per event'}, {stale} stale"
            series.setdefault(name, []).append((pages, ns))
    refs = []
    for line in literal_text.splitlines():
        m = LIT.match(line)
        if m:
            refs.append((m[1] + " (ledger only, no view axis)", float(m[2])))
    return series, refs


def svg(series, refs):
    w, h, l, r, t, b = 760, 460, 70, 250, 30, 50
    xs = [p for pts in series.values() for p, _ in pts]
    ys = [y for pts in series.values() for _, y in pts] + [y for _, y in refs]
    x0, x1 = math.log10(min(xs)), math.log10(max(xs))
    y0, y1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    px = lambda v: l + (math.log10(v) - x0) / max(x1 - x0, 1e-9) * (w - l - r)
    py = lambda v: h - b - (math.log10(v) - y0) / max(y1 - y0, 1e-9) * (h - t - b)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{l}" y="18" font-size="14">ns/event against view size (log-log)</text>']
    for e in range(int(math.floor(x0)), int(math.ceil(x1)) + 1):
        x = px(10 ** e)
        out.append(f'<line x1="{x:.1f}" y1="{t}" x2="{x:.1f}" y2="{h - b}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{h - b + 16}" text-anchor="middle">{10 ** e:,}</text>')
    for e in range(y0, y1 + 1):
        y = py(10 ** e)
        out.append(f'<line x1="{l}" y1="{y:.1f}" x2="{w - r}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{l - 6}" y="{y + 4:.1f}" text-anchor="end">{10 ** e:,}</text>')
    out.append(f'<text x="{(l + w - r) / 2}" y="{h - 12}" text-anchor="middle">view size, pages</text>')
    out.append(f'<text x="16" y="{(t + h - b) / 2}" transform="rotate(-90 16 {(t + h - b) / 2})" '
               'text-anchor="middle">ns per event</text>')
    colors = ["#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]
    legend_y = t + 10
    for i, (name, pts) in enumerate(sorted(series.items())):
        c = colors[i % len(colors)]
        pts = sorted(pts)
        path = " ".join(f"{px(p):.1f},{py(v):.1f}" for p, v in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"/>')
        for p, v in pts:
            out.append(f'<circle cx="{px(p):.1f}" cy="{py(v):.1f}" r="3.5" fill="{c}">'
                       f'<title>{name}: {p:,} pages, {v:.1f} ns/event</title></circle>')
        out.append(f'<line x1="{w - r + 10}" y1="{legend_y}" x2="{w - r + 30}" y2="{legend_y}" '
                   f'stroke="{c}" stroke-width="2"/>')
        out.append(f'<text x="{w - r + 35}" y="{legend_y + 4}">{name}</text>')
        legend_y += 18
    for j, (name, v) in enumerate(refs):
        c = "#d62728" if "literal" in name else "#7f7f7f"
        y = py(v)
        out.append(f'<line x1="{l}" y1="{y:.1f}" x2="{w - r}" y2="{y:.1f}" stroke="{c}" '
                   'stroke-dasharray="6,4"/>')
        out.append(f'<text x="{w - r + 10}" y="{legend_y + 4}" fill="{c}">'
                   f'{name.split(" (")[0]}: {v:,.0f}</text>')
        legend_y += 18
    if refs:
        out.append(f'<text x="{w - r + 10}" y="{legend_y + 4}" fill="#555">(dashed: ledger only,</text>')
        out.append(f'<text x="{w - r + 10}" y="{legend_y + 20}" fill="#555">no view-size axis)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) != 4:
        print(__doc__)
        return 2
    with open(argv[1]) as f:
        scaling = f.read()
    try:
        with open(argv[2]) as f:
            literal = f.read()
    except OSError:
        literal = ""
    series, refs = parse(scaling, literal)
    if not series:
        print("no 'view N pages' rows in", argv[1], file=sys.stderr)
        return 1
    with open(argv[3], "w") as f:
        f.write(svg(series, refs))
    print("wrote", argv[3])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
