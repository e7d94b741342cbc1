"""Helper process pools end with the process that started them: at its exit, or when it is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# The offline engine keeps one FilterStep per spawned worker process (``worker_step``'s module cache).
# With scan workers, that step's helpers outlived the task; the worker's exit then joined them forever.
ENGINE_WORKER_WITH_SCAN_WORKERS = """
import multiprocessing as mp
import sys
from concurrent.futures import ProcessPoolExecutor

from fairstream.core.config import FilterConfig
from fairstream.jobs.tasks import worker_step

TEXT = "The Muslim man was kind to his neighbours and helped them carry their bags home."


def tag_in_engine_worker(n):
    step = worker_step(FilterConfig(scan_workers=2), 1)  # kept by the module: alive at exit
    step.tagger.scan_min_docs = 2
    docs = [{"id": str(i), "text": TEXT} for i in range(n)]
    kept = list(step.process(docs))
    return len(kept), step.tagger._scan_pool is not None, len(mp.active_children())


if __name__ == "__main__":
    with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
        print(*pool.submit(tag_in_engine_worker, 8).result(), flush=True)
    print("exited", flush=True)
"""

# Started, then killed with SIGKILL: no finalizer runs, the helpers must notice by themselves.
KILLED_WITH_SCAN_WORKERS = """
import multiprocessing as mp
import time

from fairstream.models.runtime import JointModel
from fairstream.stream.tagger import Tagger

tagger = Tagger(JointModel(intra_op_threads=1), scan_workers=2)
tagger.scan_min_docs = 2
tagger.tag_batch(["The Muslim man was kind to his neighbours and helped them carry bags."] * 4)
print(*[p.pid for p in mp.active_children()], flush=True)
time.sleep(600)
"""


def run_script(tmp_path: Path, source: str) -> tuple[Path, dict[str, str]]:
    script = tmp_path / "script.py"  # a file, not ``-c``: spawned workers import the main module
    script.write_text(source)
    return script, {**os.environ, "PYTHONPATH": str(REPO)}


def gone(pid: int) -> bool:
    """Exited (a zombie counts: a container's init may never reap the orphan)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


def test_an_engine_worker_with_scan_workers_exits(tmp_path: Path) -> None:
    script, env = run_script(tmp_path, ENGINE_WORKER_WITH_SCAN_WORKERS)
    try:
        out = subprocess.run(
            [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=180, check=True
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the engine worker never exited (its scan workers kept it waiting): {exc.stdout!r}")
    kept, pool_started, helpers = out.stdout.split("\n")[0].split()
    assert (kept, pool_started, helpers) == ("8", "True", "2")  # the helpers did run the scans
    assert out.stdout.split("\n")[1] == "exited"


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads process states from /proc (Linux)")
def test_scan_workers_exit_when_their_process_is_killed(tmp_path: Path) -> None:
    script, env = run_script(tmp_path, KILLED_WITH_SCAN_WORKERS)
    proc = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        helpers = [int(pid) for pid in proc.stdout.readline().split()]
        assert len(helpers) == 2 and not any(gone(pid) for pid in helpers)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not all(gone(pid) for pid in helpers):
        time.sleep(0.1)
    assert all(gone(pid) for pid in helpers), "scan workers outlived their killed process"
