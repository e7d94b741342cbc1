"""ONNX Runtime threads follow the number of processes, so workers x threads <= cores."""

from __future__ import annotations

import numpy as np
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
    def threads_of(model: JointModel) -> tuple[int, int]:
        model.predict([])  # nothing to predict: load explicitly
        model._ensure_loaded()
        pool = model._pool._max_workers if model._pool is not None else 1
        return model._session.get_session_options().intra_op_num_threads, pool

    monkeypatch.delenv(THREADS_ENV, raising=False)
    monkeypatch.delenv(PROCESSES_ENV, raising=False)
    # automatic: one thread per pass, the process's cores as passes at once
    assert threads_of(JointModel(tiny_model_dir)) == (1, usable_cores())
    monkeypatch.setenv(PROCESSES_ENV, "2")  # as a process pool sets it for its workers
    assert threads_of(JointModel(tiny_model_dir)) == (1, max(1, usable_cores() // 2))
    assert threads_of(JointModel(tiny_model_dir, batch_threads=3)) == (1, 3)
    monkeypatch.setenv(THREADS_ENV, "3")  # an explicit intra-op count runs one pass at a time
    assert threads_of(JointModel(tiny_model_dir)) == (3, 1)
    assert threads_of(JointModel(tiny_model_dir, intra_op_threads=1)) == (1, 1)  # the argument wins
    assert threads_of(JointModel(tiny_model_dir, intra_op_threads=2, batch_threads=2)) == (2, 2)
    monkeypatch.setenv(THREADS_ENV, "many")
    with pytest.raises(ValueError, match=r"FAIRSTREAM_INTRA_OP_THREADS='many' must be a whole number >= 1"):
        threads_of(JointModel(tiny_model_dir))
    with pytest.raises(ValueError, match=r"intra_op_threads=-1 must be >= 0"):
        JointModel(tiny_model_dir, intra_op_threads=-1)
    with pytest.raises(ValueError, match=r"batch_threads=0 must be >= 1"):
        JointModel(tiny_model_dir, batch_threads=0)


def test_parallel_batches_give_the_same_logits_as_one_at_a_time():
    # a shipped batch-invariant graph: 3 passes at once over 23 batches equal one pass at a time
    import pickle

    from fairstream.models.encoding import MentionInput

    words = "the Asian visitors and a Muslim neighbour met an old blind man near the Black church".split()
    items = []
    for i in range(90):
        text = " ".join([*words[: 4 + i % 11], "Asian", *words[i % 5 :]])
        start = text.index("Asian")
        items.append(MentionInput(text, start, start + 5, "asian", "a person of Asian race/ethnicity"))
    one = JointModel("joint-v6", batch_size=4, intra_op_threads=1)
    many = JointModel("joint-v6", batch_size=4, intra_op_threads=1, batch_threads=3)
    w1, r1 = one.predict_logits(items)
    w3, r3 = many.predict_logits(items)
    assert many._pool is not None and many._pool._max_workers == 3
    assert np.array_equal(w1, w3) and np.array_equal(r1, r3)
    clone = pickle.loads(pickle.dumps(many))  # the setting travels to workers, the pool does not
    assert clone.batch_threads == 3 and clone._pool is None


def test_cpu_session_leaves_the_slow_skip_layer_norm_fusion_out(tmp_path):
    # onnxruntime would fuse Add + LayerNormalization into SkipLayerNormalization, whose fp32 CPU
    # kernel is ~8x slower; the optimised graph the session runs must keep them apart
    import onnx

    from fairstream.models.runtime import default_model_dir, make_session

    shipped = default_model_dir("joint-v6") / "model.int8.onnx"
    ours, default = tmp_path / "ours.onnx", tmp_path / "default.onnx"
    make_session(shipped, ["CPUExecutionProvider"], 1, optimized_model_path=ours)
    make_session(shipped, ["CPUExecutionProvider"], 1, optimized_model_path=default, disabled_optimizers=())
    ops = {
        name: {n.op_type for n in onnx.load(str(path)).graph.node}
        for name, path in [("ours", ours), ("default", default)]
    }
    assert "SkipLayerNormalization" in ops["default"]  # the fusion exists and would apply
    assert "SkipLayerNormalization" not in ops["ours"] and "LayerNormalization" in ops["ours"]
