"""Writes docs/depth.svg from the JSON line of the depth bench.

    make bench-depth 2>&1 | tee /tmp/depth.txt
    python3 scripts/plot_depth.py /tmp/depth.txt docs/depth.svg

Plots the items one recovery reads against the window's depth (log x, log y): a whole
invalidation, a failure and its retry, a jump to half the depth, and, for comparison, what a
recovery anchored at the source's start must read (the `top-anchored` row). The target, window + 2 prefetch + 2 page_size items, is a dashed line.
Stdlib only.
"""
import json
import math
import sys

CASES = [
    ("top-anchored", "anchored at the source's start (old model)", "#d62728"),
    ("invalidate", "whole invalidation", "#1f77b4"),
    ("fail+retry", "failure and retry", "#2ca02c"),
    ("jump", "jump to depth / 2", "#ff7f0e"),
]


def parse(text):
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and '"bench":"depth"' in line:
            return json.loads(line)
    return None


def svg(doc):
    w, h, l, r, t, b = 760, 440, 80, 270, 30, 50
    rows = doc["rows"]
    target = doc["target_items_per_recovery"]
    series = {c: sorted((x["depth"], x["items_read"]) for x in rows if x["case"] == c)
              for c, _, _ in CASES}
    xs = [d for pts in series.values() for d, _ in pts]
    ys = [v for pts in series.values() for _, v in pts] + [target]
    x0, x1 = math.log10(min(xs)), math.log10(max(xs))
    y0, y1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    px = lambda v: l + (math.log10(v) - x0) / max(x1 - x0, 1e-9) * (w - l - r)
    py = lambda v: h - b - (math.log10(v) - y0) / max(y1 - y0, 1e-9) * (h - t - b)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{l}" y="18" font-size="14">items one recovery reads against the window\'s '
           f'depth (log-log; page {doc["page_size"]}, prefetch {doc["prefetch"]}, '
           f'window {doc["window"]})</text>']
    for e in range(int(math.floor(x0)), int(math.ceil(x1)) + 1):
        x = px(10 ** e)
        out.append(f'<line x1="{x:.1f}" y1="{t}" x2="{x:.1f}" y2="{h - b}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{h - b + 16}" text-anchor="middle">{10 ** e:,}</text>')
    for e in range(y0, y1 + 1):
        y = py(10 ** e)
        out.append(f'<line x1="{l}" y1="{y:.1f}" x2="{w - r}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{l - 6}" y="{y + 4:.1f}" text-anchor="end">{10 ** e:,}</text>')
    out.append(f'<text x="{(l + w - r) / 2}" y="{h - 12}" text-anchor="middle">'
               'window start (depth), items</text>')
    out.append(f'<text x="16" y="{(t + h - b) / 2}" transform="rotate(-90 16 {(t + h - b) / 2})" '
               'text-anchor="middle">items read</text>')
    legend_y = t + 10
    for case, name, c in CASES:
        pts = series[case]
        if not pts:
            continue
        # The three recoveries read the same counts: offset the later lines by a pixel or two
        # so that each stays visible.
        dy = {"fail+retry": 3, "jump": -3}.get(case, 0)
        path = " ".join(f"{px(d):.1f},{py(v) + dy:.1f}" for d, v in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"/>')
        for d, v in pts:
            out.append(f'<circle cx="{px(d):.1f}" cy="{py(v) + dy:.1f}" r="3.5" fill="{c}">'
                       f'<title>{name}: depth {d:,}, {v:,} items</title></circle>')
        out.append(f'<line x1="{w - r + 10}" y1="{legend_y}" x2="{w - r + 30}" y2="{legend_y}" '
                   f'stroke="{c}" stroke-width="2"/>')
        out.append(f'<text x="{w - r + 35}" y="{legend_y + 4}">{name}</text>')
        legend_y += 18
    y = py(target)
    out.append(f'<line x1="{l}" y1="{y:.1f}" x2="{w - r}" y2="{y:.1f}" stroke="#555" '
               'stroke-dasharray="6,4"/>')
    out.append(f'<text x="{w - r + 10}" y="{legend_y + 4}" fill="#555">target: {target} items '
               '(dashed)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) != 3:
        print(__doc__)
        return 2
    with open(argv[1]) as f:
        doc = parse(f.read())
    if doc is None:
        print("no depth JSON line in", argv[1], file=sys.stderr)
        return 1
    with open(argv[2], "w") as f:
        f.write(svg(doc))
    print("wrote", argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
