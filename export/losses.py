"""The training losses of ``export.train.fit``: the plain recipe's (``gold_loss``) and with a teacher's soft labels."""

from __future__ import annotations

import numpy as np
import torch

from export.config import TrainConfig
from export.distill import distillation_loss
from fairstream.core.schema import REGARD_LABELS, WSD_LABELS
from fairstream.models.labels import LabelledPair


def gold_loss(
    w_logits: torch.Tensor,
    r_logits: torch.Tensor,
    batch: list[LabelledPair],
    reg_w: torch.Tensor,
    hp: TrainConfig,
) -> torch.Tensor:
    """The joint-v2 recipe's loss: WSD cross-entropy + weighted regard cross-entropy on person pairs."""
    device = w_logits.device
    wsd_idx = {w: i for i, w in enumerate(WSD_LABELS)}
    reg_idx = {r: i for i, r in enumerate(REGARD_LABELS)}
    w_gold = torch.tensor([wsd_idx[p.wsd] for p in batch], device=device)
    loss = hp.wsd_weight * torch.nn.functional.cross_entropy(w_logits, w_gold)
    yes = [i for i, p in enumerate(batch) if p.wsd == "yes" and p.regard]
    if yes:
        r_gold = torch.tensor([reg_idx[batch[i].regard] for i in yes], device=device)  # type: ignore[index]
        loss = loss + hp.regard_weight * torch.nn.functional.cross_entropy(
            r_logits[yes], r_gold, weight=reg_w
        )
    return loss


def distilled_loss(
    w_logits: torch.Tensor,
    r_logits: torch.Tensor,
    batch: list[LabelledPair],
    soft_of: dict[int, tuple[np.ndarray, np.ndarray]],
    reg_w: torch.Tensor,
    hp: TrainConfig,
) -> torch.Tensor:
    """Gold cross-entropy mixed with the teacher's soft labels, per pair.

    A pair with both gold and teacher labels counts ``(1 - a) * gold + a * soft`` (a =
    ``hp.distill_weight``); a pair with one of them counts that one. WSD: every pair. Regard: gold
    where the gold sense is a person with a regard label; soft where gold says person, or where there
    is no gold and then weighted by the teacher's P(person), since regard only means something for
    mentions of people. Gold regard keeps the class weights of the plain recipe.
    """
    device = w_logits.device
    a, t = hp.distill_weight, hp.temperature
    n = len(batch)
    wsd_idx = {w: i for i, w in enumerate(WSD_LABELS)}
    reg_idx = {r: i for i, r in enumerate(REGARD_LABELS)}
    has_gold = torch.tensor([p.wsd in wsd_idx for p in batch], device=device)
    teacher = [soft_of.get(id(p)) for p in batch]
    has_soft = torch.tensor([s is not None for s in teacher], device=device)
    t_wsd = torch.tensor(
        np.stack([s[0] if s is not None else np.zeros(3, np.float32) for s in teacher]), device=device
    )
    t_reg = torch.tensor(
        np.stack([s[1] if s is not None else np.zeros(3, np.float32) for s in teacher]), device=device
    )
    both = has_gold & has_soft
    gold_share = torch.where(both, 1 - a, 1.0) * has_gold
    soft_share = torch.where(both, a, 1.0) * has_soft

    w_gold = torch.tensor([wsd_idx.get(p.wsd, 0) for p in batch], device=device)
    wsd_loss = gold_share * torch.nn.functional.cross_entropy(w_logits, w_gold, reduction="none")
    wsd_loss = wsd_loss + soft_share * distillation_loss(w_logits, t_wsd, t)

    person_gold = torch.tensor([p.wsd == "yes" and p.regard is not None for p in batch], device=device)
    r_gold = torch.tensor([reg_idx.get(p.regard or "", 1) for p in batch], device=device)
    # class-weighted like the plain recipe's weighted mean, so distill_weight 0 gives exactly gold_loss
    gold_reg_weight = gold_share * person_gold * reg_w[r_gold]
    gold_reg = torch.nn.functional.cross_entropy(r_logits, r_gold, reduction="none")
    p_person = torch.softmax(t_wsd, -1)[:, wsd_idx["yes"]]
    soft_reg_weight = torch.where(has_gold, person_gold.float(), p_person) * soft_share
    regard_loss = gold_reg_weight * gold_reg + soft_reg_weight * distillation_loss(r_logits, t_reg, t)
    regard_rows = gold_reg_weight.sum() + soft_reg_weight.sum()
    if float(regard_rows) == 0.0:
        return hp.wsd_weight * wsd_loss.sum() / n
    return hp.wsd_weight * wsd_loss.sum() / n + hp.regard_weight * regard_loss.sum() / regard_rows
