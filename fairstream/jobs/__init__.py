"""The offline filter at corpus scale: streamed shards, an exact global cap in passes, engines.

* ``reader``: a shard's records streamed with bounded memory (JSON lines, gzip, Parquet batches).
* ``annotate_pass`` (pass 1): attribute files aligned line by line with the shards, and each
  shard's ``GlobalCapPlanner`` state.
* ``decide_pass`` (pass 2): merge the states, write the drop plan.
* ``apply_pass`` (pass 3): write the filtered shards.
* ``engines``: a local process pool or Ray Data run the shard tasks; ``checkpoint``: resume
  inside a shard; ``run_folder``: one run per output folder, refusing changed settings or inputs;
  ``job``: ``GlobalCapJob`` ties them together.

Decisions depend only on ``(seed, document id, sentence index)`` and the merged counts, so the
outputs are byte for byte the same for any number of processes, machines or restarts.
"""

from fairstream.jobs.job import GlobalCapJob, format_job_summary

__all__ = ["GlobalCapJob", "format_job_summary"]
