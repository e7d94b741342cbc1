from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from fairstream.errors import OutputError, ShardError
from fairstream.io import (
    atomic_write,
    iter_records,
    list_shards,
    read_documents,
    read_jsonl,
    relative_names,
    remove_temp_files,
    write_documents,
    write_json,
    write_jsonl,
)


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
    # the loss is one error that names the file and says how much was read, not a silent tail
    assert skipped[0].reason == "unreadable-shard"  # type: ignore[attr-defined]
    assert f"{n} documents were read, the rest of the file is lost" in skipped[0] and str(p) in skipped[0]


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


def test_write_failures_name_the_path(tmp_path: Path, monkeypatch):
    import errno

    target = tmp_path / "out.jsonl.gz"

    def disk_full(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(gzip.GzipFile, "write", disk_full)
    with pytest.raises(OutputError, match=r"out\.jsonl\.gz: cannot write \(No space left on device\)"):
        write_jsonl(target, [{"text": "x"}])
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind
    # an error of the records themselves passes unchanged
    with pytest.raises(ShardError, match="boom"):
        write_jsonl(target, _failing())
    (tmp_path / "sub").mkdir()
    with pytest.raises(OutputError, match="is a folder"):
        write_json(tmp_path / "sub", {})
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OutputError, match=r"file/x\.json: cannot write"):
        write_json(blocker / "x.json", {})


def _failing():
    yield {"text": "ok"}
    raise ShardError("boom")


def test_remove_temp_files(tmp_path: Path):
    (tmp_path / "data" / "a").mkdir(parents=True)
    left = [tmp_path / "data" / "a" / ".000.jsonl.gz.k3j2.tmp", tmp_path / ".stats.json.x1.tmp"]
    for p in left:
        p.write_text("half")
    keep = tmp_path / "data" / "a" / "000.jsonl.gz"
    keep.write_text("done")
    assert sorted(remove_temp_files(tmp_path)) == sorted(left)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == [keep]


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
    # with on_error="skip" a corrupt Parquet is counted like a corrupt jsonl, not fatal
    skipped: list[str] = []
    assert list(read_documents(bad, on_error="skip", skipped=skipped)) == []
    assert len(skipped) == 1 and skipped[0].reason == "unreadable-shard"  # type: ignore[attr-defined]
    assert "0 documents were read" in skipped[0]
    # rows carry their 1-based row number, as jsonl records carry their line
    assert [n for n, _ in iter_records(tmp_path / "a.parquet")] == list(range(1, 11))
    write_documents(tmp_path / "out" / "a.parquet", docs)
    assert list(read_documents(tmp_path / "out" / "a.parquet")) == docs


def test_jsonl_records_carry_their_line(tmp_path: Path):
    p = tmp_path / "s.jsonl"
    p.write_text('{"text": "a"}\n\n{"text": broken}\n{"text": "b"}\n')
    assert [(n, d["text"]) for n, d in iter_records(p, on_error="skip")] == [(1, "a"), (4, "b")]


def test_relative_names_never_collide(tmp_path: Path):
    for rel in ("a/000.jsonl.gz", "b/000.jsonl.gz", "x.jsonl", "x.parquet", "x.jsonl.gz"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    shards = list_shards([tmp_path])
    names = [str(n) for n in relative_names(shards)]
    assert names == ["a/000.jsonl.gz", "b/000.jsonl.gz", "x.jsonl", "x.jsonl.gz", "x.parquet"]
    assert [str(n) for n in relative_names([tmp_path / "a" / "000.jsonl.gz"])] == ["000.jsonl.gz"]
    # the same file named twice (directly and through its folder) is read once
    assert list_shards([tmp_path / "x.jsonl", tmp_path]) == [tmp_path / "x.jsonl", *shards[:2], *shards[3:]]
