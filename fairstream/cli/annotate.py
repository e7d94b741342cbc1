"""``fairstream annotate``: label (sentence, keyword) pairs with an LLM using the paper's two prompts."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from fairstream.cli.common import AddCommand


def cmd_annotate(args: argparse.Namespace) -> int:
    """Label (sentence, keyword) pairs with an LLM using the paper's two prompts."""
    from fairstream.annotate import run_annotation

    counts = run_annotation(
        input_path=Path(args.input),
        output_path=Path(args.output),
        backend=args.backend,
        model=args.model,
        base_url=args.base_url,
        gguf_file=args.gguf_file,
        max_items=args.limit,
        retries=args.retries,
        progress=not args.no_progress,
    )
    print(json.dumps(counts))
    return 0


def register(add: AddCommand) -> None:
    """Add ``annotate`` with ``fairstream.cli.parser``'s ``add(name, func, help)``."""
    p = add(
        "annotate", cmd_annotate, "Label (sentence, keyword) pairs with an LLM (paper prompts); resumable."
    )
    p.add_argument("input", help="JSON lines with uid, text, keyword, gloss")
    p.add_argument(
        "-o", "--output", required=True, help="JSON lines output (appended; existing uids are skipped)"
    )
    p.add_argument(
        "--backend",
        choices=["openai", "transformers"],
        default="openai",
        help="an OpenAI-compatible server or a local transformers model (default: %(default)s)",
    )
    p.add_argument(
        "--model", required=True, help="model name (openai) or local folder / repo path (transformers)"
    )
    p.add_argument(
        "--base-url", default="http://localhost:8000/v1", help="OpenAI-compatible endpoint (openai backend)"
    )
    p.add_argument("--gguf-file", default=None, help="GGUF file name inside --model (transformers backend)")
    p.add_argument("--limit", type=int, default=None, help="label at most this many pairs (default: all)")
    p.add_argument(
        "--retries",
        type=int,
        default=3,
        help="retries of a failed request or an unparsed answer (default: %(default)s)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
