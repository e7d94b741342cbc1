"""The fine-tuning data commands: ``fairstream build-sft`` and ``fairstream genmo-eval``.

Parsing and printing only; the work is in ``fairstream.builders.sft`` and ``.genmo``. ``register``
is called by ``fairstream.cli.parser.build_parser`` with its ``add`` helper, so both commands get the
common options (``--config``, ``--verbose``, ``--debug``) and the range checks of ``fairstream.cli.options.ALLOWED``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from fairstream.cli.common import AddCommand


def _backend_options(p: argparse.ArgumentParser, max_new_tokens: int) -> None:
    p.add_argument(
        "--backend",
        choices=["openai", "transformers"],
        default="openai",
        help="the chat model of `fairstream annotate`: an OpenAI-compatible server or a local "
        "transformers model (default: %(default)s)",
    )
    p.add_argument(
        "--model", default=None, help="model name (openai) or local folder / repo id (transformers)"
    )
    p.add_argument(
        "--base-url", default="http://localhost:8000/v1", help="OpenAI-compatible endpoint (openai backend)"
    )
    p.add_argument("--gguf-file", default=None, help="GGUF file name inside --model (transformers backend)")
    p.add_argument(
        "--max-new-tokens",
        type=int,
        default=max_new_tokens,
        help="upper bound on each reply's length in tokens (default: %(default)s)",
    )
    p.add_argument(
        "--retries",
        type=int,
        default=1,
        help="follow-ups of an unparsable reply, and retries of a failed request (default: %(default)s)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _make_backend(args: argparse.Namespace) -> object | None:
    from fairstream.errors import FairStreamError
    from fairstream.llm import make_backend

    if args.model is None:
        return None
    if args.max_new_tokens < 1:
        raise FairStreamError(f"--max-new-tokens {args.max_new_tokens!r}: must be a whole number >= 1")
    return make_backend(
        args.backend,
        args.model,
        base_url=args.base_url if args.backend == "openai" else None,
        gguf_file=args.gguf_file,
        retries=args.retries,
        max_new_tokens=args.max_new_tokens,
    )


def cmd_build_sft(args: argparse.Namespace) -> int:
    """Story pairs -> exploratory SFT and DPO files and the CDA baseline (resumable)."""
    from fairstream.builders.sft import ExploratoryBuilder, build_sft
    from fairstream.builders.sft_items import read_story_items
    from fairstream.builders.sft_outputs import format_build_result

    items = None
    if args.stories:
        items = read_story_items(args.stories, allow_eval_data=args.allow_eval_data)
        if args.limit is not None:
            items = items[: args.limit]
    backend = _make_backend(args)
    builder = ExploratoryBuilder(
        backend,  # type: ignore[arg-type]  # a ChatBackend or None
        seed=args.seed,
        retries=args.retries,
        rouge_range=(args.rouge_min, args.rouge_max),
        require_neutral=not args.allow_gendered_judgment,
    )
    result = build_sft(
        args.output,
        builder,
        items=items,
        num_pairs=args.num_pairs,
        max_attempts=args.max_attempts,
        progress=not args.no_progress,
        output_format=args.format,
    )
    print(format_build_result(result))
    return 0


def cmd_genmo_eval(args: argparse.Namespace) -> int:
    """GenMO metrics (PM, PMR, FBR, MBR, delta) of an answers file, asking a model first if given."""
    from fairstream.builders.genmo import (
        answer_genmo,
        format_environments,
        format_result,
        genmo_metrics,
        load_genmo,
        metrics_by_environment,
        metrics_record,
        read_answers,
    )
    from fairstream.errors import FairStreamError
    from fairstream.io import write_json

    answers = Path(args.answers)
    backend = _make_backend(args)
    pairs = load_genmo(args.genmo)
    n_pairs = len(pairs)
    if backend is not None:
        counts = answer_genmo(
            backend,  # type: ignore[arg-type]  # a ChatBackend
            answers,
            dataset_path=args.genmo,
            start=args.start,
            limit=args.limit,
            retries=args.retries,
            progress=not args.no_progress,
        )
        print(f"asked {counts['done']} pairs ({counts['skipped_existing']} already in {answers})")
    elif not answers.is_file():
        raise FairStreamError(
            f"--answers {answers}: file not found; give an answers file or --model to make one"
        )
    rows = read_answers(answers, n_pairs)
    result = genmo_metrics((f, m) for _, f, m in rows)
    by_env = metrics_by_environment(rows, pairs)
    env_dicts = {env: r.to_dict() for env, r in by_env.items()}
    out = Path(args.output) if args.output else answers.with_name(answers.stem + ".metrics.json")
    extra = [("by_environment", env_dicts), ("genmo", str(args.genmo)), ("model", args.model)]
    write_json(out, metrics_record(result, answers, extra))
    if args.json:
        print(json.dumps({"metrics": result.to_dict(), "by_environment": env_dicts}, indent=2))
    else:
        print(format_result(result, f"GenMO ({answers})"))
        if by_env:
            print(format_environments(by_env))
    print(f"wrote {out}")
    return 0


def register(add: AddCommand) -> None:
    """Add ``build-sft`` and ``genmo-eval`` with ``cli.build_parser``'s ``add(name, func, help)``."""
    p = add(
        "build-sft",
        cmd_build_sft,
        "Build exploratory-thinking SFT/DPO data and a CDA baseline from gender-swapped story pairs "
        "(generated by an LLM, or --stories); resumable.",
    )
    p.add_argument(
        "-o",
        "--output",
        default="fairstream-sft",
        help="output folder: pairs.jsonl checkpoint, sft/dpo/cda files, stats.json (default: %(default)s)",
    )
    p.add_argument(
        "--stories",
        default=None,
        help="start from story pairs in this file (JSON list or JSON lines: male_story/female_story, or "
        "the paper's male/female records) instead of generating them",
    )
    p.add_argument(
        "--allow-eval-data",
        action="store_true",
        help="accept the GenMO evaluation set as --stories (to test the pipeline only: never train on it)",
    )
    p.add_argument("--limit", type=int, default=None, help="with --stories: use the first N pairs only")
    p.add_argument(
        "--num-pairs",
        type=int,
        default=10,
        help="when generating: stop at this many kept pairs (default: %(default)s)",
    )
    p.add_argument(
        "--max-attempts",
        type=int,
        default=None,
        help="when generating: at most this many attempts in all (default: 20 x --num-pairs)",
    )
    p.add_argument("--seed", type=int, default=0, help="seeds each attempt's setting, theme and names")
    p.add_argument(
        "--rouge-min", type=float, default=0.80, help="lowest ROUGE-1 F of a kept pair (default: %(default)s)"
    )
    p.add_argument(
        "--rouge-max",
        type=float,
        default=0.95,
        help="highest ROUGE-1 F of a kept pair (default: %(default)s)",
    )
    p.add_argument(
        "--allow-gendered-judgment",
        action="store_true",
        help="keep judgments that use a gendered word or a character's name (default: reject them)",
    )
    p.add_argument(
        "--format",
        choices=["jsonl", "parquet"],
        default="jsonl",
        help="training file format (default: %(default)s)",
    )
    _backend_options(p, max_new_tokens=320)

    p = add(
        "genmo-eval",
        cmd_genmo_eval,
        "GenMO gender-bias metrics (PM, PMR, FBR, MBR, delta) of a model's stances on the story pairs; "
        "with --model, ask the model first (resumable).",
    )
    p.add_argument(
        "--answers",
        required=True,
        help="JSON lines with id or index, female_stance, male_stance (written first when --model is given)",
    )
    p.add_argument(
        "--genmo",
        default="../shared/data/bias/genmo/GenMO_dataset.json",
        help="the GenMO pairs (default: %(default)s)",
    )
    p.add_argument("--start", type=int, default=0, help="with --model: first pair index to ask (default: 0)")
    p.add_argument("--limit", type=int, default=None, help="with --model: ask at most this many pairs")
    p.add_argument("-o", "--output", default=None, help="metrics JSON (default: ANSWERS.metrics.json)")
    p.add_argument("--json", action="store_true", help="print the metrics as JSON")
    _backend_options(p, max_new_tokens=96)
