"""``fairstream taxonomy``: print (and so validate) a taxonomy."""

from __future__ import annotations

import argparse
import json

from fairstream.cli.common import AddCommand


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


def register(add: AddCommand) -> None:
    """Add ``taxonomy`` with ``fairstream.cli.parser``'s ``add(name, func, help)``."""
    p = add("taxonomy", cmd_taxonomy, "Print and validate a taxonomy.")
    p.add_argument("--json", action="store_true", help="print the taxonomy as JSON")
