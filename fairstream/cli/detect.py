"""``fairstream detect``: keyword mentions (no models) of every document, as JSON lines."""

from __future__ import annotations

import argparse
import logging
from typing import Any

from fairstream.cli.common import AddCommand, filter_config_options
from fairstream.errors import InvalidDocumentError
from fairstream.io import sample_corpus_path

logger = logging.getLogger(__name__)


def cmd_detect(args: argparse.Namespace) -> int:
    """Keyword mentions (no models) of every document, as JSON lines."""
    from fairstream.candidates import CandidateExtractor
    from fairstream.io import iter_records, list_shards, write_jsonl
    from fairstream.progress import Progress
    from fairstream.taxonomy import Taxonomy
    from fairstream.text import LengthFilter, coerce_text

    extractor = CandidateExtractor(
        Taxonomy.load(args.taxonomy), length_filter=LengthFilter(args.min_tokens, args.max_tokens)
    )
    skipped: list[str] = []
    shards = list_shards(args.inputs or [sample_corpus_path()])

    def records() -> Any:
        progress = Progress(
            sum(s.stat().st_size for s in shards), desc="fairstream detect", enabled=not args.no_progress
        )
        for shard in shards:
            progress.note(shard.name)
            for i, (line, doc) in enumerate(iter_records(shard, on_error=args.on_error, skipped=skipped)):
                try:
                    text = coerce_text(
                        doc.get(args.text_field),
                        where=f"{shard}:{line} field {args.text_field!r}",
                        max_chars=None,
                    )
                except InvalidDocumentError as exc:
                    if args.on_error == "raise":
                        raise
                    logger.warning("skipping: %s", exc.problem)
                    skipped.append(exc.problem)
                    continue
                scan = extractor.scan(text)
                yield {
                    "file": shard.name,
                    "id": doc.get("id", i),
                    "sentences": [
                        {
                            "start": c.start,
                            "end": c.end,
                            "n_tokens": c.n_tokens,
                            "mentions": [m.to_dict() for m in c.mentions],
                        }
                        for c in scan.candidates
                    ],
                }
            progress.advance(shard.stat().st_size)
        progress.close()

    n = write_jsonl(args.output, records())
    print(
        f"wrote {n} documents to {args.output}"
        + (f" ({len(skipped)} bad records skipped)" if skipped else "")
    )
    return 0


def register(add: AddCommand) -> None:
    """Add ``detect`` with ``fairstream.cli.parser``'s ``add(name, func, help)``."""
    p = add("detect", cmd_detect, "Find taxonomy keyword mentions (no models) and write them as JSON lines.")
    p.add_argument("inputs", nargs="*", help="shard files or folders; none = the shipped sample corpus")
    p.add_argument(
        "-o", "--output", default="mentions.jsonl", help="JSON lines output (default: %(default)s)"
    )
    # the filter's own flags for what detect shares with it (the taxonomy is a common option)
    filter_config_options(p, ("text_field", "min_tokens", "max_tokens", "on_error"))
    p.add_argument("--no-progress", action="store_true", help="no progress display")
