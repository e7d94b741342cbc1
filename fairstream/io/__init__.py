"""Finding and reading document shards, and writing outputs atomically.

``find_shards`` expands input files and folders into the shards to read, following symlinked
folders and files, and lists every thing under an input folder it does not read with the reason.
Shards are JSON lines (plain, gzip or zstd, chosen by the name's suffix, matched
case-insensitively) or Parquet. ``iter_records`` yields ``(line, record)`` pairs (the 1-based line
of a JSON-lines file, the 1-based row of a Parquet file) and raises ``ShardError`` naming the file
and the line for corrupt or truncated input; with ``on_error="skip"`` bad lines are counted
instead, and a shard that cannot be read to its end is one error that says how many documents
were read before it (``jsonl_rows`` and ``parquet_rows`` hold these messages for every reader).
Writers write to a temporary file in the target folder and ``os.replace`` it, so an interrupted
run never leaves a half-written output behind; a write that fails (no permission, disk full)
raises ``OutputError`` naming the path.

The package's modules: ``shards`` (formats, finding shards), ``readers``, ``writers`` and
``sample`` (the shipped sample corpus); every name is importable from ``fairstream.io``.
"""

from fairstream.io.readers import (
    PARQUET_BATCH_ROWS,
    BadRecord,
    Skipped,
    iter_records,
    jsonl_rows,
    open_shard,
    parquet_rows,
    read_documents,
    read_jsonl,
    read_parquet,
)
from fairstream.io.sample import SAMPLE_CORPUS, sample_corpus_path
from fairstream.io.shards import (
    ON_ERROR_VALUES,
    RUN_MARKER_FILES,
    SHARD_SUFFIXES,
    ZSTD_FIX,
    OnError,
    ShardListing,
    check_on_error,
    compression_of,
    find_shards,
    is_parquet_name,
    is_shard_name,
    list_shards,
    relative_names,
)
from fairstream.io.writers import (
    TEMP_SUFFIX,
    atomic_write,
    compressed_output,
    json_line,
    remove_temp_files,
    write_documents,
    write_json,
    write_jsonl,
    write_parquet,
)

__all__ = [
    "ON_ERROR_VALUES",
    "PARQUET_BATCH_ROWS",
    "RUN_MARKER_FILES",
    "SAMPLE_CORPUS",
    "SHARD_SUFFIXES",
    "TEMP_SUFFIX",
    "ZSTD_FIX",
    "BadRecord",
    "OnError",
    "ShardListing",
    "Skipped",
    "atomic_write",
    "check_on_error",
    "compressed_output",
    "compression_of",
    "find_shards",
    "is_parquet_name",
    "is_shard_name",
    "iter_records",
    "json_line",
    "jsonl_rows",
    "list_shards",
    "open_shard",
    "parquet_rows",
    "read_documents",
    "read_jsonl",
    "read_parquet",
    "relative_names",
    "remove_temp_files",
    "sample_corpus_path",
    "write_documents",
    "write_json",
    "write_jsonl",
    "write_parquet",
]
