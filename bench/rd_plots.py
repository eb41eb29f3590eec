#!/usr/bin/python3
"""Rate-distortion plots from bench/ebzip_vs_peers.sh's results.csv.

Usage: bench/rd_plots.py RESULTS.csv OUT_DIR

Draws OUT_DIR/rd-<field>.png for every field in the CSV: PSNR (dB) against
bits per value (32 / ratio for float32), one line each for ebzip, SZ3 (when
the CSV has it) and zfp, each point labelled by its REL. Where the CSV has
zfp on the fill-replaced copy (fields with fill values), that run is drawn
rather than zfp on the raw export, whose PSNR the fills ruin; the legend
says which input each compressor got.

Needs Debian's python3-matplotlib (and python3-numpy, which it pulls in).
"""

import csv
import math
import os
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit(
        "rd_plots.py: matplotlib is missing; install Debian's package "
        "python3-matplotlib (apt-get install python3-matplotlib) and run "
        "with /usr/bin/python3"
    )

# (compressor in the CSV, legend name, colour, marker, REL label offset in
# points and alignment: each series labels its points on another side)
SERIES = [
    ("ebzip", "ebzip", "tab:blue", "o", (6, -12), "left"),
    ("sz3", "SZ3", "tab:orange", "s", (-7, 6), "right"),
    ("zfp", "zfp", "tab:green", "^", (6, -12), "left"),
]
INPUT_NAMES = {"raw": "raw export", "fills-to-mean": "fills→mean copy"}


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def pick(rows, field, compressor):
    """The rows to plot for one compressor: prefer the fills→mean input for
    zfp, the raw export (ebzip with its fill value) for ebzip."""
    mine = [r for r in rows if r["field"] == field and r["compressor"] == compressor]
    if not mine:
        return "", []
    inputs = {r["input"] for r in mine}
    if compressor == "ebzip":
        chosen = "raw"
    elif "fills-to-mean" in inputs:
        chosen = "fills-to-mean"
    else:
        chosen = sorted(inputs)[0]
    points = [r for r in mine if r["input"] == chosen]
    points.sort(key=lambda r: float(r["bits_per_value"]))
    return chosen, points


def plot_field(rows, field, out_dir):
    source = next((r["source"] for r in rows if r["field"] == field and r.get("source")), "")
    fig, ax = plt.subplots(figsize=(7.0, 5.0), dpi=110)
    has_fills = any(r["field"] == field and r["input"] == "fills-to-mean" for r in rows)
    drawn = 0
    for compressor, name, colour, marker, offset, align in SERIES:
        chosen, points = pick(rows, field, compressor)
        points = [p for p in points if math.isfinite(float(p["psnr_db"] or "nan"))]
        if not points:
            continue
        x = [float(p["bits_per_value"]) for p in points]
        y = [float(p["psnr_db"]) for p in points]
        label = name
        if compressor == "ebzip":
            label += " (raw export, --fill: fills restored)" if has_fills else " (raw export)"
        else:
            label += f" ({INPUT_NAMES.get(chosen, chosen)})"
        if any(int(p["fill_mismatches"]) > 0 for p in points):
            label += ", fills not restored"
        if any(int(p["violations"]) > 0 for p in points):
            label += ", violates E"
        ax.plot(x, y, color=colour, marker=marker, linewidth=1.5, markersize=6, label=label)
        for p, xi, yi in zip(points, x, y):
            ax.annotate(
                p["rel"],
                (xi, yi),
                textcoords="offset points",
                xytext=offset,
                ha=align,
                fontsize=8,
                color=colour,
            )
        drawn += 1
    if not drawn:
        plt.close(fig)
        return None
    title = f"{field} ({source})" if source else field
    ax.set_title(f"{title}: PSNR against bits per value\nsame absolute bound E = range × REL")
    ax.set_xlabel("bits per value (32 / compression ratio)")
    ax.set_ylabel("PSNR over non-fill values (dB)")
    ax.margins(x=0.08, y=0.06)  # room for the REL labels
    ax.set_xlim(left=0)
    ax.grid(True, color="0.85")
    ax.legend(loc="lower right", fontsize=9)
    fig.tight_layout()
    path = os.path.join(out_dir, f"rd-{field}.png")
    fig.savefig(path)
    plt.close(fig)
    return path


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    rows = read_rows(argv[1])
    os.makedirs(argv[2], exist_ok=True)
    fields = []
    for r in rows:
        if r["field"] not in fields:
            fields.append(r["field"])
    for field in fields:
        path = plot_field(rows, field, argv[2])
        if path:
            print(f"rd_plots: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
