"""One problem of a taxonomy file: what ``fairstream taxonomy check`` prints, one line each."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    """One thing wrong (``error``) or worth a look (``warning``) in a taxonomy file.

    ``line()`` is ``FILE: class 'x' keyword 'y': problem; what to do`` (the class, the item index
    and the keyword where known; warnings say ``warning:`` before the problem).
    """

    file: str
    problem: str
    fix: str = ""
    attribute_class: str | None = None
    keyword: str | None = None
    item: int | None = None  # index in the class's list, for an item without a usable keyword
    kind: str = "schema"
    severity: Severity = "error"

    def line(self) -> str:
        """The one-line form printed by ``fairstream taxonomy check``."""
        where = []
        if self.attribute_class is not None:
            where.append(f"class {self.attribute_class!r}")
        if self.keyword is not None:
            where.append(f"keyword {self.keyword!r}")
        elif self.item is not None:
            where.append(f"item {self.item}")
        head = f"{self.file}: " + (" ".join(where) + ": " if where else "")
        tag = "warning: " if self.severity == "warning" else ""
        return head + tag + self.problem + (f"; {self.fix}" if self.fix else "")

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return asdict(self)
