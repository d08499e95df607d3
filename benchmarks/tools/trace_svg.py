#!/usr/bin/env python3
"""Draws one interval of a canopy profiler trace (Chrome/Perfetto JSON) as an SVG timeline.

Usage: trace_svg.py TRACE.json OUT.svg [EVENT_NAME] [TITLE]

EVENT_NAME picks the interval: the first complete event of that name (an annotation such as
"train step 2", or a call "jit(f)"); default: the first call event. Every event of that thread
inside the interval is drawn as a box on the row of its nesting level, coloured by primitive,
labelled where it is wide enough, over a millisecond axis; the legend gives each primitive's
total time in the interval. Standard library only.
"""

import html
import json
import sys

COLOURS = {
    "dot_general": "#3b6fb6",
    "dot_general_epilogue": "#5b8fd6",
    "fused_elementwise": "#e08a2c",
    "call": "#7a7a7a",
    "annotation": "#b0b0b0",
}
OTHER = "#4aa37a"


def colour(e):
    if e["cat"] != "kernel":
        return COLOURS[e["cat"]]
    return COLOURS.get(e["name"], OTHER)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    trace = json.load(open(sys.argv[1]))
    xs = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    want = sys.argv[3] if len(sys.argv) > 3 else None
    window = next((e for e in xs if (e["name"] == want if want else e["cat"] == "call")), None)
    if window is None:
        sys.exit(f"trace_svg: no event named {want!r}")
    t0, t1, tid = window["ts"], window["ts"] + window["dur"], window["tid"]
    inside = [e for e in xs if e["tid"] == tid and e["ts"] >= t0 and e["ts"] + e["dur"] <= t1 + 1e-3]
    # Nesting level from containment (the events are complete, so intervals nest).
    inside.sort(key=lambda e: (e["ts"], -e["dur"]))
    stack, level = [], {}
    for i, e in enumerate(inside):
        while stack and inside[stack[-1]]["ts"] + inside[stack[-1]]["dur"] < e["ts"] + e["dur"] - 1e-3:
            stack.pop()
        level[i] = len(stack)
        stack.append(i)
    rows = max(level.values()) + 1
    width, left, right, row_h, top = 1200, 20, 20, 34, 50
    scale = (width - left - right) / max(t1 - t0, 1e-9)
    legend_top = top + rows * row_h + 40
    totals = {}
    for e in inside:
        if e["cat"] == "kernel":
            totals[e["name"]] = totals.get(e["name"], 0.0) + e["dur"]
    # The legend: primitives over 0.5 % of the interval, the rest as one line.
    shown = sorted(((n, t) for n, t in totals.items() if t >= 0.005 * window["dur"]), key=lambda kv: -kv[1])
    rest = [t for n, t in totals.items() if t < 0.005 * window["dur"]]
    if rest:
        shown.append((f"{len(rest)} other primitives", sum(rest)))
    height = legend_top + 22 * (len(shown) + 1) + 10
    title = sys.argv[4] if len(sys.argv) > 4 else f"{window['name']}: {window['dur'] / 1000:.3f} ms"
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left}" y="22" font-size="15">{html.escape(title)}</text>',
    ]
    # Millisecond axis.
    span_ms = (t1 - t0) / 1000
    step = next(s for s in (0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10, 20, 50, 100) if span_ms / s <= 12)
    axis_y = top + rows * row_h + 8
    out.append(f'<line x1="{left}" y1="{axis_y}" x2="{width - right}" y2="{axis_y}" stroke="#444"/>')
    k = 0
    while k * step <= span_ms + 1e-9:
        x = left + k * step * 1000 * scale
        out.append(f'<line x1="{x:.1f}" y1="{axis_y}" x2="{x:.1f}" y2="{axis_y + 5}" stroke="#444"/>')
        out.append(f'<text x="{x:.1f}" y="{axis_y + 18}" text-anchor="middle">{k * step:g} ms</text>')
        k += 1
    for i, e in enumerate(inside):
        x = left + (e["ts"] - t0) * scale
        w = max(e["dur"] * scale, 0.5)
        y = top + level[i] * row_h
        args = e.get("args", {})
        tip = f'{e["name"]} {args.get("shapes", "")} {args.get("params", "")} {e["dur"]:.1f} us'
        out.append(
            f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{row_h - 6}" fill="{colour(e)}" stroke="white" stroke-width="0.5">'
            f"<title>{html.escape(tip)}</title></rect>"
        )
        label = e["name"].replace("_elementwise", "").replace("dot_general_epilogue", "matmul+bias").replace("dot_general", "matmul")
        if w > 7 * len(label):
            out.append(f'<text x="{x + 3:.1f}" y="{y + row_h / 2 + 1}" fill="white">{html.escape(label)}</text>')
    kernels = sum(totals.values())
    out.append(f'<text x="{left}" y="{legend_top}">kernels: {kernels / 1000:.3f} ms of {window["dur"] / 1000:.3f} ms</text>')
    for j, (name, t) in enumerate(shown):
        y = legend_top + 22 * (j + 1)
        out.append(f'<rect x="{left}" y="{y - 11}" width="14" height="14" fill="{COLOURS.get(name, OTHER)}"/>')
        out.append(f'<text x="{left + 22}" y="{y}">{html.escape(name)}: {t / 1000:.3f} ms ({100 * t / window["dur"]:.1f} %)</text>')
    out.append("</svg>")
    open(sys.argv[2], "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
