"""The ``fairstream`` command line.

Every command has ``--help``. Options can also come from a config file (``--config FILE``, JSON,
TOML or YAML) whose keys are the long option names (``cap``, ``granularity``, ...); options given
on the command line win over the file.

One module per command group (``filter``, ``detect``, ``taxonomy``, ``eval_models``, ``report``
with ``seegull-recall``, ``annotate``, ``finetune``, ``augment``, ``bench``), each with its
``register(add)``; ``parser`` builds the parser from them, ``options`` reads ``--config`` files and
checks option values, ``common`` holds what several share (``FilterConfig``'s flags among them),
``app`` runs a command (``main``, the console entry point).
"""

from fairstream.cli.app import main
from fairstream.cli.parser import build_parser
from fairstream.io import sample_corpus_path

__all__ = ["build_parser", "main", "sample_corpus_path"]
