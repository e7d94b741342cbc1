"""The ``fairstream`` command line.

Every command has ``--help``. Options can also come from a config file (``--config FILE``, JSON,
TOML or YAML) whose keys are the long option names (``cap``, ``granularity``, ...); options given
on the command line win over the file.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from fairstream.errors import FairStreamError

logger = logging.getLogger(__name__)

SAMPLE_CORPUS = "sample_corpus.jsonl"


def sample_corpus_path() -> Path:
    """The small corpus that ships with fairstream (written by the project, mixed senses and regards)."""
    return Path(str(resources.files("fairstream") / "data" / SAMPLE_CORPUS))


# -- config files ---------------------------------------------------------------------------------
def load_config(path: str | Path) -> dict[str, Any]:
    """Read a JSON, TOML or YAML config file into a dict."""
    path = Path(path)
    if not path.is_file():
        raise FairStreamError(f"{path}: config file not found")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".toml":
            import tomllib

            data = tomllib.loads(text)
        elif path.suffix in (".yaml", ".yml"):
            try:
                import yaml
            except ImportError:
                raise FairStreamError(
                    f"{path}: YAML configs need PyYAML: pip install pyyaml (or use JSON/TOML)"
                ) from None
            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except FairStreamError:
        raise
    except Exception as exc:
        raise FairStreamError(f"{path}: cannot parse config ({type(exc).__name__}: {exc})") from None
    if not isinstance(data, dict):
        raise FairStreamError(f"{path}: a config file must hold a mapping of option names to values")
    return {k.replace("-", "_"): v for k, v in data.items()}


def _apply_config(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    args = parser.parse_args(argv)
    config_file = getattr(args, "config", None)
    if not config_file:
        return args
    sub = args._subparser
    config = load_config(config_file)
    allowed = {a.dest for a in sub._actions if a.dest not in ("help", "config")}
    unknown = sorted(set(config) - allowed)
    if unknown:
        raise FairStreamError(f"{config_file}: unknown option(s) {unknown}; allowed: {sorted(allowed)}")
    sub.set_defaults(**config)
    return parser.parse_args(argv)


# -- commands ---------------------------------------------------------------------------------------
def cmd_taxonomy(args: argparse.Namespace) -> int:
    """Print (and so validate) a taxonomy."""
    from fairstream.taxonomy import Taxonomy

    tax = Taxonomy.load(args.taxonomy)
    if args.json:
        print(json.dumps(tax.to_dict(), indent=2))
        return 0
    print(f"{tax.name}: {len(tax.classes)} classes, {len(tax)} keywords ({tax.source})")
    for cls, attrs in tax.classes.items():
        print(f"  {cls} ({len(attrs)}): " + ", ".join(a.keyword for a in attrs))
    return 0


def cmd_detect(args: argparse.Namespace) -> int:
    """Keyword mentions (no models) of every document, as JSON lines."""
    from tqdm import tqdm

    from fairstream.candidates import CandidateExtractor
    from fairstream.io import list_shards, read_documents, write_jsonl
    from fairstream.taxonomy import Taxonomy
    from fairstream.text import LengthFilter, coerce_text

    extractor = CandidateExtractor(
        Taxonomy.load(args.taxonomy), length_filter=LengthFilter(args.min_tokens, args.max_tokens)
    )
    skipped: list[str] = []

    def records() -> Any:
        for shard in list_shards(args.inputs or [sample_corpus_path()]):
            for i, doc in enumerate(
                tqdm(
                    read_documents(shard, on_error=args.on_error, skipped=skipped),
                    desc=shard.name,
                    unit="doc",
                )
            ):
                text = coerce_text(
                    doc.get(args.text_field),
                    where=f"{shard}:{i + 1} field {args.text_field!r}",
                    max_chars=None,
                )
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

    n = write_jsonl(args.output, records())
    print(
        f"wrote {n} documents to {args.output}"
        + (f" ({len(skipped)} bad records skipped)" if skipped else "")
    )
    return 0


def cmd_filter(args: argparse.Namespace) -> int:
    """Filter shards (or the embedded sample corpus) and write outputs, stats and a report."""
    from fairstream.filter_job import FilterJob

    inputs = args.inputs or [sample_corpus_path()]
    job = FilterJob(
        inputs=inputs,
        output_dir=Path(args.output),
        cap=args.cap,
        granularity=args.granularity,
        seed=args.seed,
        model=args.model,
        taxonomy=args.taxonomy,
        text_field=args.text_field,
        on_error=args.on_error,
        annotate=args.annotate,
        report=not args.no_report,
        report_settings=_vocabulary_settings(args),
        progress=not args.no_progress,
    )
    t0 = time.perf_counter()
    summary = job.run()
    summary["seconds"] = round(time.perf_counter() - t0, 2)
    print(job.format_summary(summary))
    return 0


def cmd_eval_models(args: argparse.Namespace) -> int:
    """Score the joint model on a labels file of the dev-set schema."""
    from fairstream.eval import evaluate_model, format_report
    from fairstream.models.runtime import JointModel
    from fairstream.taxonomy import Taxonomy

    result = evaluate_model(
        JointModel(args.model, batch_size=args.batch_size), args.labels, Taxonomy.load(args.taxonomy)
    )
    if args.json:
        result = dict(result)
        if not args.predictions:
            result.pop("predictions")
        print(json.dumps(result, indent=2))
    else:
        print(format_report(result))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Write the bias report from saved co-occurrence counts."""
    from fairstream.stats import CooccurrenceCounts, write_report

    before = CooccurrenceCounts.load(args.before)
    after = CooccurrenceCounts.load(args.after) if args.after else None
    stream_stats = json.loads(Path(args.stream_stats).read_text()) if args.stream_stats else None
    paths = write_report(
        before,
        after,
        Path(args.out),
        top_k=args.top_k,
        stream_stats=stream_stats,
        **_vocabulary_settings(args),
    )
    for p in paths.all():
        print(f"wrote {p}")
    return 0


