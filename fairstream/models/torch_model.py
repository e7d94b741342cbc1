"""The joint WSD + regard cross-encoder as a PyTorch module (training, export and the torch backend).

The pooled vector is [first token ; mean of the marked keyword's tokens] (``"cls_span"``), optionally
with the mean of all tokens (``"cls_span_mean"``); two linear heads read it. The encoder is any
Hugging Face encoder module (MiniLM / BERT for the shipped model). Only the torch backend and
``export/`` import this file: the ONNX Runtime inference path never does.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from fairstream.models.runtime import REGARD_LABELS, WSD_LABELS

POOLINGS = ("cls_span", "cls_span_mean")


class JointCrossEncoder(nn.Module):
    """Encoder + WSD head + regard head over the pooled vector.

    Args:
        encoder: a Hugging Face encoder (``last_hidden_state`` output, ``config.hidden_size``).
        dropout: dropout before the heads (training only).
        pooling: ``"cls_span"`` ([first token; keyword mean], the shipped model) or
            ``"cls_span_mean"`` (plus the mean of all tokens).
    """

    def __init__(self, encoder: nn.Module, *, dropout: float = 0.1, pooling: str = "cls_span") -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"pooling={pooling!r}: expected one of {POOLINGS}")
        self.pooling = pooling
        self.encoder = encoder
        config: Any = encoder.config
        hidden = int(config.hidden_size)
        self.uses_token_types = getattr(config, "type_vocab_size", 0) > 1
        self.dropout = nn.Dropout(dropout)
        width = (2 if pooling == "cls_span" else 3) * hidden
        self.wsd_head = nn.Linear(width, len(WSD_LABELS))
        self.regard_head = nn.Linear(width, len(REGARD_LABELS))

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor,
        target_mask: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """WSD and regard logits, each ``(batch, 3)``."""
        kwargs = {"token_type_ids": token_type_ids} if self.uses_token_types else {}
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **kwargs).last_hidden_state
        weights = target_mask.unsqueeze(-1).to(hidden.dtype)
        span = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)
        parts = [hidden[:, 0], span]
        if self.pooling == "cls_span_mean":
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            parts.append((hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0))
        pooled = self.dropout(torch.cat(parts, dim=-1))
        return self.wsd_head(pooled), self.regard_head(pooled)
