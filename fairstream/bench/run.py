"""``run_bench``: one whole run (see the package docstring)."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from fairstream.bench.backends import backends
from fairstream.bench.machine import machine_info
from fairstream.bench.results import BACKENDS, QUICK_DOCS, QUICK_PAIRS, BenchResult
from fairstream.bench.stages import end_to_end, keyword_stage, load_texts
from fairstream.bench.timing import probabilities, time_backend


def run_bench(
    shards: Sequence[str | Path] = (),
    *,
    device: str = "auto",
    limit: int | None = None,
    quick: bool = False,
    batch_sizes: Sequence[int] | None = None,
    rounds: int = 1,
    threads: int | None = None,
    max_pairs: int | None = None,
    text_field: str = "text",
    progress: bool = True,
    scan_workers: int | None = None,
    only: Sequence[str] | None = None,
    on_update: Callable[[BenchResult], None] | None = None,
    model: str | Path | None = None,
    lookahead: int | None = None,
    taxonomy: str | None = None,
) -> BenchResult:
    """Measure everything described in the module docstring; see ``fairstream bench --help``.

    ``only``: keys of ``BACKENDS`` to time (default all). ``on_update`` is called with the result so
    far after the end-to-end run and after each backend (``complete`` False until the end), so a run
    that is stopped still leaves what it measured. ``model``: model folder or shipped name (``None``:
    the default), run by every row. ``lookahead``: documents per window of the end-to-end run
    (``None``: the filter's default). ``taxonomy``: a shipped taxonomy's name or a JSON file (``None``:
    the default), whose keywords the keyword stage finds and the end-to-end run judges.
    """
    unknown = sorted(set(only or ()) - set(BACKENDS))
    if unknown:
        raise ValueError(f"only={unknown}: unknown backends; allowed: {', '.join(BACKENDS)}")
    from tqdm import tqdm

    from fairstream.models.loader import load_model, parse_device

    device = parse_device(device)
    from fairstream.models.runtime import JointModel
    from fairstream.taxonomy import Taxonomy

    # a missing folder or unknown name fails here, naming the shipped models, before any work
    JointModel(model)
    tax = Taxonomy.load(taxonomy)
    if rounds < 1:
        raise ValueError(f"rounds={rounds} must be >= 1")
    if threads is not None and threads < 1:
        raise ValueError(f"threads={threads} must be >= 1")
    texts, paths = load_texts(
        shards, text_field=text_field, limit=QUICK_DOCS if quick and limit is None else limit
    )
    if not texts:
        raise ValueError(f"no documents with a string field {text_field!r} in {paths}")
    kw, pairs = keyword_stage(texts, tax)
    cap = QUICK_PAIRS if quick and max_pairs is None else max_pairs
    pairs = pairs[:cap] if cap else pairs
    if not pairs:
        raise ValueError(f"no keyword mentions to judge in {len(texts)} documents; give more or other shards")
    e2e = end_to_end(
        texts, device, threads, None, scan_workers, lookahead=lookahead, model_name=model, taxonomy=taxonomy
    )
    result = BenchResult(
        machine_info(),
        {
            "shards": paths,
            "docs": len(texts),
            "mb": e2e["mb"],
            "pairs_timed": len(pairs),
            "taxonomy": tax.name,
        },
        e2e,
        kw,
    )
    if on_update is not None:
        on_update(result)
    # every backend's decisions (the int8 model's too, at each batch size) against the shipped int8 model
    reference = probabilities(
        *load_model(model, device="cpu", batch_size=8, threads=threads).predict_logits(pairs)
    )
    with tempfile.TemporaryDirectory(prefix="fairstream-bench-") as tmp:
        todo = backends(
            device, threads=threads, quick=quick, sweep=batch_sizes, tmp=Path(tmp), only=only, model=model
        )
        bar = tqdm(todo, desc="fairstream bench", unit="backend", disable=not progress, file=sys.stderr)
        for backend in bar:
            bar.set_postfix_str(backend.name)
            result.rows.extend(time_backend(backend, pairs, rounds, reference))
            if on_update is not None:
                on_update(result)
    result.complete = True
    return result
