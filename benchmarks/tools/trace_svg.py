#!/usr/bin/env python3
"""Draws intervals of canopy profiler traces (Chrome/Perfetto JSON) as SVG timelines.

Usage: trace_svg.py OUT.svg TRACE.json EVENT_NAME TITLE [TRACE.json EVENT_NAME TITLE ...]

Each (trace, event, title) is one panel: the first complete event of that name (an annotation such
as "train step 2", or a call "jit(f)") and every event of its thread inside it, drawn as boxes on
the rows of their nesting levels, coloured by primitive, labelled where they are wide enough, over
a millisecond axis shared by all panels; under each, every primitive's total time in the interval.
Standard library only.
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
WIDTH, LEFT, RIGHT, ROW, GAP = 1200, 20, 20, 30, 8


def colour(e):
    if e["cat"] != "kernel":
        return COLOURS[e["cat"]]
    return COLOURS.get(e["name"], OTHER)


def interval(path, name):
    """The window event and the events of its thread inside it, each with its nesting level."""
    xs = [e for e in json.load(open(path))["traceEvents"] if e.get("ph") == "X"]
    window = next((e for e in xs if e["name"] == name), None)
    if window is None:
        sys.exit(f"trace_svg: no event named {name!r} in {path}")
    t0, t1 = window["ts"], window["ts"] + window["dur"]
    inside = [e for e in xs if e["tid"] == window["tid"] and e["ts"] >= t0 and e["ts"] + e["dur"] <= t1 + 1e-3]
    inside.sort(key=lambda e: (e["ts"], -e["dur"]))
    stack, levels = [], []
    for e in inside:  # complete events nest: a level is the number of open enclosing ones
        while stack and stack[-1]["ts"] + stack[-1]["dur"] < e["ts"] + e["dur"] - 1e-3:
            stack.pop()
        levels.append(len(stack))
        stack.append(e)
    return window, list(zip(inside, levels))


def panel(out, top, window, events, title, scale):
    out.append(f'<text x="{LEFT}" y="{top + 14}" font-size="14">{html.escape(title)}: {window["dur"] / 1000:.2f} ms</text>')
    top += 24
    t0 = window["ts"]
    rows = max(level for _, level in events) + 1
    for e, level in events:
        x, w, y = LEFT + (e["ts"] - t0) * scale, max(e["dur"] * scale, 0.5), top + level * ROW
        args = e.get("args", {})
        tip = f'{e["name"]} {args.get("shapes", "")} {args.get("params", "")} {e["dur"]:.1f} us'
        out.append(
            f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{ROW - 5}" fill="{colour(e)}" stroke="white" stroke-width="0.5">'
            f"<title>{html.escape(tip)}</title></rect>"
        )
        label = e["name"].replace("dot_general_epilogue", "matmul+bias").replace("dot_general", "matmul")
        label = label.replace("fused_elementwise", "fused")
        if w > 7 * len(label):
            out.append(f'<text x="{x + 3:.1f}" y="{y + ROW / 2 + 1}" fill="white">{html.escape(label)}</text>')
    top += rows * ROW + 6
    totals = {}
    for e, _ in events:
        if e["cat"] == "kernel":
            totals[e["name"]] = totals.get(e["name"], 0.0) + e["dur"]
    # Primitives over 0.5 % of the interval, then the rest as one entry.
    shown = sorted(((n, t) for n, t in totals.items() if t >= 0.005 * window["dur"]), key=lambda kv: -kv[1])
    rest = [t for t in totals.values() if t < 0.005 * window["dur"]]
    if rest:
        shown.append((f"{len(rest)} other primitives", sum(rest)))
    x = LEFT
    for name, t in shown:
        text = f"{name} {t / 1000:.3f} ms ({100 * t / window['dur']:.0f} %)"
        out.append(f'<rect x="{x}" y="{top + 2}" width="12" height="12" fill="{COLOURS.get(name, OTHER)}"/>')
        out.append(f'<text x="{x + 16}" y="{top + 12}">{html.escape(text)}</text>')
        x += 24 + 6.3 * len(text)
    return top + 20 + GAP


def main():
    args = sys.argv[1:]
    if len(args) < 4 or (len(args) - 1) % 3:
        sys.exit(__doc__)
    panels = [(interval(args[i], args[i + 1]), args[i + 2]) for i in range(1, len(args), 3)]
    longest = max(w["dur"] for (w, _), _ in panels)
    scale = (WIDTH - LEFT - RIGHT) / longest
    out, top = [], 10
    for (window, events), title in panels:
        top = panel(out, top, window, events, title, scale)
    # The shared millisecond axis.
    span = longest / 1000
    step = next(s for s in (0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10, 20, 50, 100) if span / s <= 12)
    out.append(f'<line x1="{LEFT}" y1="{top}" x2="{WIDTH - RIGHT}" y2="{top}" stroke="#444"/>')
    k = 0
    while k * step <= span + 1e-9:
        x = LEFT + k * step * 1000 * scale
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + 5}" stroke="#444"/>')
        out.append(f'<text x="{x:.1f}" y="{top + 18}" text-anchor="middle">{k * step:g} ms</text>')
        k += 1
    height = top + 26
    head = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
    ]
    open(args[0], "w").write("\n".join(head + out + ["</svg>"]) + "\n")


if __name__ == "__main__":
    main()
