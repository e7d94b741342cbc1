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

# where Hugging Face encoders keep their stack of layers, and the config key that counts them
_LAYER_STACKS = (("encoder", "layer", "num_hidden_layers"), ("transformer", "layer", "n_layers"))


def layers_to_keep(total: int, keep: int) -> list[int]:
    """``keep`` of ``total`` layer indices, evenly spaced from the first (6 -> 3: [0, 2, 4], DistilBERT's choice)."""
    if not 1 <= keep <= total:
        raise ValueError(
            f"encoder_layers={keep}: the encoder has {total} layers; allowed 1..{total} (0: all)"
        )
    return [i * total // keep for i in range(keep)]


def keep_encoder_layers(encoder: torch.nn.Module, keep: int) -> list[int]:
    """Cut a pretrained encoder down to ``keep`` of its layers in place; returns the kept indices.

    The config's layer count follows, so the run's saved ``encoder_config`` rebuilds the smaller model.
    """
    for stack_name, list_name, config_key in _LAYER_STACKS:
        stack = getattr(encoder, stack_name, None)
        layers = getattr(stack, list_name, None)
        if isinstance(layers, torch.nn.ModuleList):
            kept = layers_to_keep(len(layers), keep)
            setattr(stack, list_name, torch.nn.ModuleList([layers[i] for i in kept]))
            setattr(encoder.config, config_key, keep)
            return kept
    raise ValueError(
        f"encoder_layers={keep}: no layer stack found in {type(encoder).__name__} "
        f"(looked for {[f'{a}.{b}' for a, b, _ in _LAYER_STACKS]}); train with all layers (0)"
    )


class JointCrossEncoder(_JointCrossEncoder):
    def __init__(
        self,
        encoder_dir: str,
        dropout: float = 0.1,
        *,
        pretrained: bool = True,
        pooling: str = "cls_span",
        encoder_layers: int = 0,
    ) -> None:
        """``pretrained=False`` builds the architecture from ``encoder_dir``'s config only (for loading a checkpoint).

        ``pooling``: "cls_span" ([first token; keyword mean], the shipped model) or "cls_span_mean" (+ mean of all tokens).
        ``encoder_layers``: keep that many of a pretrained encoder's layers (0: all), see ``keep_encoder_layers``.
        """
        if pretrained:
            encoder = AutoModel.from_pretrained(encoder_dir)
            if encoder_layers:
                keep_encoder_layers(encoder, encoder_layers)
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
