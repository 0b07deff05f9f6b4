"""Pictures of the model outputs (matplotlib, Agg backend). Imported lazily by the CLI only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pulsar_ops.errors import ModelError

_HINT = "use a file name ending in .png or .svg"


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _check(path: Path) -> None:
    if path.suffix.lower() not in (".png", ".svg"):
        raise ModelError(f"--plot {path}: unsupported picture format", hint=_HINT)


def plot_gc(doc: dict[str, Any], path: Path) -> None:
    """Disk usage (entry logs) per bookie over time, and cumulative bytes reclaimed by kind; with measured layouts
    (``estimate_vs_measured``) also the metadata-only estimate's error per bookie."""
    _check(path)
    plt = _pyplot()
    acc = doc.get("estimate_vs_measured") or {}
    if acc:
        fig = plt.figure(figsize=(9, 10))
        ax1 = fig.add_subplot(3, 1, 1)
        ax2 = fig.add_subplot(3, 1, 2, sharex=ax1)
        plot_estimate_error(fig.add_subplot(3, 1, 3), acc)
    else:
        fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    start = doc.get("start_ms", 0)
    horizon_h = (doc.get("horizon_ms", start) - start) / 3_600_000
    for bid, b in doc["bookies"].items():
        xs, ys = [0.0], [b["used_bytes_before"] / 1e9]
        for ev in b["timeline"]:
            xs += [(ev["t_ms"] - start) / 3_600_000, (ev["end_ms"] - start) / 3_600_000]
            ys += [ys[-1], ev["used_bytes"] / 1e9]
        xs.append(max(horizon_h, xs[-1]))
        ys.append(ys[-1])
        ax1.plot(xs, ys, label=bid, drawstyle="default")
        if b.get("disk_bytes"):
            ax1.axhline(b["disk_bytes"] / 1e9, linestyle=":", linewidth=0.8)
    ax1.set_ylabel("entry-log bytes on disk (GB)")
    ax1.set_title("Bookie disk usage after the deletions")
    if len(doc["bookies"]) <= 12:
        ax1.legend(fontsize="small")
    for kind in ("deletion", "minor", "major"):
        xs, ys, cum = [0.0], [0.0], 0.0
        for ev in doc["total"]["timeline"]:
            got = ev["reclaimed_by"].get(kind, 0)
            if got:
                cum += got / 1e9
                xs += [(ev["t_ms"] - start) / 3_600_000, (ev["end_ms"] - start) / 3_600_000]
                ys += [ys[-1], cum]
        xs.append(max(horizon_h, xs[-1]))
        ys.append(ys[-1])
        ax2.plot(xs, ys, label=kind)
    ax2.set_xlabel("hours after the deletion")
    ax2.set_ylabel("reclaimed, cumulative (GB)")
    ax2.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_estimate_error(ax: Any, accuracy: dict[str, Any]) -> None:
    """Per bookie: the estimate's relative error on predicted reclaim, garbage and total bytes (bars, %)."""
    names = sorted(accuracy)
    pos = list(range(len(names)))
    for i, (key, label) in enumerate(
        (("predicted_reclaim", "predicted reclaim"), ("garbage_bytes", "garbage"), ("total_bytes", "total bytes"))
    ):
        vals = [(accuracy[n][key]["error"] or 0.0) * 100 for n in names]
        xs = [x + (i - 1) * 0.27 for x in pos]
        ax.bar(xs, vals, width=0.27, label=label)
        if key == "predicted_reclaim":
            _band_bars(ax, xs, [accuracy[n][key] for n in names])
    ax.axhline(5, linestyle=":", linewidth=0.8, color="grey")
    ax.axhline(-5, linestyle=":", linewidth=0.8, color="grey")
    ax.axhline(0, linewidth=0.6, color="black")
    ax.set_xticks(pos, names, rotation=20, fontsize="small")
    ax.set_ylabel("estimate error (%)")
    ax.set_title("Metadata-only layout estimate vs measured layout, per bookie")
    ax.legend(fontsize="small")


def _band_bars(ax: Any, xs: list[float], recl: list[dict[str, Any]]) -> None:
    """The estimate's reclaim range over the log-boundary phases, as % of the measured reclaim (whiskers)."""
    lo: list[float] = []
    hi: list[float] = []
    px: list[float] = []
    for x, r in zip(xs, recl, strict=True):
        band = r.get("estimated_range")
        meas = (r.get("measured") or {}).get("total") or 0
        if band is None or not meas:
            continue
        px.append(x)
        lo.append((band["low"] - meas) / meas * 100)
        hi.append((band["high"] - meas) / meas * 100)
    if px:
        ax.vlines(px, lo, hi, colors="black", linewidth=1.2, label="reclaim range over boundary phases")
        ax.scatter(px + px, lo + hi, marker="_", color="black", s=60)


def plot_layout_error(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    """``tests/perf/measure_layout_estimate.py --plot``: per-bookie error of the estimate (one figure)."""
    _check(path)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 4.5))
    acc = {
        r["bookie"]: {
            "predicted_reclaim": {
                "error": r["reclaim_err"],
                "measured": {"total": r.get("reclaim_meas") or 0},
                **({"estimated_range": r["reclaim_range"]} if r.get("reclaim_range") else {}),
            },
            "garbage_bytes": {
                "error": (r["garbage_est"] - r["garbage_meas"]) / r["garbage_meas"] if r["garbage_meas"] else 0.0
            },
            "total_bytes": {"error": r["bytes_err"]},
        }
        for r in rows
    }
    plot_estimate_error(ax, acc)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_cache(doc: dict[str, Any], path: Path) -> None:
    """Hit rate per second per strategy; with a scenario's published figures, also model against published."""
    _check(path)
    plt = _pyplot()
    published = doc.get("published")
    if published:
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [2, 1]})
        names = list(doc["policies"])
        pos = list(range(len(names)))
        ax2.bar([x - 0.2 for x in pos], [doc["hit_rate"][n] * 100 for n in names], width=0.4, label="model")
        ax2.bar([x + 0.2 for x in pos], [published[n] * 100 for n in names], width=0.4, label="published")
        ax2.set_xticks(pos, names, rotation=20)
        ax2.set_ylim(0, 100)
        ax2.set_ylabel("hit rate (%)")
        ax2.set_title("Rolling restart: model vs PR #24623")
        ax2.legend(fontsize="small")
    else:
        fig, ax = plt.subplots(figsize=(9, 4.5))
    for policy, r in doc["policies"].items():
        xs = [p["t_s"] for p in r["per_second"]]
        ax.plot(xs, [p["hit_rate"] * 100 for p in r["per_second"]], label=f"{policy} ({r['hit_rate']:.1%})")
    ax.set_xlabel("simulated seconds")
    ax.set_ylabel("hit rate (%)")
    ax.set_ylim(0, 100)
    ax.set_title("Broker entry cache hit rate per policy")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_nack(points: list[dict[str, Any]], path: Path) -> None:
    _check(path)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    xs = [p["input"]["delay_ms"] / 1000 for p in points]
    ax.loglog(xs, [p["old"]["bytes"] / 2**20 for p in points], marker="o", label="ConcurrentLongLongPairHashMap")
    ax.loglog(xs, [p["new"]["bytes"] / 2**20 for p in points], marker="s", label="PIP-393 buckets + Roaring")
    ax.set_xlabel("redelivery delay (s)")
    ax.set_ylabel("tracker memory (MiB)")
    rate = points[0]["input"]["rate"] if points else 0
    ax.set_title(f"NegativeAcksTracker memory at {rate:g} nacks/s")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
