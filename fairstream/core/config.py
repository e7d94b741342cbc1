"""``FilterConfig``: every setting of the filter in one frozen object, with its help text.

The command line's ``filter`` options are generated from it (``add_arguments``), ``--config``
files hold its field names, and every layer (the core step, the torch dataset, the map functions,
the offline job) takes it whole, so a setting has one name, one default, one check and one help
text everywhere.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from fairstream.core.cap import CAP_ALLOWED, check_caps_keys, is_cap
from fairstream.errors import ConfigError, option
from fairstream.models.settings import BATCH_SIZE_ALLOWED, is_batch_size
from fairstream.taxonomy import Taxonomy, taxonomy_setting_problem

# judged (sentence, keyword) pairs remembered across windows: about 1.7% of mentions on the shared
# corpus, more on boilerplate-heavy crawls (benchmarks/RESULTS.md)
DEFAULT_CACHE_SIZE = 16_384

Granularity = Literal["sentence", "document"]
Splitter = Literal["auto", "punkt", "fallback"]
OnError = Literal["raise", "skip"]
GRANULARITIES = ("sentence", "document")
SPLITTERS = ("auto", "punkt", "fallback")
ON_ERROR_VALUES = ("raise", "skip")
SCAN_OVERLAP_VALUES = ("auto", "on", "off")
DEVICES = ("cpu", "cuda", "cuda:N", "auto")  # checked by fairstream.models.loader.parse_device

#: What a setting changes: ``"tag"`` the annotation of each document (which mentions, their
#: senses and regards), ``"cap"`` which judged sentences are dropped; a field without a stage
#: changes speed only. A resumed run must agree on every setting with a stage (``output_settings``).
#: ``on_error`` has none: a part written under "raise" met no bad record, so "skip" (what its error
#: message suggests) resumes it with the same outputs.
Stage = Literal["tag", "cap"]
STAGES: tuple[Stage, ...] = ("tag", "cap")


def _whole(least: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= least


def _opt(
    help_: str,
    *,
    check: Callable[[Any], bool] | None = None,
    allowed: str = "",
    choices: tuple[str, ...] | None = None,
    cli_type: Callable[[str], Any] | None = None,
    metavar: str | None = None,
    nargs: str | None = None,
    stage: Stage | None = None,
) -> dict[str, Any]:
    return {
        "stage": stage,
        "help": help_,
        "check": check,
        "allowed": allowed,
        "choices": choices,
        "cli_type": cli_type,
        "metavar": metavar,
        "nargs": nargs,
    }


def _optional_count(help_: str, least: int) -> dict[str, Any]:
    """Metadata of an optional whole-number option (``None``: a default chosen at run time)."""
    return _opt(
        help_,
        check=lambda v: v is None or _whole(least)(v),
        allowed=f"a whole number >= {least}",
        cli_type=int,
        metavar="N",
    )


def _parse_cap_pair(text: str) -> tuple[str, float]:
    key, sep, value = text.partition("=")
    try:
        if not sep or not key:
            raise ValueError
        return key, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not KEYWORD_OR_CLASS=CAP (e.g. muslim=0.02 or religion=0.05)"
        ) from None


def _optional_str(text: str) -> str | None:
    return text or None


@dataclass(frozen=True)
class FilterConfig:
    """Settings of the streaming filter; see each field's help (``fairstream filter --help``)."""

    cap: float = field(
        default=0.01,
        metadata=_opt(
            "max kept negative-regard share per attribute, in [0, 1]; it holds once an attribute has "
            "--warmup kept sentences, so rare attributes can end above it (flagged in the summary and "
            "the report); 1 tags and counts only",
            stage="cap",
            check=is_cap,
            allowed=CAP_ALLOWED,
        ),
    )
    caps: Mapping[str, float] = field(
        default_factory=dict,
        metadata=_opt(
            "caps of single attribute keywords or classes overriding --cap, as KEY=CAP pairs "
            "(a keyword wins over its class)",
            stage="cap",
            check=lambda v: isinstance(v, Mapping) and all(is_cap(c) for c in v.values()),
            allowed="a mapping of keywords or classes (of --taxonomy) to numbers in [0, 1]",
            cli_type=_parse_cap_pair,
            metavar="KEY=CAP",
            nargs="+",
        ),
    )
    warmup: int = field(
        default=100,
        metadata=_opt(
            "kept sentences per attribute after which the cap always holds; 0 = strict: the cap holds "
            "from the first sentence, at the cost of dropping more negative sentences",
            stage="cap",
            check=_whole(0),
            allowed="a whole number >= 0",
        ),
    )
    seed: int = field(
        default=0,
        metadata=_opt(
            "seed of the cap's random choices, >= 0",
            stage="cap",
            check=_whole(0),
            allowed="a whole number >= 0",
        ),
    )
    granularity: Granularity = field(
        default="sentence",
        metadata=_opt(
            "drop single sentences (the rest of the document is kept byte for byte) or whole documents",
            stage="cap",
            choices=GRANULARITIES,
        ),
    )
    lookahead: int = field(
        default=1024,
        metadata=_opt(
            "documents read ahead to batch model calls (held in memory together; twice with scan "
            "workers); a sentence repeated within this window (web boilerplate) is judged once; "
            "speed only: 1024 ran 1.05x 256 on 2 CPU cores, larger windows feed a GPU bigger batches",
            check=_whole(1),
            allowed="a whole number >= 1",
        ),
    )
    cache_size: int = field(
        default=DEFAULT_CACHE_SIZE,
        metadata=_opt(
            "judged mentions remembered across look-ahead windows (0: off); saves model calls on "
            "boilerplate spread far apart; used only with a batch-invariant model, whose cached and "
            "recomputed decisions are identical (so resume stays exact)",
            check=_whole(0),
            allowed="a whole number >= 0",
        ),
    )
    batch_size: int | None = field(
        default=None,
        metadata=_opt(
            "mentions per model forward pass, >= 1; default: 8 on CPU (ONNX Runtime), sized from free "
            "memory on a GPU; a value given is always used; speed only, the shipped model's decisions "
            "do not depend on it on CPU",
            check=is_batch_size,
            allowed=BATCH_SIZE_ALLOWED,
            cli_type=int,
            metavar="N",
        ),
    )
    scan_workers: int | None = field(
        default=None,
        metadata=_optional_count(
            "processes running the keyword stage (matching, sentence splitting) beside the model; "
            "default: the cores minus one when the model runs on a GPU, so it is not held back by one "
            "core scanning text; 0 on CPU (the model's process scans; 2 on 2 cores ran 1.06x); speed only",
            least=0,
        ),
    )
    scan_overlap: str = field(
        default="auto",
        metadata=_opt(
            "with scan workers, whether they scan the next look-ahead window while the model judges "
            "this one (on) or split each window's keyword stage between model calls (off); auto: on "
            "when the model runs on a GPU, off on CPU, where the model already uses the cores (on 2 "
            "cores, off with 2 workers ran 1.06x no workers; on, 1.00x); speed only",
            choices=SCAN_OVERLAP_VALUES,
        ),
    )
    min_tokens: int = field(
        default=16,
        metadata=_opt(
            "candidate sentences need more than this many NLTK tokens",
            stage="tag",
            check=_whole(0),
            allowed="a whole number >= 0",
        ),
    )
    max_tokens: int = field(
        default=128,
        metadata=_opt(
            "... and at most this many", stage="tag", check=_whole(1), allowed="a whole number >= 1"
        ),
    )
    splitter: Splitter = field(
        default="auto",
        metadata=_opt(
            "sentence splitter: NLTK Punkt (punkt), fairstream's own Punkt parameters (fallback), or "
            "Punkt where its data is installed, else the fallback (auto)",
            stage="tag",
            choices=SPLITTERS,
        ),
    )
    max_doc_chars: int = field(
        default=1_000_000,
        metadata=_opt(
            "longer documents are bad records (usually broken extraction); 0 = no limit",
            stage="tag",
            check=_whole(0),
            allowed="a whole number >= 0 (0: no limit)",
        ),
    )
    text_field: str = field(
        default="text",
        metadata=_opt(
            "field that holds the text",
            stage="tag",
            check=lambda v: isinstance(v, str) and bool(v),
            allowed="a field name",
        ),
    )
    id_field: str | None = field(
        default="id",
        metadata=_opt(
            "field that names a document in errors and annotations ('' = none)",
            stage="tag",
            check=lambda v: v is None or isinstance(v, str),
            allowed="a field name or empty",
            cli_type=_optional_str,
        ),
    )
    on_error: OnError = field(
        default="raise",
        metadata=_opt(
            "raise: stop at the first bad record, naming file and line; skip: count and skip bad records "
            "(and the unreadable rest of a corrupt shard) and go on",
            choices=ON_ERROR_VALUES,
        ),
    )
    model: str | None = field(
        default=None,
        metadata=_opt(
            "model folder (default: the shipped joint model)",
            stage="tag",
            check=lambda v: v is None or isinstance(v, str),
            allowed="a folder path",
            metavar="FOLDER",
        ),
    )
    taxonomy: str | None = field(
        default=None,
        metadata=_opt(
            "taxonomy: a shipped one by name (taxonomy-v1, taxonomy-v2) or a JSON file (default: taxonomy-v1)",
            stage="tag",
            check=lambda v: v is None or isinstance(v, str),
            allowed="a shipped taxonomy's name or a taxonomy JSON file",
        ),
    )
    device: str = field(
        default="cpu",
        metadata=_opt(
            "where the model runs: cpu (ONNX Runtime int8), cuda or cuda:N (PyTorch bf16/fp16, "
            "pip install 'fairstream[torch-backend]'), auto (cuda when torch sees a GPU, else cpu)",
            stage="tag",
            check=lambda v: isinstance(v, str) and re.fullmatch(r"cpu|cuda|cuda:\d+|auto", v) is not None,
            allowed="one of cpu, cuda, cuda:N, auto (N: a GPU index)",
        ),
    )

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            meta = f.metadata
            value = getattr(self, f.name)
            if meta["choices"] is not None and value not in meta["choices"]:
                raise ConfigError(f"{option(f.name, value)} is not one of {meta['choices']}")
            if meta["check"] is not None and not meta["check"](value):
                raise ConfigError(f"{option(f.name, value)}: must be {meta['allowed']}")
        if self.taxonomy is not None and (problem := taxonomy_setting_problem(self.taxonomy)):
            raise ConfigError(f"{option('taxonomy', self.taxonomy)}: {problem}")
        if self.min_tokens >= self.max_tokens:
            raise ConfigError(
                f"{option('min_tokens', self.min_tokens)} must be less than "
                f"{option('max_tokens', self.max_tokens)}"
            )
        # a plain dict inside a frozen object could still be changed by its caller: copy it
        object.__setattr__(self, "caps", dict(self.caps))
        if self.caps:  # the keys name keywords or classes of the taxonomy: refused here, before any work
            check_caps_keys(self.caps, Taxonomy.load(self.taxonomy))

    @property
    def doc_char_limit(self) -> int | None:
        """``max_doc_chars`` as the text layer takes it (``None``: no limit)."""
        return self.max_doc_chars or None

    def replace(self, **changes: Any) -> FilterConfig:
        """A copy with some settings changed (checked like the original)."""
        _reject_unknown(changes, "FilterConfig.replace()")
        return dataclasses.replace(self, **changes)

    def output_settings(self, stage: Stage) -> dict[str, Any]:
        """The settings of ``stage`` (see ``Stage``), as plain JSON: what a resumed run must share."""
        if stage not in STAGES:
            raise ConfigError(f"stage={stage!r} is not one of {STAGES}")
        data = self.to_dict()
        return {f.name: data[f.name] for f in dataclasses.fields(self) if f.metadata["stage"] == stage}

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able settings (``from_dict`` reads them back)."""
        out = dataclasses.asdict(self)
        out["caps"] = dict(self.caps)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "config") -> FilterConfig:
        """Settings from a mapping (a ``--config`` file's, with ``-`` or ``_`` in names)."""
        data = {str(k).replace("-", "_"): v for k, v in data.items()}
        _reject_unknown(data, where)
        return cls(**data)

    @classmethod
    def from_namespace(cls, args: argparse.Namespace) -> FilterConfig:
        """Settings from parsed command-line options (those ``add_arguments`` added)."""
        values = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
        caps = values.get("caps")
        if caps is None:  # not given
            values.pop("caps", None)
        elif isinstance(caps, list):  # KEY=CAP pairs from the command line
            values["caps"] = dict(caps)
        return cls(**values)

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser, *, skip: tuple[str, ...] = ()) -> None:
        """Add one ``--option`` per setting, with its help and default; options already there are kept."""
        defaults = cls()
        for f in dataclasses.fields(cls):
            flag = "--" + f.name.replace("_", "-")
            if f.name in skip or flag in parser._option_string_actions:
                continue
            meta = f.metadata
            default = getattr(defaults, f.name)
            kwargs: dict[str, Any] = {"dest": f.name, "help": meta["help"] + " (default: %(default)s)"}
            if meta["choices"] is not None:
                kwargs["choices"] = list(meta["choices"])
            elif meta["cli_type"] is not None:
                kwargs["type"] = meta["cli_type"]
            elif isinstance(default, bool):
                raise TypeError(f"no command-line form for boolean setting {f.name}")
            elif isinstance(default, int | float):
                kwargs["type"] = type(default)
            if meta["metavar"]:
                kwargs["metavar"] = meta["metavar"]
            if meta["nargs"]:
                kwargs["nargs"] = meta["nargs"]
            kwargs["default"] = None if isinstance(default, Mapping) and not default else default
            if f.name == "caps":
                kwargs["help"] = meta["help"]
            parser.add_argument(flag, **kwargs)


def _reject_unknown(data: Mapping[str, Any], where: str) -> None:
    names = {f.name for f in dataclasses.fields(FilterConfig)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"{where}: unknown setting(s) {unknown}; allowed: {sorted(names)}")


Loaded = TypeVar("Loaded")


def loaded_or_setting(
    settings: dict[str, Any], name: str, value: Loaded | str | Path | None
) -> Loaded | None:
    """A ``model=`` or ``taxonomy=`` argument of a filter, as the filter takes it.

    A loaded object is returned, to be used instead of the setting; a name, folder or file is the
    setting ``name`` itself (put into ``settings``) and ``None`` is returned.
    """
    if isinstance(value, str | Path):
        settings[name] = str(value)
        return None
    return value
