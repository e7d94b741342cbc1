"""``JobConfig``: the offline job's own settings (scope of the cap, engine, workers, checkpoints).

They sit beside ``FilterConfig`` (what the filter decides) rather than in it: the torch dataset and
the map functions filter one stream and have no engine or second pass. The command line's
``filter`` options for them are generated from the fields, in ``FilterConfig``'s style.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from fairstream.core.config import _opt, _optional_count, _whole
from fairstream.errors import ConfigError, option

CAP_SCOPES = ("stream", "global")
ENGINES = ("local", "ray")


@dataclass(frozen=True)
class JobConfig:
    """Settings of ``fairstream filter`` beyond the filter's (see each field's help)."""

    cap_scope: str = field(
        default="stream",
        metadata=_opt(
            "stream: one pass, the cap decided online as documents stream by (it holds once an "
            "attribute has --warmup kept sentences); global: annotate every shard, then drop the fewest "
            "negative sentences so every attribute, small ones included, meets its cap over the whole "
            "corpus (two passes; outputs byte-identical for any --workers, engine or restart)",
            choices=CAP_SCOPES,
        ),
    )
    engine: str = field(
        default="local",
        metadata=_opt(
            "with --cap-scope global: local (a process pool on this machine) or ray (Ray Data, local "
            "or --ray-address)",
            choices=ENGINES,
        ),
    )
    workers: int | None = field(
        default=None,
        metadata=_optional_count(
            "with --cap-scope global: worker processes (local) or CPUs of a local Ray; default: the "
            "cores; each gets cores // workers model threads",
            least=1,
        ),
    )
    checkpoint_every: int = field(
        default=1000,
        metadata=_opt(
            "with --cap-scope global: documents between checkpoints inside a shard (a rerun resumes "
            "from the last one)",
            check=_whole(1),
            allowed="a whole number >= 1",
            metavar="N",
        ),
    )
    annotate_only: bool = field(
        default=False,
        metadata=_opt(
            "with --cap-scope global: run pass 1 only (attribute files + counts under OUTPUT/attributes); "
            "filter later with --from-annotations OUTPUT"
        ),
    )
    from_annotations: str | None = field(
        default=None,
        metadata=_opt(
            "with --cap-scope global: skip pass 1 and read the annotations of an --annotate-only run "
            "from this folder (a new cap costs only the decision and the writing)",
            metavar="DIR",
        ),
    )
    ray_address: str | None = field(
        default=None,
        metadata=_opt(
            "with --engine ray: the cluster (ray://HEAD:10001, or auto inside a cluster); default: a "
            "local Ray",
            metavar="ADDRESS",
        ),
    )

    overwrite: bool = field(
        default=False,
        metadata=_opt(
            "empty the output folder first, whatever it holds (without it a non-empty folder that is "
            "not a fairstream run is refused)"
        ),
    )
    force_restart: bool = field(
        default=False,
        metadata=_opt(
            "discard the run the output folder holds and start over (without it a rerun resumes that "
            "run, and is refused, naming each difference, when its settings or inputs differ)"
        ),
    )

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            meta, value = f.metadata, getattr(self, f.name)
            if meta["choices"] is not None and value not in meta["choices"]:
                raise ConfigError(f"{option(f.name, value)} is not one of {meta['choices']}")
            if meta["check"] is not None and not meta["check"](value):
                raise ConfigError(f"{option(f.name, value)}: must be {meta['allowed']}")
        if self.cap_scope == "stream":
            for name in ("annotate_only", "from_annotations", "ray_address", "workers"):
                if getattr(self, name) not in (None, False):
                    raise ConfigError(f"{option(name)} needs {option('cap_scope', 'global')}")
            if self.engine != "local":
                raise ConfigError(f"{option('engine', self.engine)} needs {option('cap_scope', 'global')}")
        if self.annotate_only and self.from_annotations:
            raise ConfigError(
                f"{option('annotate_only')} and {option('from_annotations')} exclude each other"
            )
        if self.ray_address and self.engine != "ray":
            raise ConfigError(f"{option('ray_address')} needs {option('engine', 'ray')}")

    @classmethod
    def from_namespace(cls, args: argparse.Namespace) -> JobConfig:
        """Settings from parsed command-line options (those ``add_arguments`` added)."""
        return cls(
            **{f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
        )

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Add one ``--option`` per setting, with its help and default."""
        for f in dataclasses.fields(cls):
            meta: Any = f.metadata
            kwargs: dict[str, Any] = {"dest": f.name, "default": f.default}
            if isinstance(f.default, bool):
                kwargs.update(action="store_true", help=meta["help"])
            else:
                kwargs["help"] = meta["help"] + (" (default: %(default)s)" if f.default is not None else "")
                if meta["choices"] is not None:
                    kwargs["choices"] = list(meta["choices"])
                elif meta["cli_type"] is not None:
                    kwargs["type"] = meta["cli_type"]
                elif isinstance(f.default, int):
                    kwargs["type"] = int
                if meta["metavar"]:
                    kwargs["metavar"] = meta["metavar"]
            parser.add_argument("--" + f.name.replace("_", "-"), **kwargs)
