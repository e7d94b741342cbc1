"""``fairstream eval-models``: score the joint model on a labels file of the dev-set schema."""

from __future__ import annotations

import argparse

from fairstream.cli.common import AddCommand, filter_config_options
from fairstream.models.names import shipped_models_text


def cmd_eval_models(args: argparse.Namespace) -> int:
    """Score the joint model on a labels file of the dev-set schema."""
    from fairstream.eval import evaluate_model, format_report, to_json
    from fairstream.models.runtime import DEFAULT_BATCH_SIZE, JointModel
    from fairstream.taxonomy import Taxonomy

    batch_size = DEFAULT_BATCH_SIZE if args.batch_size is None else args.batch_size
    result = evaluate_model(
        JointModel(args.model, batch_size=batch_size), args.labels, Taxonomy.load(args.taxonomy)
    )
    if args.json:
        result = dict(result)
        if not args.predictions:
            result.pop("predictions")
        print(to_json(result))
    else:
        print(format_report(result))
    return 0


def register(add: AddCommand) -> None:
    """Add ``eval-models`` with ``fairstream.cli.parser``'s ``add(name, func, help)``."""
    p = add(
        "eval-models", cmd_eval_models, "Evaluate the WSD + regard model on a labels file (dev-set schema)."
    )
    p.add_argument("--labels", required=True, help="JSON lines with text, keyword, gloss, wsd, regard")
    # the filter's own --model and --batch-size (this command runs the model on CPU: batch size 8 by default)
    filter_config_options(
        p, ("model", "batch_size"), help_suffix={"model": f"or a shipped model name: {shipped_models_text()}"}
    )
    p.add_argument(
        "--json", action="store_true", help="print the scores as JSON (null where a score has no data)"
    )
    p.add_argument("--predictions", action="store_true", help="with --json: include per-item predictions")
