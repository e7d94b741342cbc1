from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from fairstream.errors import ShardError
from fairstream.io import atomic_write, list_shards, read_documents, read_jsonl, write_jsonl


def test_round_trip_gzip_and_plain(tmp_path: Path):
    docs = [{"id": i, "text": f"doc {i} é"} for i in range(5)]
    for name in ("a.jsonl", "b.jsonl.gz"):
        assert write_jsonl(tmp_path / name, docs) == 5
        assert list(read_documents(tmp_path / name)) == docs
    assert [p.name for p in list_shards([tmp_path])] == ["a.jsonl", "b.jsonl.gz"]


def test_corrupt_line_names_file_and_line(tmp_path: Path):
    p = tmp_path / "s.jsonl"
    p.write_text('{"text": "ok"}\n{"text": broken}\n[1, 2]\n{"text": "last"}\n')
    with pytest.raises(ShardError, match=r"s\.jsonl:2: invalid JSON"):
        list(read_jsonl(p))
    skipped: list[str] = []
    assert [d["text"] for d in read_jsonl(p, on_error="skip", skipped=skipped)] == ["ok", "last"]
    assert len(skipped) == 2 and "s.jsonl:3: expected a JSON object" in skipped[1]


def test_truncated_gzip_is_reported(tmp_path: Path):
    p = tmp_path / "t.jsonl.gz"
    with gzip.open(p, "wt") as f:
        for i in range(2000):
            f.write(json.dumps({"text": f"document number {i} " * 5}) + "\n")
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(ShardError, match=r"t\.jsonl\.gz: corrupt or truncated after line \d+"):
        list(read_jsonl(p))
    skipped: list[str] = []
    n = sum(1 for _ in read_jsonl(p, on_error="skip", skipped=skipped))
    assert 0 < n < 2000 and len(skipped) == 1


def test_invalid_utf8_in_shard(tmp_path: Path):
    p = tmp_path / "u.jsonl"
    p.write_bytes(b'{"text": "fine"}\n{"text": "bad \xff"}\n')
    with pytest.raises(ShardError, match=r"u\.jsonl:2: invalid UTF-8"):
        list(read_jsonl(p))


def test_missing_inputs(tmp_path: Path):
    with pytest.raises(ShardError, match="no such file or folder"):
        list_shards([tmp_path / "nope"])
    with pytest.raises(ShardError, match="no shards"):
        list_shards([tmp_path])


def test_atomic_write_leaves_old_file_on_failure(tmp_path: Path):
    target = tmp_path / "out.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_write(target) as f:
        f.write("half")
        raise RuntimeError("interrupted")
    assert target.read_text() == "old"
    assert list(tmp_path.iterdir()) == [target]


def test_parquet_shards_and_corrupt_parquet(tmp_path: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    docs = [{"id": str(i), "text": f"text {i}"} for i in range(10)]
    pq.write_table(pa.Table.from_pylist(docs), tmp_path / "a.parquet", row_group_size=3)
    assert list(read_documents(tmp_path / "a.parquet")) == docs
    bad = tmp_path / "b.parquet"
    bad.write_bytes((tmp_path / "a.parquet").read_bytes()[:100])
    with pytest.raises(ShardError, match=r"b\.parquet: unreadable Parquet"):
        list(read_documents(bad))
