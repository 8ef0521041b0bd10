#!/usr/bin/env python3
"""Draws a flame graph (SVG) from `perf script` output, for the profiles in docs/perf/.

Debian 12 packages no flame graph renderer (perf's own `perf script report flamegraph` needs
d3-flame-graph's template, which is not packaged), so this folds the samples' call chains
and draws them: one box per frame, as wide as the share of samples under it, callers below
callees, coloured by where the code lives (ours, the kernel, a shared library).

  perf record -F 999 -g -p <pid> -o perf.data -- sleep 10
  perf script -i perf.data | scripts/flamegraph.py --title "single upserts" > graph.svg
  perf script -i perf.data | scripts/flamegraph.py --folded        # "a;b;c N" lines

Frames under --min-share (default 0.2 % of the samples) are left out of the picture (not of
the folded lines). Hover a box for its name and share.
"""
import argparse
import html
import re
import sys
from collections import defaultdict

# A sample's header: "comm pid/tid [cpu] time: period event:" (the pid part varies).
HEADER = re.compile(r"^(\S.*?)\s+\d+(?:/\d+)?\s+(?:\[\d+\]\s+)?[\d.]+:")
# A frame: "\t addr symbol+0xoff (dso)".
FRAME = re.compile(r"^\s+[0-9a-f]+\s+(.+?)\s+\((.*)\)$")


def frame_name(symbol, dso):
    symbol = re.sub(r"\+0x[0-9a-f]+$", "", symbol)
    if symbol == "[unknown]":
        dso = dso.rsplit("/", 1)[-1]
        return dso if dso.startswith("[") else "[%s]" % dso
    # Templates and argument lists make names too long to read in a box.
    symbol = re.sub(r"\(.*\)( const)?$", "", symbol)
    return symbol


def fold(lines):
    """Counts samples per call chain, root first, the thread's command at the bottom."""
    stacks = defaultdict(int)
    comm, frames = None, []
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if comm is not None:
                stacks[";".join([comm] + frames[::-1])] += 1
            comm, frames = None, []
            continue
        m = FRAME.match(line)
        if m and comm is not None:
            frames.append(frame_name(m.group(1), m.group(2)))
            continue
        h = HEADER.match(line)
        if h:
            comm, frames = h.group(1).strip(), []
    if comm is not None:
        stacks[";".join([comm] + frames[::-1])] += 1
    return stacks


def build_tree(stacks):
    root = {"name": "all", "count": 0, "children": {}}
    for stack, n in stacks.items():
        root["count"] += n
        node = root
        for name in stack.split(";"):
            node = node["children"].setdefault(name, {"name": name, "count": 0, "children": {}})
            node["count"] += n
    return root


def colour(name):
    h = sum(ord(c) for c in name) % 40
    if name.startswith("cairn::") or name.startswith("[cairnd"):
        return "rgb(%d,%d,%d)" % (230, 120 + h, 40)  # ours: orange
    if re.match(r"^(__x64|__sys|do_|sys_|tcp_|ip_|sock_|futex|schedule|pvm_|entry_|__schedule|"
                r"finish_task|try_to_wake|ep_|__wake|irq|asm_)", name) or "[kernel" in name:
        return "rgb(%d,%d,%d)" % (200 - h, 200 - h, 200)  # the kernel: grey
    return "rgb(%d,%d,%d)" % (220, 60 + h * 2, 60 + h)  # libraries: red


def draw(root, title, min_share, width=1200, row=16):
    total = max(root["count"], 1)
    boxes = []

    def walk(node, x, depth):
        boxes.append((node, x, depth))
        cx = x
        for child in sorted(node["children"].values(), key=lambda c: c["name"]):
            if child["count"] / total >= min_share:
                walk(child, cx, depth + 1)
            cx += child["count"]

    walk(root, 0, 0)
    depth = max(d for _, _, d in boxes) + 1
    height = (depth + 3) * row
    scale = (width - 20) / total
    out = [
        '<?xml version="1.0" standalone="no"?>',
        '<svg version="1.1" width="%d" height="%d" xmlns="http://www.w3.org/2000/svg" '
        'font-family="Verdana" font-size="11">' % (width, height),
        '<rect width="100%" height="100%" fill="#f8f8f8"/>',
        '<text x="%d" y="%d" text-anchor="middle" font-size="15">%s (%d samples)</text>'
        % (width // 2, row + 2, html.escape(title), total),
    ]
    for node, x, d in boxes:
        w = node["count"] * scale
        y = height - (d + 1) * row - 4
        label = "%s (%.1f%%)" % (node["name"], 100.0 * node["count"] / total)
        out.append('<g><title>%s</title><rect x="%.1f" y="%d" width="%.1f" height="%d" '
                   'fill="%s" rx="2"/>' % (html.escape(label), 10 + x * scale, y, max(w - 0.5, 0.1),
                                            row - 1, colour(node["name"])))
        chars = int(w / 7)
        if chars >= 3:
            text = node["name"] if len(node["name"]) <= chars else node["name"][: chars - 2] + ".."
            out.append('<text x="%.1f" y="%d">%s</text>' % (13 + x * scale, y + row - 4,
                                                             html.escape(text)))
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("input", nargs="?", help="perf script output (default: stdin)")
    p.add_argument("--title", default="CPU profile")
    p.add_argument("--folded", action="store_true", help="print folded stacks, not an SVG")
    p.add_argument("--min-share", type=float, default=0.002)
    args = p.parse_args()
    src = open(args.input, errors="replace") if args.input else sys.stdin
    stacks = fold(src)
    if not stacks:
        sys.exit("flamegraph.py: no samples with call chains in the input (perf record -g?)")
    if args.folded:
        for stack, n in sorted(stacks.items()):
            print(stack, n)
        return
    sys.stdout.write(draw(build_tree(stacks), args.title, args.min_share))


if __name__ == "__main__":
    main()
