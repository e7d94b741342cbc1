"""Side-by-side (A/B) runs of one benchmark stage on two checkouts of fairstream.

Each side runs in its own process with the checkout first on ``sys.path``; the sides alternate
(A B A B ...) so that drift of a shared, noisy machine hits both alike, and the ratio is taken pair
by pair. Stages report CPU seconds of their own process (``time.process_time``: all its threads),
which other work on the machine barely moves, next to wall seconds.

    git worktree add /tmp/base <rev>     # the checkout to compare with (remove it after)
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any


def run_side(script: Path, checkout: Path, args: list[str]) -> dict[str, Any]:
    """Run ``script --stage --checkout CHECKOUT ARGS`` and return the JSON it prints last."""
    proc = subprocess.run(
        [sys.executable, str(script), "--stage", "--checkout", str(checkout), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{checkout}: stage failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def ab(
    script: Path, base: Path, new: Path, args: list[str], rounds: int, new_args: list[str] | None = None
) -> dict[str, Any]:
    """Alternate the two sides ``rounds`` times; medians and pairwise ratios (base / new: speed-up).

    ``new_args`` (default ``args``): the NEW side's stage arguments, e.g. another model.
    """
    runs: dict[str, list[dict[str, Any]]] = {"base": [], "new": []}
    side_args = {"base": args, "new": args if new_args is None else new_args}
    for i in range(rounds):
        for side, checkout in (
            (("base", base), ("new", new)) if i % 2 == 0 else (("new", new), ("base", base))
        ):
            runs[side].append(run_side(script, checkout, side_args[side]))
            print(f"  round {i + 1}/{rounds} {side}: {runs[side][-1]['cpu_s']:.2f} s CPU", file=sys.stderr)
    out: dict[str, Any] = {"rounds": rounds, "base_checkout": str(base), "new_checkout": str(new)}
    for key in ("cpu_s", "wall_s"):
        ratios = [b[key] / n[key] for b, n in zip(runs["base"], runs["new"], strict=True)]
        out[key] = {
            "base_median": round(statistics.median(r[key] for r in runs["base"]), 3),
            "new_median": round(statistics.median(r[key] for r in runs["new"]), 3),
            "speedup_median": round(statistics.median(ratios), 2),
            "speedup_min": round(min(ratios), 2),
            "speedup_max": round(max(ratios), 2),
        }
    out["base_last"], out["new_last"] = runs["base"][-1], runs["new"][-1]
    return out


def checkout_commit(checkout: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=checkout, check=False
    ).stdout.strip()


def configs(
    script: Path, checkout: Path, named: dict[str, list[str]], rounds: int, ref: str
) -> dict[str, Any]:
    """Run several configurations of one stage in turn, ``rounds`` times; ratios to ``ref`` per round."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in named}
    for i in range(rounds):
        order = list(named) if i % 2 == 0 else list(reversed(named))
        for name in order:
            runs[name].append(run_side(script, checkout, named[name]))
            print(f"  round {i + 1}/{rounds} {name}: {runs[name][-1]['wall_s']:.2f} s wall", file=sys.stderr)
    out: dict[str, Any] = {"rounds": rounds, "reference": ref}
    for name, rs in runs.items():
        speed = [r_ref["wall_s"] / r["wall_s"] for r, r_ref in zip(rs, runs[ref], strict=True)]
        out[name] = {
            "args": named[name],
            "wall_s_median": round(statistics.median(r["wall_s"] for r in rs), 2),
            "cpu_s_median": round(statistics.median(r["cpu_s"] for r in rs), 2),
            f"speed_vs_{ref}_median": round(statistics.median(speed), 2),
            f"speed_vs_{ref}_min": round(min(speed), 2),
            f"speed_vs_{ref}_max": round(max(speed), 2),
            "last": rs[-1],
        }
    return out
