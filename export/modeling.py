"""The joint WSD + regard cross-encoder (PyTorch), built from an encoder folder for training and export.

The module itself lives in ``fairstream.models.torch_model`` (the torch inference backend uses it
without importing ``export``); this wrapper adds loading the encoder from a Hugging Face folder.
Any encoder directory works (MiniLM here, roberta-base elsewhere).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModel

from fairstream.models.torch_model import JointCrossEncoder as _JointCrossEncoder


class JointCrossEncoder(_JointCrossEncoder):
    def __init__(
        self, encoder_dir: str, dropout: float = 0.1, *, pretrained: bool = True, pooling: str = "cls_span"
    ) -> None:
        """``pretrained=False`` builds the architecture from ``encoder_dir``'s config only (for loading a checkpoint).

        ``pooling``: "cls_span" ([first token; keyword mean], the shipped model) or "cls_span_mean" (+ mean of all tokens).
        """
        if pretrained:
            encoder = AutoModel.from_pretrained(encoder_dir)
        else:
            encoder = AutoModel.from_config(AutoConfig.from_pretrained(encoder_dir))
        super().__init__(encoder, dropout=dropout, pooling=pooling)

    @classmethod
    def from_run(cls, run: Path) -> JointCrossEncoder:
        """The trained model of an ``export.train`` run folder (``encoder_config``, ``model.pt``), in eval mode."""
        meta_file = run / "train_meta.json"
        meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
        model = cls(str(run / "encoder_config"), pretrained=False, pooling=meta.get("pooling", "cls_span"))
        model.load_state_dict(torch.load(run / "model.pt", map_location="cpu"))
        return model.eval()
