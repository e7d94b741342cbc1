"""The augmentation commands: ``augment``, ``swap-gender``, ``db-index`` and ``stereotype-score``.

Parsing and printing only; the work is in ``fairstream.builders.substitute``, ``.gender_swap``,
``.db_index`` and ``.stereotype``. ``register`` is called by ``fairstream.cli.parser.build_parser`` with
its ``add`` helper, so every command gets the common options (``--config``, ``--verbose``,
``--debug``) and the range checks of ``fairstream.cli.options.ALLOWED``.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fairstream.cli.common import AddCommand
from fairstream.models.names import shipped_models_text

BIAS_DIR = "../shared/data/bias"


def _io_options(p: argparse.ArgumentParser, output_help: str) -> None:
    p.add_argument("input", help="records: .jsonl, .jsonl.gz or .parquet")
    p.add_argument("-o", "--output", required=True, help=output_help)
    p.add_argument("--text-field", default="text", help="field holding the text (default: %(default)s)")
    _reading_options(p, "read at most this many records (default: all)")


def _reading_options(p: argparse.ArgumentParser, limit_help: str) -> None:
    p.add_argument("--limit", type=int, default=None, help=limit_help)
    p.add_argument(
        "--on-error",
        choices=["raise", "skip"],
        default="raise",
        help="raise: stop at a bad record, naming it; skip: count and skip it (default: %(default)s)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _records(args: argparse.Namespace, path: str | None = None) -> Iterator[dict[str, Any]]:
    from tqdm import tqdm

    from fairstream.builders.records import read_records

    path = path or args.input
    recs = read_records(path, args.text_field, on_error=args.on_error, skipped=args._skipped)
    if args.limit is not None:
        recs = itertools.islice(recs, args.limit)
    yield from tqdm(recs, desc=Path(path).name, unit="rec", disable=args.no_progress)


def _finish(args: argparse.Namespace, n: int, stats: dict[str, Any]) -> None:
    if args._skipped:
        stats["skipped_bad_records"] = len(args._skipped)
    print(json.dumps(stats, indent=2, ensure_ascii=False))
    print(f"wrote {n} records to {args.output}")


# -- augment ----------------------------------------------------------------------------------------
def cmd_augment(args: argparse.Namespace) -> int:
    """Biaser substitution: balanced copies of every entry that mentions a biaser as people."""
    from fairstream.builders.producers import BiasProducer
    from fairstream.builders.records import BuilderConfigError, write_records
    from fairstream.builders.substitute import BiaserSubstitution
    from fairstream.taxonomy import Taxonomy

    if (args.producer is None) == (args.biasers is None):
        raise BuilderConfigError("give exactly one of --producer CLASS or --biasers FILE")
    taxonomy = Taxonomy.load(args.taxonomy)
    producer = (
        BiasProducer.from_taxonomy(taxonomy, args.producer)
        if args.producer is not None
        else BiasProducer.from_file(args.biasers, taxonomy)
    )
    backend = None
    if args.morphism == "upshift":
        if args.llm_model is None:
            raise BuilderConfigError(
                "--morphism upshift needs --llm-model (and --llm-backend, --llm-base-url)"
            )
        from fairstream.llm import make_backend

        backend = make_backend(
            args.llm_backend,
            args.llm_model,
            base_url=args.llm_base_url if args.llm_backend == "openai" else None,
            gguf_file=args.llm_gguf_file,
            max_new_tokens=args.llm_max_new_tokens,
        )
    model = None
    if not args.no_wsd:
        from fairstream.models.runtime import JointModel

        model = JointModel(args.model, batch_size=args.batch_size)
    builder = BiaserSubstitution(
        producer,
        model=model,
        wsd=not args.no_wsd,
        morphism=args.morphism,
        backend=backend,
        summary_ratio=args.summary_ratio,
        include_originals=not args.copies_only,
    )
    args._skipped = []
    n = write_records(args.output, builder.augment(_records(args), args.text_field, path=args.input))
    stats = {
        "producer": producer.name,
        "biasers": [b.singular for b in producer.biasers],
        **({"left_out_dispreferred": list(producer.left_out)} if producer.left_out else {}),
        **builder.stats.to_dict(),
    }
    _finish(args, n, stats)
    return 0


# -- swap-gender ------------------------------------------------------------------------------------
def cmd_swap_gender(args: argparse.Namespace) -> int:
    """Counterfactual gender swaps of every record."""
    from fairstream.builders.gender_swap import GenderSwapper
    from fairstream.builders.records import write_records
    from fairstream.io import write_json

    swapper = GenderSwapper(winobias_dir=args.winobias_dir, swap_names=not args.no_names)
    args._skipped = []
    n = write_records(args.output, swapper.swap(_records(args), args.text_field, path=args.input))
    stats = swapper.stats.to_dict()
    if args.report:
        write_json(args.report, stats)
    shown = dict(stats)
    shown["examples_left_alone"] = stats["examples_left_alone"][:10]
    shown["examples_uncertain"] = stats["examples_uncertain"][:10]
    _finish(args, n, shown)
    return 0


# -- db-index ---------------------------------------------------------------------------------------
def cmd_db_index(args: argparse.Namespace) -> int:
    """db-index of one or more datasets against the same comparison sample."""
    from fairstream.builders.db_index import SentenceEncoder, db_index, load_comparison
    from fairstream.builders.records import BuilderConfigError
    from fairstream.io import write_json

    if not 2 <= args.k_min <= args.k_max:
        raise BuilderConfigError(f"--k-min {args.k_min} / --k-max {args.k_max}: need 2 <= k-min <= k-max")
    if args.n_comparison < 1:
        raise BuilderConfigError(f"--n-comparison {args.n_comparison}: must be a whole number >= 1")
    comparison = load_comparison(args.comparison, args.bias_dir, args.bias_type)
    encoder = SentenceEncoder(args.encoder, batch_size=args.batch_size, device=args.device)
    results = {}
    args._skipped = []
    for path in args.inputs:
        texts = [r[args.text_field] for r in _records(args, path)]
        res = db_index(
            texts,
            comparison,
            encoder,
            ks=range(args.k_min, args.k_max + 1),
            n_comparison=args.n_comparison,
            seed=args.seed,
            progress=not args.no_progress,
        )
        results[path] = res.to_dict()
        print(
            f"{path}: db-index {res.db_index:.4f} (spread {res.spread:.4f} over {res.n_comparison} comparison "
            f"entries; size-weighted {res.weighted:.4f}), k={res.k}, {res.n_entries} entries"
        )
    out = {"comparison": args.comparison, "bias_types": args.bias_type, "seed": args.seed, "results": results}
    if args.output:
        write_json(args.output, out)
        print(f"wrote {args.output}")
    return 0


# -- stereotype-score -------------------------------------------------------------------------------
def cmd_stereotype_score(args: argparse.Namespace) -> int:
    """Stereotype score, ss / lms / ICAT and (with a reference set) mb-index of a causal LM."""
    from fairstream.builders.db_index import SentenceEncoder
    from fairstream.builders.records import BuilderConfigError, read_records, write_records
    from fairstream.builders.stereotype import CausalLM, load_intersentence, score_model
    from fairstream.io import write_json

    if args.dataset_size is not None and args.reference is None:
        raise BuilderConfigError("--dataset-size is used for mb-index, which also needs --reference FILE")
    items = load_intersentence(args.stereoset, args.bias_type, args.limit)
    lm = CausalLM(
        args.model,
        gguf_file=args.gguf_file,
        device=args.device,
        max_new_tokens=args.max_new_tokens,
        batch_size=args.batch_size,
    )
    reference = None
    if args.reference is not None:
        reference = [r[args.text_field] for r in read_records(args.reference, args.text_field)]
        if args.reference_limit is not None:
            reference = reference[: args.reference_limit]
    result = score_model(
        lm,
        SentenceEncoder(args.encoder, device=args.device),
        items,
        reference_texts=reference,
        dataset_size=args.dataset_size,
        progress=not args.no_progress,
    )
    if args.output:
        write_records(args.output, result.records)
        print(f"wrote {len(result.records)} item records to {args.output}")
    if args.summary:
        write_json(args.summary, result.summary)
        print(f"wrote {args.summary}")
    print(json.dumps(result.summary, indent=2))
    return 0


# -- parsers ----------------------------------------------------------------------------------------
def register(add: AddCommand) -> None:
    """Add the four augmentation commands with ``cli.build_parser``'s ``add`` helper."""
    p = add(
        "augment",
        cmd_augment,
        "Biaser substitution: |b|-1 balanced copies of each record that mentions a biaser as people.",
    )
    _io_options(p, "augmented records (.jsonl, .jsonl.gz, .parquet): originals and copies with provenance")
    p.add_argument(
        "--producer",
        default=None,
        help="a class of --taxonomy as the bias producer (e.g. religion; with --taxonomy taxonomy-v2 also age, "
        "sexual orientation under gender/sexuality, immigration status, political ideology, ...); its "
        "dispreferred keywords are left out",
    )
    p.add_argument(
        "--biasers", default=None, help="a biasers file: lines 'singular[, plural]' or JSON {name, biasers}"
    )
    p.add_argument(
        "--model",
        default=None,
        help=f"WSD model folder or shipped model name: {shipped_models_text()}",
    )
    p.add_argument("--no-wsd", action="store_true", help="swap every keyword match (no person-sense check)")
    p.add_argument("--batch-size", type=int, default=32, help="records per WSD batch (default: %(default)s)")
    p.add_argument(
        "--morphism",
        choices=["none", "downshift", "upshift"],
        default="none",
        help="make copies less repetitive: downshift = extractive summary, upshift = LLM paraphrase",
    )
    p.add_argument(
        "--summary-ratio", type=float, default=0.5, help="share of sentences kept by downshift (default: 0.5)"
    )
    p.add_argument("--copies-only", action="store_true", help="write the copies only, not the originals")
    p.add_argument(
        "--llm-backend", choices=["openai", "transformers"], default="openai", help="upshift's LLM"
    )
    p.add_argument("--llm-model", default=None, help="upshift: model name (openai) or local folder")
    p.add_argument(
        "--llm-base-url", default="http://localhost:8000/v1", help="upshift: OpenAI-compatible URL"
    )
    p.add_argument("--llm-gguf-file", default=None, help="upshift: GGUF file inside --llm-model")
    p.add_argument("--llm-max-new-tokens", type=int, default=256, help="upshift: paraphrase length bound")

    p = add("swap-gender", cmd_swap_gender, "Counterfactual gender swaps of words, pronouns and names.")
    _io_options(p, "swapped records (.jsonl, .jsonl.gz, .parquet) with provenance")
    p.add_argument(
        "--winobias-dir",
        default=f"{BIAS_DIR}/winobias",
        help="folder with generalized_swaps.txt and extra_gendered_words.txt (default: %(default)s)",
    )
    p.add_argument("--no-names", action="store_true", help="do not swap given names")
    p.add_argument("--report", default=None, help="write all counts and examples of cases left alone (JSON)")

    p = add(
        "db-index",
        cmd_db_index,
        "db-index: mean cosine similarity of a dataset's k-means clusters to known-biased text.",
    )
    p.add_argument(
        "inputs", nargs="+", help="one or more record files, scored against the same comparison sample"
    )
    p.add_argument("-o", "--output", default=None, help="write the results (JSON)")
    p.add_argument("--text-field", default="text", help="field holding the text (default: %(default)s)")
    p.add_argument(
        "--comparison",
        default="stereoset",
        help="known-biased texts: stereoset, crows-pairs, both, or a .txt/.jsonl file (default: %(default)s)",
    )
    p.add_argument(
        "--bias-dir", default=BIAS_DIR, help="folder of StereoSet and CrowS-Pairs (default: %(default)s)"
    )
    p.add_argument("--bias-type", nargs="+", default=None, help="only comparison texts of these bias types")
    p.add_argument("--encoder", default=None, help="sentence encoder folder (default: the MiniLM package)")
    p.add_argument("--k-min", type=int, default=2, help="smallest k tried (default: %(default)s)")
    p.add_argument("--k-max", type=int, default=10, help="largest k tried (default: %(default)s)")
    p.add_argument("--n-comparison", type=int, default=200, help="comparison entries averaged (default: 200)")
    p.add_argument("--seed", type=int, default=0, help="seed of k-means and sampling (default: %(default)s)")
    p.add_argument(
        "--batch-size", type=int, default=32, help="texts per encoder batch (default: %(default)s)"
    )
    p.add_argument("--device", default="cpu", help="torch device (default: %(default)s)")
    _reading_options(p, "read at most this many records per input")

    p = add(
        "stereotype-score",
        cmd_stereotype_score,
        "Stereotype score, StereoSet ss/lms/ICAT and mb-index of a local causal LM.",
    )
    p.add_argument("--model", required=True, help="local transformers causal LM folder")
    p.add_argument("--gguf-file", default=None, help="GGUF file name inside --model")
    p.add_argument(
        "--stereoset",
        default=f"{BIAS_DIR}/stereoset/dev.json.gz",
        help="StereoSet dev.json.gz (default: %(default)s)",
    )
    p.add_argument("--bias-type", nargs="+", default=None, help="only items of these bias types")
    p.add_argument(
        "--limit", type=int, default=None, help="score at most this many items (default: all 2,123)"
    )
    p.add_argument("--encoder", default=None, help="sentence encoder folder (default: the MiniLM package)")
    p.add_argument(
        "--max-new-tokens", type=int, default=32, help="continuation length (default: %(default)s)"
    )
    p.add_argument("--batch-size", type=int, default=8, help="prompts per generation batch (default: 8)")
    p.add_argument("--device", default="cpu", help="torch device (default: %(default)s)")
    p.add_argument("--reference", default=None, help="records for perplexity (mb-index)")
    p.add_argument("--reference-limit", type=int, default=None, help="use the first N reference records")
    p.add_argument("--text-field", default="text", help="text field of --reference (default: %(default)s)")
    p.add_argument("--dataset-size", type=int, default=None, help="fine-tuning dataset size, for mb-index")
    p.add_argument("-o", "--output", default=None, help="per-item records (.jsonl / .parquet)")
    p.add_argument("--summary", default=None, help="write the summary (JSON)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
