"""The ``fairstream`` command line.

Every command has ``--help``. Options can also come from a config file (``--config FILE``, JSON,
TOML or YAML) whose keys are the long option names (``cap``, ``granularity``, ...); options given
on the command line win over the file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from fairstream import __version__
from fairstream.core.config import FilterConfig
from fairstream.errors import FairStreamError, InvalidDocumentError, cli_interface
from fairstream.models.names import shipped_models_text

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


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse ``argv``; an unknown option is reported with the usage of its subcommand."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        args._subparser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _apply_config(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    args = _parse(parser, argv)
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
    return _parse(parser, argv)


# -- option checks: every value, from the command line or a config file, before any work ----------
def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _is_int(v: Any, least: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= least


ALLOWED: dict[str, tuple[Callable[[Any], bool], str]] = {
    "cap": (lambda v: _is_number(v) and 0 <= v <= 1, "a number in [0, 1] (1 keeps every sentence)"),
    "warmup": (lambda v: _is_int(v, 0), "a whole number >= 0"),
    "min_attribute_share": (lambda v: _is_number(v) and 0 < v <= 1, "a number in (0, 1]"),
    "seed": (lambda v: _is_int(v, 0), "a whole number >= 0"),
    "max_doc_chars": (lambda v: _is_int(v, 0), "a whole number >= 0 (0: no limit)"),
    "top_n": (lambda v: _is_int(v, 1), "a whole number >= 1"),
    "top_k": (lambda v: _is_int(v, 1), "a whole number >= 1"),
    "min_word_count": (lambda v: _is_int(v, 0), "a whole number >= 0"),
    "min_attribute_sentences": (lambda v: _is_int(v, 0), "a whole number >= 0"),
    "min_tokens": (lambda v: _is_int(v, 0), "a whole number >= 0"),
    "max_tokens": (lambda v: _is_int(v, 1), "a whole number >= 1"),
    "batch_size": (lambda v: v is None or _is_int(v, 1), "a whole number >= 1"),
    "limit": (lambda v: v is None or _is_int(v, 1), "a whole number >= 1"),
    "retries": (lambda v: _is_int(v, 0), "a whole number >= 0"),
    "k": (
        lambda v: isinstance(v, list) and bool(v) and all(_is_int(x, 1) for x in v),
        "one or more whole numbers >= 1",
    ),
    "text_field": (lambda v: isinstance(v, str) and bool(v), "a field name"),
}


def check_options(args: argparse.Namespace) -> None:
    """Reject any option value outside its allowed range, naming the flag (one line, before any work)."""
    for action in args._subparser._actions:
        rule = ALLOWED.get(action.dest)
        if rule is None or not hasattr(args, action.dest):
            continue
        ok, allowed = rule
        value = getattr(args, action.dest)
        if not ok(value):
            flag = action.option_strings[-1] if action.option_strings else action.dest
            raise FairStreamError(f"{flag} {value!r}: must be {allowed}")
    if getattr(args, "min_tokens", 0) >= getattr(args, "max_tokens", 1):
        raise FairStreamError(
            f"--min-tokens {args.min_tokens} must be less than --max-tokens {args.max_tokens}"
        )


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


def cmd_filter(args: argparse.Namespace) -> int:
    """Filter shards and write outputs, stats and a report."""
    from fairstream.filter_job import FilterJob
    from fairstream.jobs.config import JobConfig
    from fairstream.summary import format_summary

    job_config = JobConfig.from_namespace(args)
    if job_config.cap_scope == "global":
        return _filter_global(args, job_config)
    job = FilterJob(
        inputs=args.inputs,
        output_dir=Path(args.output),
        config=FilterConfig.from_namespace(args),
        annotate=args.annotate,
        report=not args.no_report,
        report_settings=_vocabulary_settings(args),
        progress=not args.no_progress,
        overwrite=job_config.overwrite,
        force_restart=job_config.force_restart,
    )
    t0 = time.perf_counter()
    summary = job.run()
    summary["seconds"] = round(time.perf_counter() - t0, 2)
    print(format_summary(summary))
    for problem in summary.get("problems", []):
        print(f"fairstream: lost: {problem}", file=sys.stderr)
    return 0


def _filter_global(args: argparse.Namespace, job_config: Any) -> int:
    """``filter --cap-scope global``: the two-pass job of ``fairstream.jobs``."""
    from fairstream.jobs import GlobalCapJob, format_job_summary

    if args.annotate:
        raise FairStreamError(
            "--annotate: with --cap-scope global the annotations are the attribute files under "
            "OUTPUT/attributes (one JSON line per document); leave --annotate out"
        )
    job = GlobalCapJob(
        args.inputs,
        Path(args.output),
        FilterConfig.from_namespace(args),
        engine=job_config.engine,
        workers=job_config.workers,
        checkpoint_every=job_config.checkpoint_every,
        annotate_only=job_config.annotate_only,
        from_annotations=job_config.from_annotations,
        ray_address=job_config.ray_address,
        progress=not args.no_progress,
        report=not args.no_report,
        report_settings=_vocabulary_settings(args),
        overwrite=job_config.overwrite,
        force_restart=job_config.force_restart,
    )
    summary = job.run()
    print(format_job_summary(summary))
    for problem in summary.get("problems", []):
        print(f"fairstream: lost: {problem}", file=sys.stderr)
    return 0


def cmd_eval_models(args: argparse.Namespace) -> int:
    """Score the joint model on a labels file of the dev-set schema."""
    from fairstream.eval import evaluate_model, format_report, to_json
    from fairstream.models.runtime import JointModel
    from fairstream.taxonomy import Taxonomy

    result = evaluate_model(
        JointModel(args.model, batch_size=args.batch_size), args.labels, Taxonomy.load(args.taxonomy)
    )
    if args.json:
        result = dict(result)
        if not args.predictions:
            result.pop("predictions")
        print(to_json(result))
    else:
        print(format_report(result))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Write the bias report from saved co-occurrence counts."""
    from fairstream.stats import CooccurrenceCounts, write_report

    counts_file = "a counts file written by fairstream filter (counts_before.json or counts_after.json)"
    before = _load_input("--before", args.before, CooccurrenceCounts.load, counts_file)
    after = _load_input("--after", args.after, CooccurrenceCounts.load, counts_file) if args.after else None
    stream_stats = (
        _load_input("--stream-stats", args.stream_stats, _read_json_object, "a stats.json file")
        if args.stream_stats
        else None
    )
    examples = (
        _load_input("--examples", args.examples, _read_json_object, "an examples.json file")
        if args.examples
        else None
    )
    paths = write_report(
        before,
        after,
        Path(args.out),
        top_k=args.top_k,
        stream_stats=stream_stats,
        examples=examples,
        **_vocabulary_settings(args),
    )
    for p in paths.all():
        print(f"wrote {p}")
    return 0


