"""Which taxonomy counts were made with, and the rule that counts of different taxonomies never add up.

A taxonomy is named by its identity, ``Taxonomy.identity``: its name and a hash of its content
(``"taxonomy-v2 (sha256 0123456789ab)"``), so an edited file, or a user's file that reuses a
shipped name, is another taxonomy. The stream writes it into every annotation
(``taxonomy_identity``), the co-occurrence counts keep it (``CooccurrenceCounts.taxonomy``) and a
worker's stats part carries it (``FilterStep.counts()["taxonomy"]``).

Counts of two taxonomies do not add up to anything meaningful: ``taxonomy-v2`` counts "African
American" under ``african-american`` where ``taxonomy-v1`` counts it under ``african``, has classes
v1 lacks, and a user's file may give a keyword other forms. So a merge of counts made with
different taxonomies is refused with :class:`TaxonomyMismatchError`, naming both. Counts that
recorded no identity (written before it was recorded, or built by hand) fall back on the taxonomy
names of their provenance (``"taxonomy-v1/model"``); counts with neither merge with anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from fairstream.errors import FairStreamError

if TYPE_CHECKING:
    from fairstream.taxonomy import Taxonomy

FIX = (
    "count them again with one taxonomy (fairstream filter --taxonomy, FilterConfig(taxonomy=...)), "
    "or report each on its own"
)


class TaxonomyMismatchError(FairStreamError, ValueError):
    """Counts or stats made with different taxonomies were to be added up."""


def taxonomy_name(identity: str) -> str:
    """The name part of an identity: ``"taxonomy-v2 (sha256 0123456789ab)"`` -> ``"taxonomy-v2"``."""
    return identity.split(" (sha256 ", 1)[0]


def provenance_taxonomies(provenance: Mapping[str, int]) -> set[str]:
    """Taxonomy names in a counts' provenance (keys ``"<taxonomy>/<model>"``), ``"None"`` left out."""
    return {key.rsplit("/", 1)[0] for key in provenance if "/" in key} - {"None"}


def _described(identity: str | None, names: Iterable[str]) -> str:
    if identity is not None:
        return identity
    return " + ".join(f"{n} (content hash not recorded)" for n in sorted(names))


def merged_taxonomy(
    mine: str | None,
    theirs: str | None,
    mine_names: Iterable[str] = (),
    theirs_names: Iterable[str] = (),
    *,
    what: str = "co-occurrence counts",
) -> str | None:
    """The identity of the sum of two counts; refuses counts of different taxonomies.

    ``mine`` / ``theirs``: the recorded identities (None: not recorded); ``*_names``: the taxonomy
    names of each side's provenance, compared where an identity is missing.

    Raises:
        TaxonomyMismatchError: one line naming both taxonomies and what to do.
    """
    a_names = {taxonomy_name(mine)} if mine is not None else set(mine_names)
    b_names = {taxonomy_name(theirs)} if theirs is not None else set(theirs_names)
    differ = (
        (mine != theirs)
        if mine is not None and theirs is not None
        else (a_names and b_names and a_names != b_names)
    )
    if differ or len(a_names) > 1 or len(b_names) > 1:
        raise TaxonomyMismatchError(
            f"cannot add up {what} of different taxonomies: {_described(mine, a_names)} and "
            f"{_described(theirs, b_names)} (their classes and keywords differ, so the sums would mix "
            f"two definitions of the attributes); {FIX}"
        )
    return mine if mine is not None else theirs


def shipped_taxonomy(identity: str | None, names: Iterable[str] = ()) -> Taxonomy | None:
    """The shipped taxonomy counts were made with (None: a user's taxonomy, or unknown).

    The one of that identity or, where none was recorded, of the one taxonomy name of their provenance.
    """
    from fairstream.taxonomy import Taxonomy, shipped_taxonomies

    name = taxonomy_name(identity) if identity is not None else None
    if name is None:
        found = set(names)
        name = found.pop() if len(found) == 1 else None
    if name is None or name not in shipped_taxonomies():
        return None
    taxonomy = Taxonomy.shipped(name)
    return taxonomy if identity is None or taxonomy.identity == identity else None


def counts_taxonomy(counts: Any) -> Taxonomy | None:
    """The shipped taxonomy co-occurrence counts were made with (None: a user's taxonomy, or unknown)."""
    return shipped_taxonomy(counts.taxonomy, provenance_taxonomies(counts.provenance))
