"""Resume inside a shard.

A pass writes one shard's output as numbered parts of ``every`` records each (under
``<work>/parts/<shard>/``); after each part it saves a checkpoint (records consumed, the pass's
own state) atomically. A killed run leaves at most one part newer than its checkpoint: the rerun
writes that part again, byte for byte the same, since parts start at fixed record numbers. When
the shard is done the parts are joined into the final file (atomically) and removed. Part
boundaries depend only on ``every``, so the joined file is the same whatever the restarts.

Whether a rerun may resume at all (same settings, same inputs) is ``fairstream.jobs.run_folder``'s.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from fairstream.io import atomic_write, compressed_output, is_parquet_name, json_line, write_json

logger = logging.getLogger(__name__)

CHECKPOINT = "checkpoint.json"


class ShardParts:
    """The parts and the checkpoint of one shard's output in one pass (see module docstring).

    Args:
        folder: where the parts live (one folder per shard and pass).
        suffix: the parts' format, ``.jsonl`` or ``.parquet``.
    """

    def __init__(self, folder: Path, suffix: str) -> None:
        self.folder = folder
        self.suffix = suffix

    def load(self) -> dict[str, Any]:
        """The last checkpoint (``{}`` when the shard has none)."""
        path = self.folder / CHECKPOINT
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}

    def part_path(self, n: int) -> Path:
        """File of part ``n``."""
        return self.folder / f"part-{n:06d}{self.suffix}"

    def save(self, n_parts: int, state: Mapping[str, Any]) -> None:
        """Record that ``n_parts`` parts are written, with the pass's state after them."""
        write_json(self.folder / CHECKPOINT, {"parts": n_parts, **state})

    def write_part(self, n: int, rows: list[dict[str, Any]], schema: Any = None) -> None:
        """Write part ``n`` atomically (JSON lines, each a ``json_line``, or Parquet with ``schema``)."""
        path = self.part_path(n)
        if self.suffix == ".parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            with atomic_write(path, "wb") as f:
                pq.write_table(pa.Table.from_pylist(rows, schema=schema), f)
        else:
            with atomic_write(path, "wb") as f:
                for row in rows:
                    f.write(json_line(row))

    def join(self, target: Path, n_parts: int, schema: Any = None) -> None:
        """Join parts ``0..n_parts-1`` into ``target``, atomically.

        Parquet for a ``.parquet`` name, else JSON lines compressed as the name says (gzip for
        ``.gz``/``.gzip``, zstd for ``.zst``/``.zstd``, any case: ``fairstream.io.compression_of``).
        """
        parts = [self.part_path(i) for i in range(n_parts)]
        if is_parquet_name(target):
            _join_parquet(target, parts, schema)
        else:
            with atomic_write(target, "wb") as raw, compressed_output(target, raw) as out:
                for p in parts:
                    with open(p, "rb") as f:
                        shutil.copyfileobj(f, out)

    def remove(self) -> None:
        """Delete the parts and the checkpoint (the shard is done)."""
        shutil.rmtree(self.folder, ignore_errors=True)


def _join_parquet(target: Path, parts: Iterable[Path], schema: Any) -> None:
    import pyarrow.parquet as pq

    with atomic_write(target, "wb") as f:
        writer = pq.ParquetWriter(f, schema)
        for p in parts:
            table = pq.read_table(p, schema=schema)
            if table.num_rows:
                writer.write_table(table)
        writer.close()
