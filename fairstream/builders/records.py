"""Record I/O shared by the builders: JSONL / JSONL.gz / Parquet in and out, provenance per record.

Small and stable on purpose (other builders import it):

* ``read_records(path, text_field)`` yields dicts whose ``text_field`` is a string; a missing or
  non-string field raises ``ShardError`` naming the file, the record and the field.
* ``write_records(path, records)`` writes ``.jsonl``, ``.jsonl.gz`` or ``.parquet`` atomically.
* ``with_provenance(record, ...)`` adds a ``provenance`` object: source id, builder, builder
  version, what changed and where (character offsets into the source text).
* ``BuilderConfigError``: a bad builder argument or input list, the error of every builder.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from fairstream.errors import FairStreamError, ShardError
from fairstream.io import (
    SHARD_SUFFIXES,
    OnError,
    atomic_write,
    check_on_error,
    is_parquet_name,
    is_shard_name,
    read_documents,
    write_jsonl,
)

logger = logging.getLogger(__name__)


class BuilderConfigError(FairStreamError, ValueError):
    """A builder argument or input list is invalid; the message names it and what is allowed."""


BUILDERS_VERSION = "builders-v1"
PROVENANCE_KEY = "provenance"


def read_records(
    path: str | Path,
    text_field: str = "text",
    *,
    on_error: OnError = "raise",
    skipped: list[str] | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield the records of a ``.jsonl``/``.jsonl.gz``/``.parquet`` file with a string ``text_field``.

    Every record gets ``_index`` (1-based position in the file) so builders can name it in errors
    and provenance when it has no ``id``. With ``on_error="skip"`` records without the field are
    logged, appended to ``skipped`` and left out.
    """
    check_on_error(on_error)
    path = Path(path)
    if not is_shard_name(path.name):
        raise ShardError(f"{path}: unsupported input format; use one of {', '.join(SHARD_SUFFIXES)}")
    for i, rec in enumerate(read_documents(path, on_error=on_error, skipped=skipped), start=1):
        value = rec.get(text_field)
        if not isinstance(value, str):
            what = "missing" if value is None else f"a {type(value).__name__}, not a string"
            message = (
                f"{path}: record {i} (id {rec.get('id', '-')!r}): field {text_field!r} is {what}; "
                f"pass --text-field with the name of the text field (fields: {sorted(rec)[:10]})"
            )
            if on_error == "raise":
                raise ShardError(message)
            logger.warning("skipping: %s", message)
            if skipped is not None:
                skipped.append(message)
            continue
        rec["_index"] = i
        yield rec


def source_id(record: dict[str, Any], path: str | Path | None = None) -> str:
    """A stable id of a source record: its ``id`` if it has one, else ``file:index``."""
    if record.get("id") is not None:
        return str(record["id"])
    name = Path(path).name if path is not None else "record"
    return f"{name}:{record.get('_index', '?')}"


def with_provenance(
    record: dict[str, Any],
    *,
    source: str,
    builder: str,
    changes: Sequence[dict[str, Any]] = (),
    **extra: Any,
) -> dict[str, Any]:
    """A copy of ``record`` (without ``_index``) with a ``provenance`` object added.

    ``changes`` lists what changed and where, e.g. ``{"start", "end", "from", "to"}`` with offsets
    into the source text; ``extra`` adds builder-specific fields (``producer``, ``target`` ...).
    """
    out = {k: v for k, v in record.items() if k not in ("_index", PROVENANCE_KEY)}
    out[PROVENANCE_KEY] = {
        "source_id": source,
        "builder": builder,
        "version": BUILDERS_VERSION,
        "changes": list(changes),
        **extra,
    }
    return out


def write_records(path: str | Path, records: Iterable[dict[str, Any]]) -> int:
    """Write records as ``.jsonl``, ``.jsonl.gz`` or ``.parquet`` (atomically); returns the count."""
    path = Path(path)
    if is_parquet_name(path):
        import pyarrow as pa
        import pyarrow.parquet as pq

        rows = [{k: v for k, v in r.items() if k != "_index"} for r in records]
        try:
            table = pa.Table.from_pylist(rows)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise ShardError(
                f"{path}: records do not fit one Parquet schema ({exc}); write .jsonl instead"
            ) from exc
        with atomic_write(path, "wb") as f:
            pq.write_table(table, f)
        return len(rows)
    if not is_shard_name(path.name):
        raise ShardError(f"{path}: unsupported output format; use one of {', '.join(SHARD_SUFFIXES)}")
    return write_jsonl(path, ({k: v for k, v in r.items() if k != "_index"} for r in records))