def cmd_seegull(args: argparse.Namespace) -> int:
    """Recall@k of SeeGULL stereotypes against the bias scores of saved counts."""
    from fairstream.stats import CooccurrenceCounts, format_seegull_table, seegull_recall_table

    counts = CooccurrenceCounts.load(args.counts)
    rows = seegull_recall_table(
        counts,
        Path(args.seegull_dir),
        ks=tuple(args.k),
        version=args.version,
        multiword=args.multiword,
        **_vocabulary_settings(args),
    )
    print(json.dumps(rows, indent=2) if args.json else format_seegull_table(rows))
    return 0


def _vocabulary_settings(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "top_n": args.top_n,
        "min_word_count": args.min_word_count,
        "min_attribute_sentences": args.min_attribute_sentences,
        "min_attribute_share": args.min_attribute_share,
    }


def _vocabulary_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--top-n", type=int, default=20000, help="K of the vocabulary rule (default: %(default)s)")
    p.add_argument(
        "--min-word-count", type=int, default=3, help="words need c(w,a) >= this (default: %(default)s)"
    )
    p.add_argument(
        "--min-attribute-sentences", type=int, default=10, help="attributes with fewer sentences are left out"
    )
    p.add_argument(
        "--min-attribute-share",
        type=float,
        default=1.0,
        help="a word is in V when in the top-K of this share of the class's attributes (1.0: the paper's "
        "intersection; lower it on small corpora where the intersection is empty)",
    )


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


