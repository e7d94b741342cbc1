"""One training recipe: export.train's flags and export.sweep's config defaults come from TrainConfig."""

from __future__ import annotations

import argparse

import pytest

from export.config import TrainConfig
from export.sweep import DEFAULTS


def test_train_flags_and_sweep_defaults_are_the_same_recipe():
    ap = argparse.ArgumentParser()
    TrainConfig.add_arguments(ap)
    from_flags = TrainConfig.from_mapping(ap.parse_args([]))
    from_sweep = TrainConfig.from_mapping(DEFAULTS)
    assert from_flags == from_sweep == TrainConfig()
    assert from_flags.regard_weight == 2.0  # the shipped joint-v2 recipe (export/EXPERIMENTS.md)
    parsed = TrainConfig.from_mapping(ap.parse_args(["--regard-weight", "1", "--pooling", "mean"]))
    assert (parsed.regard_weight, parsed.pooling) == (1.0, "mean")


@pytest.mark.parametrize(
    ("name", "value"), [("lr", 0.0), ("batch_size", 0), ("pooling", "max"), ("dropout", 1.0)]
)
def test_bad_values_name_the_setting(name, value):
    with pytest.raises(ValueError, match=rf"^{name}="):
        TrainConfig(**{name: value})
