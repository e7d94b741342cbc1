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
    def __init__(self, encoder_dir: str, dropout: float = 0.1, *, pretrained: bool = True) -> None:
        """``pretrained=False`` builds the architecture from ``encoder_dir``'s config only (for loading a checkpoint)."""
        super().__init__()
        if pretrained:
            self.encoder = AutoModel.from_pretrained(encoder_dir)
        else:
            self.encoder = AutoModel.from_config(AutoConfig.from_pretrained(encoder_dir))
        hidden = self.encoder.config.hidden_size
        self.uses_token_types = getattr(self.encoder.config, "type_vocab_size", 0) > 1
        self.dropout = nn.Dropout(dropout)
        self.wsd_head = nn.Linear(2 * hidden, len(WSD_LABELS))
        self.regard_head = nn.Linear(2 * hidden, len(REGARD_LABELS))

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
        pooled = self.dropout(torch.cat([hidden[:, 0], span], dim=-1))
        return self.wsd_head(pooled), self.regard_head(pooled)
