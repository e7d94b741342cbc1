"""The joint WSD + regard cross-encoder (PyTorch), built from an encoder folder for training and export.

The module itself lives in ``fairstream.models.torch_model`` (the torch inference backend uses it
without importing ``export``); this wrapper adds loading the encoder from a Hugging Face folder.
Any encoder directory works (MiniLM here, roberta-base elsewhere).
"""

from __future__ import annotations

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
