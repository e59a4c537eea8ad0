"""Plots the panels promql-eval evaluated (Prometheus' engine over a recorded run) into one PNG,
a subplot per panel, each phase of the recorded run marked and named.

    plot.py SERIES.json SCRAPES.txt OUT.png 'TITLE|TITLE|...'

Panels are drawn in the order of the titles given.
"""

import json
import sys
from datetime import datetime, timezone

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# The gauge's states in the order the dashboard lists them, each its own colour.
ORDER = [
    "up-to-date", "would-rebuild", "rebuilt", "not-rebuildable", "unsupported-target",
    "upstream-owned", "not-adopted", "failed",
    "notified", "pending", "given-up", "skipped", "observed",
]


def phases(path):
    found = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if line.startswith("# phase "):
                _, _, at, name = line.rstrip("\n").split(" ", 3)
                found.append((int(at) / 1000.0, name))
    return found


def main(series_path, scrapes_path, out, titles):
    data = json.load(open(series_path, encoding="utf-8"))
    start = data["start"] / 1000.0
    marks = phases(scrapes_path)
    order = titles.split("|")
    panels = sorted(data["panels"], key=lambda p: order.index(p["title"]))
    columns = 2
    rows = (len(panels) + columns - 1) // columns
    figure, axes = plt.subplots(rows, columns, figsize=(15, 4.2 * rows), squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        series = sorted(
            panel["series"],
            key=lambda s: (ORDER.index(s["legend"]) if s["legend"] in ORDER else 99, s["legend"]),
        )
        for s in series:
            if not s["points"] or max(v for _, v in s["points"]) == 0:
                continue
            xs = [t / 1000.0 - start for t, _ in s["points"]]
            ys = [v for _, v in s["points"]]
            ax.plot(xs, ys, label=s["legend"], linewidth=1.8, drawstyle="steps-post")
        for at, name in marks:
            ax.axvline(at - start, color="grey", linestyle=":", linewidth=1)
            ax.text(at - start + 0.5, 1.0, name.split(" (")[0], transform=ax.get_xaxis_transform(),
                    fontsize=8, va="top", color="dimgrey")
        ax.set_title(panel["title"], fontsize=11, loc="left")
        unit = {"ops": "per second", "short": ""}.get(panel["unit"], panel["unit"])
        ax.set_ylabel(unit)
        ax.set_xlabel("seconds into the recording")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    taken = datetime.fromtimestamp(start, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    figure.suptitle(
        f"pipewarden dashboard panels, Prometheus' PromQL over a recorded run on the local "
        f"control plane ({taken})",
        fontsize=12,
    )
    figure.tight_layout()
    figure.savefig(out, dpi=90)
    print(f"plot: {len(panels)} panels -> {out}")


if __name__ == "__main__":
    main(*sys.argv[1:5])
