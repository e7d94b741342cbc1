"""Thin adapters from data engines to ``fairstream.core.step.FilterStep``.

``hf`` (``datasets.map``), ``datatrove`` (a pipeline step) and ``ray`` (``map_batches``); the torch
``IterableDataset`` is ``fairstream.stream.dataset.FairStream``. Each module imports its engine
only when used.
"""
