"""Offline data builders that sit beside the stream.

Augmentation (``substitute``, ``gender_swap``, ``db_index``, ``stereotype``) and fine-tuning data
builders share record I/O and provenance through ``records``; each builder is one module with its
CLI in a ``cli_*`` module.
"""
