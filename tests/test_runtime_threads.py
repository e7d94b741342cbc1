"""ONNX Runtime threads follow the number of processes, so workers x threads <= cores."""

from __future__ import annotations

import pytest
from torch.utils.data import DataLoader, IterableDataset

from fairstream.models.runtime import (
    PROCESSES_ENV,
    THREADS_ENV,
    JointModel,
    auto_intra_op_threads,
    concurrent_processes,
    usable_cores,
)


def test_threads_divide_the_cores_between_processes():
    cores = usable_cores()
    assert auto_intra_op_threads(1) == cores
    assert auto_intra_op_threads(cores) == 1
    assert auto_intra_op_threads(cores * 4) == 1  # never 0
    for n in range(1, 9):
        assert auto_intra_op_threads(n) * n <= max(cores, n)


class _ThreadsInWorker(IterableDataset):
    def __iter__(self):
        yield concurrent_processes(), auto_intra_op_threads()


def test_dataloader_workers_are_counted():
    # a real DataLoader with two worker processes: each sees both and takes its share of the cores
    seen = list(DataLoader(_ThreadsInWorker(), batch_size=None, num_workers=2))
    assert [tuple(s) for s in seen] == [(2, max(1, usable_cores() // 2))] * 2
    assert concurrent_processes() == 1  # the main process is not a worker


def test_session_threads_auto_env_and_explicit(tiny_model_dir, monkeypatch):
    def threads_of(model: JointModel) -> int:
        model.predict([])  # nothing to predict: load explicitly
        model._ensure_loaded()
        return model._session.get_session_options().intra_op_num_threads

    monkeypatch.delenv(THREADS_ENV, raising=False)
    monkeypatch.setenv(PROCESSES_ENV, "2")  # as a process pool sets it for its workers
    assert threads_of(JointModel(tiny_model_dir)) == max(1, usable_cores() // 2)
    monkeypatch.setenv(THREADS_ENV, "3")
    assert threads_of(JointModel(tiny_model_dir)) == 3
    assert threads_of(JointModel(tiny_model_dir, intra_op_threads=1)) == 1  # the argument wins
    monkeypatch.setenv(THREADS_ENV, "many")
    with pytest.raises(ValueError, match=r"FAIRSTREAM_INTRA_OP_THREADS='many' must be a whole number >= 1"):
        threads_of(JointModel(tiny_model_dir))
    with pytest.raises(ValueError, match=r"intra_op_threads=-1 must be >= 0"):
        JointModel(tiny_model_dir, intra_op_threads=-1)
