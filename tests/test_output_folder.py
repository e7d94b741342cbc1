"""An output folder can't be corrupted: resumes check everything, one writer, no orphans, no clobbering.

Real shards of the shared web corpus (three gzip shards of eight short documents, half of them with
words around which text is often negative, so the cap has work), the shipped model, the real CLI.
Each test counts documents in and out.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from fairstream.cli import main
from tests.test_jobs import corpus_docs

REPO = Path(__file__).resolve().parents[1]
# fairstream.jobs.run_folder.LOCK_FILE, spelled out: the tests name the contract
LOCK_FILE = ".fairstream.lock"
PER_SHARD = 8
QUIET = ["--no-report", "--no-progress"]
STRICT = ["--cap", "0.01", "--warmup", "0"]  # the cap drops from the first sentence: outputs differ by cap


@pytest.fixture(scope="module")
def docs() -> list[dict[str, Any]]:
    return corpus_docs(3 * PER_SHARD, cue_share=0.5)


def write_shards(folder: Path, docs: list[dict[str, Any]], *, gz: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(len(docs) // PER_SHARD):
        part = docs[i * PER_SHARD : (i + 1) * PER_SHARD]
        path = folder / (f"{i:03d}.jsonl" + (".gz" if gz else ""))
        with (gzip.open if gz else open)(path, "wt", encoding="utf-8") as f:  # type: ignore[operator]
            f.writelines(json.dumps(d) + "\n" for d in part)
    return folder


@pytest.fixture
def shards(docs: list[dict[str, Any]], tmp_path: Path) -> Path:
    return write_shards(tmp_path / "in", docs)


def cli(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("fairstream: error: "), err
    return lines[0]


def data_files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted((out / "data").rglob("*")) if p.is_file()}


def docs_out(out: Path) -> int:
    n = 0
    for p in (out / "data").rglob("*.jsonl*"):
        with (gzip.open if p.name.endswith(".gz") else open)(p, "rt", encoding="utf-8") as f:  # type: ignore[operator]
            n += sum(1 for line in f if line.strip())
    return n


def stream_counts(out: Path) -> dict[str, int]:
    """Documents in/out/dropped/skipped of ``stats.json``, checked to add up."""
    stats = json.loads((out / "stats.json").read_text())
    c = stats["counters"]
    skipped = sum(n for r, n in stats["skipped"].items() if r != "unreadable-shard")
    counts = {
        "in": c["docs_in"],
        "out": c["docs_out"],
        "dropped": c.get("docs_dropped", 0),
        "skipped": skipped,
    }
    assert counts["in"] == counts["out"] + counts["dropped"] + counts["skipped"], counts
    assert counts["out"] == docs_out(out)
    return counts


def test_an_interrupted_run_resumed_with_other_caps_is_refused_then_resumes_exactly(
    shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    clean, out = tmp_path / "clean", tmp_path / "out"
    assert cli(capsys, "filter", shards, "-o", clean, *STRICT, *QUIET)[0] == 0
    import fairstream.filter_job as filter_job

    real_write = filter_job.write_documents

    def interrupted_at_the_second_shard(path: Any, records: Any, **kw: Any) -> int:
        if Path(path).name.startswith("001"):
            raise KeyboardInterrupt
        return real_write(path, records, **kw)

    monkeypatch.setattr(filter_job, "write_documents", interrupted_at_the_second_shard)
    rc, _, err = cli(capsys, "filter", shards, "-o", out, *STRICT, *QUIET)
    assert rc == 130 and err.strip() == "fairstream: interrupted"
    monkeypatch.undo()
    assert sorted(data_files(out)) == ["data/000.jsonl.gz"]
    rc, _, err = cli(capsys, "filter", shards, "-o", out, *STRICT, *QUIET, "--caps", "race/ethnicity=1")
    assert rc == 2
    assert "--caps was {}, now {'race/ethnicity': 1.0}" in one_line(err)
    assert sorted(data_files(out)) == ["data/000.jsonl.gz"]  # nothing touched
    assert cli(capsys, "filter", shards, "-o", out, *STRICT, *QUIET)[0] == 0
    assert data_files(out) == data_files(clean)
    counts = stream_counts(out)
    assert counts == stream_counts(clean) and counts["in"] == 3 * PER_SHARD
    # a finished run asked for another text field, min-tokens or max-doc-chars is refused as well
    for flag, value in (("--text-field", "body"), ("--min-tokens", "3"), ("--max-doc-chars", "900")):
        rc, _, err = cli(capsys, "filter", shards, "-o", out, *STRICT, *QUIET, flag, value)
        assert rc == 2 and f"{flag} was " in one_line(err)
    assert data_files(out) == data_files(clean)


@pytest.mark.parametrize("scope", ["stream", "global"])
def test_a_changed_input_is_refused_and_the_path_spelling_does_not_matter(
    scope: str,
    shards: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = tmp_path / "out"
    args = [*STRICT, *QUIET, "--cap-scope", scope] + (["--workers", "1"] if scope == "global" else [])
    monkeypatch.chdir(tmp_path)
    assert cli(capsys, "filter", "in/", "-o", out, *args)[0] == 0
    before = data_files(out)
    assert docs_out(out) <= 3 * PER_SHARD
    # the same inputs spelled as an absolute path: the finished run is found, nothing redone
    rc, printed, _ = cli(capsys, "filter", shards.resolve(), "-o", out, *args)
    assert rc == 0 and data_files(out) == before
    n = 3 * PER_SHARD
    assert (f"documents: {n} in" if scope == "stream" else f"3 shards, {n} documents") in printed
    # a shard replaced by a two-document file
    small = tmp_path / "small.jsonl.gz"
    with gzip.open(small, "wt", encoding="utf-8") as f:
        f.write(
            json.dumps({"id": "x1", "text": "one"}) + "\n" + json.dumps({"id": "x2", "text": "two"}) + "\n"
        )
    os.replace(small, shards / "001.jsonl.gz")
    rc, _, err = cli(capsys, "filter", "in/", "-o", out, *args)
    assert rc == 2 and "input 001.jsonl.gz changed" in one_line(err) and "--force-restart" in err
    assert data_files(out) == before
    # started over on purpose: the new shard's two documents are read
    assert cli(capsys, "filter", "in/", "-o", out, *args, "--force-restart")[0] == 0
    if scope == "stream":
        assert stream_counts(out)["in"] == 2 * PER_SHARD + 2
    else:
        summary = json.loads((out / "stats.json").read_text())
        c = summary["counts"]
        assert summary["documents"] == 2 * PER_SHARD + 2 == c["kept"] + c["dropped"] + c["skipped"]


def test_a_second_run_on_a_folder_in_use_is_refused_and_touches_nothing(
    shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    first = subprocess.Popen(
        [sys.executable, "-m", "fairstream", "filter", str(shards), "-o", str(out), *STRICT, *QUIET],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lock = out / LOCK_FILE
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and first.poll() is None:
        if (lock.is_file() and lock.read_text().strip()) or (out / "data").is_dir():
            break
        time.sleep(0.02)
    assert first.poll() is None, "the first run ended before the second could start"
    planted = out / ".a-writer's-temporary.jsonl.tmp"  # what the second run used to delete
    planted.write_text("mine")
    rc, _, err = cli(capsys, "filter", shards, "-o", out, *STRICT, *QUIET)
    assert rc == 2
    assert f"in use by another fairstream run (pid {first.pid} on " in one_line(err)
    assert planted.read_text() == "mine"
    # a second run with other settings is refused the same way, before any settings are compared
    rc, _, err = cli(capsys, "filter", shards, "-o", out, "--cap", "0.5", *QUIET)
    assert rc == 2 and "in use by another fairstream run" in one_line(err)
    _, first_err = first.communicate(timeout=300)
    assert first.returncode == 0, first_err
    assert stream_counts(out)["in"] == 3 * PER_SHARD
    assert lock.read_text() == ""  # released cleanly


def test_a_lock_left_by_a_dead_run_is_taken_over(
    shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    stale = {"pid": int(dead.stdout), "host": "gone", "started": "2026-01-01 00:00:00 UTC"}
    (out / LOCK_FILE).write_text(json.dumps(stale))
    rc, _, err = cli(capsys, "filter", shards, "-o", out, *STRICT, *QUIET, "-v")
    assert rc == 0
    assert f"took over the lock of pid {stale['pid']} on gone" in err
    assert stream_counts(out)["in"] == 3 * PER_SHARD


def test_the_lock_names_its_holder_in_python_too(tmp_path: Path) -> None:
    from fairstream.errors import OutputError
    from fairstream.jobs.run_folder import MANIFEST_FILE, FolderLock, RunFolder

    held = FolderLock(tmp_path)
    held.acquire()
    try:
        busy = rf"in use by another fairstream run \(pid {os.getpid()} on "
        with (
            pytest.raises(OutputError, match=busy),
            RunFolder(tmp_path).claim({"scope": "stream", "settings": {}, "inputs": []}),
        ):
            pass
    finally:
        held.release()
    assert not (tmp_path / MANIFEST_FILE).exists()


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pids: set[int]) -> set[int]:
    out = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.add(pid)
    return out


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process tree from /proc (Linux)")
@pytest.mark.parametrize("how", ["SIGTERM to the parent", "SIGKILL to the parent", "Ctrl-C to the group"])
def test_stopping_a_global_run_stops_every_worker_and_the_rerun_is_exact(
    how: str, docs: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shards = write_shards(tmp_path / "in", docs[: 2 * PER_SHARD])
    out, clean = tmp_path / "out", tmp_path / "clean"
    args = [
        "filter",
        str(shards),
        "-o",
        str(out),
        "--cap-scope",
        "global",
        "--checkpoint-every",
        "1",
        *STRICT,
        *QUIET,
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "fairstream", *args, "--workers", "2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a shell gives a job
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and proc.poll() is None:
        if list((out / "_parts" / "annotate").rglob("checkpoint.json")):
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be stopped"
    workers = descendants(proc.pid)
    assert len(workers) >= 2, workers
    if how == "Ctrl-C to the group":
        os.killpg(proc.pid, signal.SIGINT)
    else:
        os.kill(proc.pid, signal.SIGTERM if how.startswith("SIGTERM") else signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    deadline = time.monotonic() + 10
    while alive(workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(workers), f"left running after {how}: {alive(workers)}"
    if how != "SIGKILL to the parent":
        expected = "fairstream: interrupted" if how.startswith("Ctrl-C") else "fairstream: stopped by SIGTERM"
        assert [line for line in err.splitlines() if line.strip()] == [expected], err
    assert cli(capsys, *args, "--workers", "2")[0] == 0
    assert cli(capsys, *args[:3], str(clean), *args[4:], "--workers", "1")[0] == 0
    assert data_files(out) == data_files(clean)
    summary = json.loads((out / "stats.json").read_text())
    c = summary["counts"]
    assert summary["documents"] == 2 * PER_SHARD == c["kept"] + c["dropped"] + c["skipped"]


def test_a_folder_that_is_not_a_run_is_refused_untouched_unless_overwrite(
    shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "someone-elses"
    (out / "data").mkdir(parents=True)
    (out / "data" / "a.jsonl").write_text('{"text": "theirs"}\n')
    (out / "stats.json").write_text('{"theirs": true}\n')
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    rc, _, err = cli(capsys, "filter", shards, "-o", out, *STRICT, *QUIET)
    assert rc == 2 and "not a fairstream output folder" in one_line(err) and "--overwrite" in err
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert cli(capsys, "filter", shards, "-o", out, *STRICT, *QUIET, "--overwrite")[0] == 0
    assert sorted(data_files(out)) == ["data/000.jsonl.gz", "data/001.jsonl.gz", "data/002.jsonl.gz"]
    assert "theirs" not in (out / "stats.json").read_text()
    assert stream_counts(out)["in"] == 3 * PER_SHARD


@pytest.mark.parametrize("scope", ["stream", "global"])
def test_outputs_under_the_inputs_are_never_read_as_inputs(
    scope: str, shards: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*STRICT, *QUIET, "--cap-scope", scope] + (["--workers", "1"] if scope == "global" else [])
    for name in ("out", "out2"):  # the second run finds the first's outputs under its input folder
        rc, printed, _ = cli(capsys, "filter", shards, "-o", shards / name, *args)
        assert rc == 0
        stats = json.loads((shards / name / "stats.json").read_text())
        n_in = stats["counters"]["docs_in"] if scope == "stream" else stats["documents"]
        assert n_in == 3 * PER_SHARD
    assert sorted(data_files(shards / "out2")) == [
        "data/000.jsonl.gz",
        "data/001.jsonl.gz",
        "data/002.jsonl.gz",
    ]
    assert "out: a fairstream output folder" in printed  # the summary names what it did not read
    # an output folder that holds the inputs is refused before anything is written
    rc, _, err = cli(capsys, "filter", shards, "-o", shards.parent, *args)
    assert rc == 2 and "holds the input" in one_line(err)


def test_an_unknown_caps_key_is_one_line_naming_the_nearest(
    shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    rc, _, err = cli(capsys, "filter", shards, "-o", out, "--caps", "race/ethncity=0.1", *QUIET)
    assert rc == 2 and "'race/ethncity'" in one_line(err) and "did you mean race/ethnicity" in err
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"caps": {"muslm": 0.1}}))
    for scope in ("stream", "global"):
        rc, _, err = cli(
            capsys, "filter", shards, "-o", out, "--config", config, "--cap-scope", scope, *QUIET
        )
        assert rc == 2 and "did you mean muslim" in one_line(err)
    assert not out.exists()


LIMITED = """
import resource, sys
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), int(sys.argv[1])))
from fairstream.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("scope", ["stream", "global"])
def test_a_failed_write_names_the_file_and_the_pass_and_the_rerun_loses_nothing(
    scope: str, docs: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file-size limit (RLIMIT_FSIZE) stands in for a full disk: the kernel fails the write the same way."""
    shards = write_shards(tmp_path / "in", docs, gz=False)
    out, clean = tmp_path / "out", tmp_path / "clean"
    args = ["filter", str(shards), *STRICT, *QUIET, "--cap-scope", scope]
    args += ["--workers", "1"] if scope == "global" else []
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    limit = 4000  # above the manifest, below a shard's output
    assert max(p.stat().st_size for p in shards.iterdir()) > 2 * limit
    run = subprocess.run(
        [sys.executable, "-c", LIMITED, str(limit), *args, "-o", str(out)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2, run.stderr
    line = one_line(run.stderr)
    assert "File too large" in line and "rerun the same command" in line
    if scope == "stream":
        assert f"{out / 'data' / '000.jsonl'}: cannot write" in line and "while filtering" in line
    else:
        assert f"{out}/" in line and "cannot write" in line and "in pass 1/3 annotate" in line
    assert cli(capsys, *args, "-o", out)[0] == 0
    assert cli(capsys, *args, "-o", clean)[0] == 0
    assert data_files(out) == data_files(clean)
    assert docs_out(out) == docs_out(clean) > 0
    if scope == "stream":
        assert stream_counts(out)["in"] == 3 * PER_SHARD


@pytest.mark.parametrize("scope", ["stream", "global"])
def test_bad_lines_and_bad_documents_count_alike(
    scope: str, docs: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``in`` counts every record read, bad ones included: in = out + dropped + skipped."""
    shard = tmp_path / "in" / "000.jsonl"
    shard.parent.mkdir()
    good = docs[:PER_SHARD]
    lines = [json.dumps(d) for d in good[:4]] + ["{not json", json.dumps({"id": "big", "text": "x " * 1500})]
    shard.write_text("\n".join(lines + [json.dumps(d) for d in good[4:]]) + "\n")
    out = tmp_path / "out"
    args = ["filter", shard, "-o", out, "--on-error", "skip", "--max-doc-chars", "2000", "--cap", "1", *QUIET]
    args += ["--cap-scope", scope, "--workers", "1"] if scope == "global" else []
    rc, printed, _ = cli(capsys, *args)
    assert rc == 0
    stats = json.loads((out / "stats.json").read_text())
    assert docs_out(out) == PER_SHARD  # cap 1 drops nothing
    if scope == "stream":
        assert stream_counts(out) == {"in": PER_SHARD + 2, "out": PER_SHARD, "dropped": 0, "skipped": 2}
        assert f"documents: {PER_SHARD + 2} in = {PER_SHARD} out" in printed and "2 skipped" in printed
    else:
        assert stats["documents"] == PER_SHARD + 2
        assert stats["counts"] == {**stats["counts"], "kept": PER_SHARD, "dropped": 0, "skipped": 2}
        assert "skipped 2 as bad records" in printed