# -- parser -----------------------------------------------------------------------------------------
def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="JSON/TOML/YAML file of option values (command line wins)")
    p.add_argument("--taxonomy", default=None, help="taxonomy name or JSON file (default: taxonomy-v1)")
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level to stderr")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of all commands."""
    parser = argparse.ArgumentParser(
        prog="fairstream", description="Audit and rebalance social bias in pretraining text."
    )
    subs = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, func: Callable[[argparse.Namespace], int], help_: str) -> argparse.ArgumentParser:
        p = subs.add_parser(name, help=help_, description=help_)
        _common(p)
        p.set_defaults(func=func, _subparser=p)
        return p

    p = add(
        "filter",
        cmd_filter,
        "Filter document shards (default: the embedded sample corpus); write outputs, stats and a report.",
    )
    p.add_argument(
        "inputs", nargs="*", help="shard files or folders (.jsonl, .jsonl.gz, .parquet); none = sample corpus"
    )
    p.add_argument("-o", "--output", default="fairstream-out", help="output folder (default: %(default)s)")
    p.add_argument(
        "--cap",
        type=float,
        default=0.01,
        help="max kept negative-regard share per attribute (default: %(default)s)",
    )
    p.add_argument("--granularity", choices=["sentence", "document"], default="sentence")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model", default=None, help="model folder (default: shipped joint-v2)")
    p.add_argument("--text-field", default="text")
    p.add_argument("--on-error", choices=["raise", "skip"], default="raise")
    p.add_argument("--annotate", action="store_true", help="add per-document annotations to the output")
    p.add_argument("--no-report", action="store_true", help="skip the Markdown/HTML report")
    _vocabulary_options(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")

    p = add("detect", cmd_detect, "Find taxonomy keyword mentions (no models) and write them as JSON lines.")
    p.add_argument("inputs", nargs="*", help="shard files or folders; none = sample corpus")
    p.add_argument("-o", "--output", default="mentions.jsonl")
    p.add_argument("--text-field", default="text")
    p.add_argument("--min-tokens", type=int, default=16)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--on-error", choices=["raise", "skip"], default="raise")

    p = add("taxonomy", cmd_taxonomy, "Print and validate a taxonomy.")
    p.add_argument("--json", action="store_true")

    p = add(
        "eval-models", cmd_eval_models, "Evaluate the WSD + regard model on a labels file (dev-set schema)."
    )
    p.add_argument("--labels", required=True, help="JSON lines with text, keyword, gloss, wsd, regard")
    p.add_argument("--model", default=None, help="model folder (default: shipped joint-v2)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--json", action="store_true")
    p.add_argument("--predictions", action="store_true", help="with --json: include per-item predictions")

    p = add("report", cmd_report, "Write the Markdown + HTML bias report from saved co-occurrence counts.")
    p.add_argument("--before", required=True, help="counts.json of the unfiltered stream")
    p.add_argument("--after", default=None, help="counts.json of the filtered stream")
    p.add_argument("--stream-stats", default=None, help="stats.json of the stream (optional)")
    p.add_argument("-o", "--out", default="fairstream-report")
    p.add_argument("--top-k", type=int, default=10)
    _vocabulary_options(p)

    p = add(
        "seegull-recall", cmd_seegull, "Recall@k of SeeGULL stereotypes by the bias scores (paper Table 8)."
    )
    p.add_argument("--counts", required=True, help="counts.json (e.g. written by fairstream filter)")
    p.add_argument("--seegull-dir", default="../shared/data/bias/seegull")
    p.add_argument("--version", choices=["v1", "v2"], default="v2")
    p.add_argument("-k", type=int, nargs="+", default=[50, 100, 200, 300, 500])
    p.add_argument(
        "--multiword", choices=["skip", "all", "any"], default="skip", help="multi-word stereotypes"
    )
    _vocabulary_options(p)
    p.add_argument("--json", action="store_true")

    p = add(
        "annotate", cmd_annotate, "Label (sentence, keyword) pairs with an LLM (paper prompts); resumable."
    )
    p.add_argument("input", help="JSON lines with uid, text, keyword, gloss")
    p.add_argument(
        "-o", "--output", required=True, help="JSON lines output (appended; existing uids are skipped)"
    )
    p.add_argument("--backend", choices=["openai", "transformers"], default="openai")
    p.add_argument(
        "--model", required=True, help="model name (openai) or local folder / repo path (transformers)"
    )
    p.add_argument(
        "--base-url", default="http://localhost:8000/v1", help="OpenAI-compatible endpoint (openai backend)"
    )
    p.add_argument("--gguf-file", default=None, help="GGUF file name inside --model (transformers backend)")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--retries", type=int, default=3)
    p.add_argument("--no-progress", action="store_true")

    from fairstream.builders import cli_finetune

    cli_finetune.register(add)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fairstream`` command."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = _apply_config(parser, argv)
        if args.verbose:
            handler = logging.StreamHandler()
            handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
            pkg_logger = logging.getLogger("fairstream")
            pkg_logger.addHandler(handler)
            pkg_logger.setLevel(logging.INFO)
        return int(args.func(args))
    except FairStreamError as exc:
        print(f"fairstream: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fairstream: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