def cmd_seegull(args: argparse.Namespace) -> int:
    """Recall@k of SeeGULL stereotypes against the bias scores of saved counts."""
    from fairstream.stats import CooccurrenceCounts, format_seegull_table, seegull_recall_table

    counts = _load_input(
        "--counts", args.counts, CooccurrenceCounts.load, "a counts file written by fairstream filter"
    )
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


def _read_json_object(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"holds a JSON {type(data).__name__}, not an object")
    return data


def _load_input(flag: str, path: str, load: Callable[[Path], Any], what: str) -> Any:
    """``load(path)``, or a one-line error naming the flag, the path and the problem."""
    p = Path(path)
    if not p.is_file():
        raise FairStreamError(
            f"{flag} {p}: {'is a folder' if p.is_dir() else 'no such file'}; expected {what}"
        )
    try:
        return load(p)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        problem = str(exc).removeprefix(f"{p}: ")
        raise FairStreamError(f"{flag} {p}: not {what} ({problem})") from None


def _vocabulary_settings(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "top_n": args.top_n,
        "min_word_count": args.min_word_count,
        "min_attribute_sentences": args.min_attribute_sentences,
        "min_attribute_share": args.min_attribute_share,
    }


def _vocabulary_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--top-n",
        type=int,
        default=20000,
        help="K of the vocabulary rule: each attribute's K most frequent words (default: %(default)s)",
    )
    p.add_argument(
        "--min-word-count", type=int, default=3, help="words need c(w,a) >= this (default: %(default)s)"
    )
    p.add_argument(
        "--min-attribute-sentences",
        type=int,
        default=10,
        help="attributes with fewer sentences are left out (default: %(default)s)",
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
    p.add_argument(
        "--debug", action="store_true", help="on an error, show the Python traceback, not one line"
    )


ON_ERROR_HELP = (
    "raise: stop at the first bad record, naming file and line; skip: count and skip bad records "
    "(and the unreadable rest of a corrupt shard) and go on (default: %(default)s)"
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of all commands."""
    parser = argparse.ArgumentParser(
        prog="fairstream", description="Audit and rebalance social bias in pretraining text."
    )
    parser.add_argument("--version", action="version", version=f"fairstream {__version__}")
    subs = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, func: Callable[[argparse.Namespace], int], help_: str) -> argparse.ArgumentParser:
        p = subs.add_parser(name, help=help_, description=help_)
        _common(p)
        p.set_defaults(func=func, _subparser=p)
        return p

    p = add(
        "filter",
        cmd_filter,
        "Filter document shards; write outputs, stats and a report.",
    )
    p.add_argument(
        "inputs",
        nargs="+",
        help="shard files or folders (.jsonl, .jsonl.gz, .json.gz, .parquet; folders are searched "
        f"recursively); try the shipped sample: {sample_corpus_path()}",
    )
    p.add_argument(
        "-o",
        "--output",
        default="fairstream-out",
        help="output folder; each shard is written to data/ under its path relative to the inputs' "
        "common folder, in its own format (default: %(default)s)",
    )
    # every setting of the filter, with its help and default, from the one config object
    FilterConfig.add_arguments(p)
    # the offline job's own settings (scope of the cap, engine, workers), from its config object
    from fairstream.jobs.config import JobConfig

    JobConfig.add_arguments(p)
    p.add_argument("--annotate", action="store_true", help="add per-document annotations to the output")
    p.add_argument("--no-report", action="store_true", help="skip the Markdown/HTML report")
    _vocabulary_options(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")

    p = add("detect", cmd_detect, "Find taxonomy keyword mentions (no models) and write them as JSON lines.")
    p.add_argument("inputs", nargs="*", help="shard files or folders; none = the shipped sample corpus")
    p.add_argument(
        "-o", "--output", default="mentions.jsonl", help="JSON lines output (default: %(default)s)"
    )
    p.add_argument("--text-field", default="text", help="field that holds the text (default: %(default)s)")
    p.add_argument(
        "--min-tokens",
        type=int,
        default=16,
        help="sentences need more than this many NLTK tokens (default: %(default)s)",
    )
    p.add_argument(
        "--max-tokens",
        type=int,
        default=128,
        help="... and at most this many (default: %(default)s)",
    )
    p.add_argument("--on-error", choices=["raise", "skip"], default="raise", help=ON_ERROR_HELP)
    p.add_argument("--no-progress", action="store_true", help="no progress display")

    p = add("taxonomy", cmd_taxonomy, "Print and validate a taxonomy.")
    p.add_argument("--json", action="store_true", help="print the taxonomy as JSON")

    p = add(
        "eval-models", cmd_eval_models, "Evaluate the WSD + regard model on a labels file (dev-set schema)."
    )
    p.add_argument("--labels", required=True, help="JSON lines with text, keyword, gloss, wsd, regard")
    p.add_argument(
        "--model",
        default=None,
        help=f"model folder or shipped model name: {shipped_models_text()}",
    )
    p.add_argument(
        "--batch-size", type=int, default=8, help="pairs per model call, >= 1 (default: %(default)s)"
    )
    p.add_argument(
        "--json", action="store_true", help="print the scores as JSON (null where a score has no data)"
    )
    p.add_argument("--predictions", action="store_true", help="with --json: include per-item predictions")

    p = add("report", cmd_report, "Write the Markdown + HTML bias report from saved co-occurrence counts.")
    p.add_argument("--before", required=True, help="counts.json of the unfiltered stream")
    p.add_argument("--after", default=None, help="counts.json of the filtered stream")
    p.add_argument(
        "--stream-stats",
        default=None,
        help="stats.json of the filter run: the report's headline, cap and model (optional)",
    )
    p.add_argument(
        "--examples", default=None, help="examples.json of the filter run: dropped sentences shown (optional)"
    )
    p.add_argument("-o", "--out", default="fairstream-report", help="report folder (default: %(default)s)")
    p.add_argument(
        "--top-k", type=int, default=10, help="words shown per attribute in tables (default: %(default)s)"
    )
    _vocabulary_options(p)

    p = add(
        "seegull-recall", cmd_seegull, "Recall@k of SeeGULL stereotypes by the bias scores (paper Table 8)."
    )
    p.add_argument("--counts", required=True, help="counts.json (e.g. written by fairstream filter)")
    p.add_argument(
        "--seegull-dir",
        default="../shared/data/bias/seegull",
        help="folder of the SeeGULL CSV files (default: %(default)s)",
    )
    p.add_argument(
        "--version", choices=["v1", "v2"], default="v2", help="SeeGULL release (default: %(default)s)"
    )
    p.add_argument(
        "-k",
        type=int,
        nargs="+",
        default=[50, 100, 200, 300, 500],
        help="cut-offs k of recall@k (default: %(default)s)",
    )
    p.add_argument(
        "--multiword",
        choices=["skip", "all", "any"],
        default="skip",
        help="multi-word stereotypes: skip them, or count a hit when all / any of their words are in "
        "the top k (default: %(default)s)",
    )
    _vocabulary_options(p)
    p.add_argument("--json", action="store_true", help="print the table as JSON")

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

    from fairstream.builders import cli_finetune

    cli_finetune.register(add)

    from fairstream.builders import cli_augment

    cli_augment.register(add)

    from fairstream import bench

    bench.register(add)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fairstream`` command.

    Errors a user can act on (bad option, input or output) print one line and exit 2; ``--debug``
    shows the traceback instead.
    """
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    with _sigterm_stops():
        return _main(parser, argv, debug)


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``, a batch scheduler) arrived: stop as on Ctrl-C."""


@contextlib.contextmanager
def _sigterm_stops() -> Iterator[None]:
    """Turn SIGTERM into ``Terminated`` while a command runs, so it stops its workers and says so once."""

    def stop(signum: int, frame: Any) -> None:
        raise Terminated

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _main(parser: argparse.ArgumentParser, argv: list[str], debug: bool) -> int:
    try:
        with cli_interface():  # messages name --flags, not keyword arguments
            args = _apply_config(parser, argv)
            debug = debug or bool(args.debug)
            check_options(args)
            if args.verbose:
                handler = logging.StreamHandler()
                handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
                pkg_logger = logging.getLogger("fairstream")
                pkg_logger.addHandler(handler)
                pkg_logger.setLevel(logging.INFO)
            return int(args.func(args))
    except BrokenPipeError:  # the reader of stdout went away (`| head`): the work itself is done
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (FairStreamError, OSError) as exc:
        if debug:
            raise
        print(f"fairstream: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except Terminated:
        print("fairstream: stopped by SIGTERM", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("fairstream: interrupted", file=sys.stderr)
        return 130


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and not isinstance(exc, FairStreamError) and exc.filename:
        return f"{exc.filename}: {exc.strerror or exc}"
    return str(exc)


if __name__ == "__main__":
    sys.exit(main())
