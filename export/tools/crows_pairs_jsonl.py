"""Write the stereotypical sentences of CrowS-Pairs as JSON lines (input for the builders' README examples).

Reads ../shared/data/bias/crows_pairs/crows_pairs_anonymized.csv at run time (nothing is copied into
the repository): one record {"id": "crows-N", "text": ..., "bias_type": ...} per pair, the more
stereotypical sentence of each.

    python export/tools/crows_pairs_jsonl.py --bias-type religion --match "\\bmuslims?\\b" -o runs/builders/crows-muslim.jsonl
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

from fairstream.builders.records import write_records

DEFAULT_CSV = Path(__file__).resolve().parents[3] / "shared/data/bias/crows_pairs/crows_pairs_anonymized.csv"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--csv", default=str(DEFAULT_CSV), help="crows_pairs_anonymized.csv (default: %(default)s)"
    )
    p.add_argument("--bias-type", nargs="*", default=None, help="keep these bias types (default: all)")
    p.add_argument("--match", default=None, help="keep sentences matching this regex (case-insensitive)")
    p.add_argument("-o", "--output", required=True, help=".jsonl, .jsonl.gz or .parquet")
    args = p.parse_args(argv)
    with open(args.csv, encoding="utf-8", newline="") as f:
        rows = [r for r in csv.DictReader(f) if not args.bias_type or r["bias_type"] in args.bias_type]
    for r in rows:
        r["text"] = r["sent_more"] if r["stereo_antistereo"] == "stereo" else r["sent_less"]
    if args.match:
        rows = [r for r in rows if re.search(args.match, r["text"], re.IGNORECASE)]
    if not rows:
        print(f"no rows of bias types {args.bias_type} in {args.csv}", file=sys.stderr)
        return 2
    n = write_records(
        args.output,
        (
            {
                "id": f"crows-{r['']}",
                "text": r["text"],
                "bias_type": r["bias_type"],
            }
            for r in rows
        ),
    )
    print(f"wrote {n} records to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
