"""The joint WSD + regard cross-encoder (PyTorch), for training and ONNX export only.

Any Hugging Face encoder directory works (MiniLM here, roberta-base elsewhere). The pooled
vector is [first token ; mean of the marked keyword's tokens]; two linear heads read it.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import AutoConfig, AutoModel

from fairstream.models.encoding import REGARD_LABELS, WSD_LABELS


class JointCrossEncoder(nn.Module):
    def __init__(
        self, encoder_dir: str, dropout: float = 0.1, *, pretrained: bool = True, pooling: str = "cls_span"
    ) -> None:
        """``pretrained=False`` builds the architecture from ``encoder_dir``'s config only (for loading a checkpoint).

        ``pooling``: "cls_span" ([first token; keyword mean], the shipped model) or "cls_span_mean" (+ mean of all tokens).
        """
        super().__init__()
        if pooling not in ("cls_span", "cls_span_mean"):
            raise ValueError(f"pooling={pooling!r}: expected 'cls_span' or 'cls_span_mean'")
        self.pooling = pooling
        if pretrained:
            self.encoder = AutoModel.from_pretrained(encoder_dir)
        else:
            self.encoder = AutoModel.from_config(AutoConfig.from_pretrained(encoder_dir))
        hidden = self.encoder.config.hidden_size
        self.uses_token_types = getattr(self.encoder.config, "type_vocab_size", 0) > 1
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
        kwargs = {"token_type_ids": token_type_ids} if self.uses_token_types else {}
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **kwargs).last_hidden_state
        weights = target_mask.unsqueeze(-1)
        span = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)
        parts = [hidden[:, 0], span]
        if self.pooling == "cls_span_mean":
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            parts.append((hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0))
        pooled = self.dropout(torch.cat(parts, dim=-1))
        return self.wsd_head(pooled), self.regard_head(pooled)
