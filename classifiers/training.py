"""Fine-tuning an SBA classifier on labelled questions.

The result is a standard transformers sequence-classification folder. Its config names the labels
(``SCA`` = 0, ``SBA`` = 1), and carries ``sba_kind``, ``sba_threshold``, ``sba_input``,
``sba_max_length``, ``sba_truncation_side`` (what :class:`classifiers.sba_model.SBAClassifier` reads)
and ``sba_training``, the provenance of the run (data, recipe, losses, calibration).

A ``sequence`` model learns the item's label from one sequence per item. A ``cross_encoder`` learns,
for each remaining option j of an item, whether (question, key, option j) is acceptable too: the
option an SBA label names (``alternative``) is a positive, the other non-key options are negatives,
and every remaining option of an SCA item is a negative. An SBA label that names no option (version-1
labels, human labels) still trains it, as a multiple-instance target: the item's best-scored option
is pushed towards acceptable, as the item's score is the maximum over its options.

Batches are length-sorted buckets of items with dynamic padding; every random draw comes from the
seed, so the same data, recipe and seed give the same model on the same machine.
"""

from __future__ import annotations

import json
import logging
import math
import platform
import random
import re
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from builders.core.errors import UserError
from builders.core.items.rng import item_rng

from .backbone import ALL_LAYERS, load_backbone
from .data import LABELS, LabelledQuestion
from .evaluation import metrics_at, roc_auc, shown, threshold_for_recall
from .sba_model import CROSS_ENCODER, INPUT_FORMATS, SEQUENCE, Encoded, Item, SBAClassifier, encode_items

logger = logging.getLogger(__name__)

DEFAULT_BACKBONE = "bert-base-uncased"


@dataclass(frozen=True)
class Recipe:
    """Every training choice; ``train_layers`` counts the top encoder layers trained (0 = all)."""

    name: str
    kind: str  # "sequence" (one sequence per item) or "cross_encoder" (one pair per remaining option)
    input_format: str
    backbone_layers: int  # keep only the bottom N encoder layers of the backbone (0 = all): N/L of the cost
    train_layers: int
    epochs: float
    learning_rate: float
    batch_size: int
    max_length: int
    truncation_side: str
    class_weight: str
    warmup_ratio: float
    weight_decay: float
    calibration_fraction: float
    target_recall: float


RECIPES = {
    # WiCkeD, section 3.2: question text, all frozen but the last encoder layer and the head, 2 epochs at 1e-4.
    "paper": Recipe(
        name="paper", kind=SEQUENCE, input_format="question", backbone_layers=ALL_LAYERS, train_layers=1, epochs=2,
        learning_rate=1e-4, batch_size=16, max_length=512, truncation_side="right", class_weight="none",
        warmup_ratio=0.0, weight_decay=0.0, calibration_fraction=0.0, target_recall=0.95,
    ),
    # The best recipe measured on the shared labels, chosen on a held-out part of the train split
    # (classifiers/README.md): question and options, the bottom 3 layers fully fine-tuned, class-weighted.
    "mcqforge": Recipe(
        name="mcqforge", kind=SEQUENCE, input_format="question_choices", backbone_layers=3, train_layers=ALL_LAYERS, epochs=4,
        learning_rate=5e-5, batch_size=16, max_length=128, truncation_side="left", class_weight="balanced",
        warmup_ratio=0.1, weight_decay=0.01, calibration_fraction=0.15, target_recall=0.95,
    ),
    # SBA as what it means: is some remaining option acceptable once the key is removed? One pair
    # (question, key, option j) per remaining option, P(acceptable), the maximum over the options.
    # Batches count items (all the pairs of an item train together). The default: on version-2 labels it
    # ranks eval.jsonl better than both sequence recipes (classifiers/README.md).
    "cross_encoder": Recipe(
        name="cross_encoder", kind=CROSS_ENCODER, input_format="question_key_option", backbone_layers=2,
        train_layers=ALL_LAYERS, epochs=1, learning_rate=1e-4, batch_size=8, max_length=48, truncation_side="left",
        class_weight="balanced", warmup_ratio=0.1, weight_decay=0.01, calibration_fraction=0.15, target_recall=0.95,
    ),
}
DEFAULT_RECIPE = "cross_encoder"


def describe_recipe(recipe: Recipe) -> str:
    """A preset on one line, for ``--help``: what each setting of the recipe group defaults to under it."""
    layers = "all layers" if recipe.backbone_layers == ALL_LAYERS else f"bottom {recipe.backbone_layers} layers"
    trained = "all trained" if recipe.train_layers == ALL_LAYERS else f"top {recipe.train_layers} trained"
    epochs = f"{recipe.epochs:g} epoch{'' if recipe.epochs == 1 else 's'}"
    return (f"{recipe.name}: {recipe.kind} on {recipe.input_format}, {layers}, {trained}, {epochs} at lr "
            f"{recipe.learning_rate:g}, batch {recipe.batch_size}, {recipe.max_length} tokens "
            f"({recipe.truncation_side}-truncated), class weight {recipe.class_weight}, warmup {recipe.warmup_ratio:g}, "
            f"weight decay {recipe.weight_decay:g}, calibration {recipe.calibration_fraction:g}, "
            f"target recall {recipe.target_recall:g}")
UNKNOWN = -1  # the target of a pair whose acceptability no label states


@dataclass
class TrainResult:
    output: Path
    losses: list[float]  # mean training loss of each logged window, in order
    epoch_losses: list[float]
    threshold: float
    calibration: dict[str, Any] | None
    seconds: float
    provenance: dict[str, Any] = field(default_factory=dict)


def recipe_with(name: str, **overrides: Any) -> Recipe:
    if name not in RECIPES:
        raise UserError(f"unknown recipe {name!r}; choose one of {sorted(RECIPES)}")
    changes = {k: v for k, v in overrides.items() if v is not None}
    recipe = replace(RECIPES[name], **changes)
    _check_recipe(recipe)
    return recipe


def _check_recipe(recipe: Recipe) -> None:
    if recipe.kind not in INPUT_FORMATS:
        raise UserError(f"--kind must be one of {sorted(INPUT_FORMATS)}")
    if recipe.input_format not in INPUT_FORMATS[recipe.kind]:
        raise UserError(f"--input of a {recipe.kind} model must be one of {INPUT_FORMATS[recipe.kind]}")
    if recipe.class_weight not in ("none", "balanced"):
        raise UserError("--class-weight must be 'none' or 'balanced'")
    if recipe.truncation_side not in ("left", "right"):
        raise UserError("--truncation-side must be 'left' or 'right'")
    if not 0.0 <= recipe.calibration_fraction < 1.0:
        raise UserError("--calibration-fraction must be in [0, 1)")
    if recipe.backbone_layers < 0 or recipe.train_layers < 0:
        raise UserError("--backbone-layers and --train-layers must be >= 0 (0 = all)")
    if recipe.epochs <= 0 or recipe.learning_rate <= 0 or recipe.batch_size < 1 or recipe.max_length < 8:
        raise UserError("--epochs, --lr, --batch-size and --max-length must be positive (max length at least 8)")


# ---- data ------------------------------------------------------------------------------------------


def split_calibration(questions: Sequence[LabelledQuestion], fraction: float, seed: int
                      ) -> tuple[list[LabelledQuestion], list[LabelledQuestion]]:
    """(train, calibration), stratified by (source, label); the draw depends only on (seed, id)."""
    if fraction <= 0:
        return list(questions), []
    strata: dict[tuple[str, str | None], list[LabelledQuestion]] = {}
    for q in questions:
        strata.setdefault((q.source, q.label), []).append(q)
    held: set[str] = set()
    for members in strata.values():
        ranked = sorted(members, key=lambda q: item_rng(seed, q.id, "sba_calibration").random())
        held.update(q.id for q in ranked[: round(fraction * len(ranked))])
    return [q for q in questions if q.id not in held], [q for q in questions if q.id in held]


def length_bucketed_batches(lengths: Sequence[int], batch_size: int, rng: np.random.Generator,
                            bucket_batches: int = 32) -> list[np.ndarray]:
    """Shuffle, sort each window of ``bucket_batches`` batches by length, cut, shuffle the batches.

    Padding stays small (neighbours have similar lengths) while each epoch still sees new batches.
    """
    order = rng.permutation(len(lengths))
    window = batch_size * bucket_batches
    batches = []
    for start in range(0, len(order), window):
        chunk = order[start:start + window]
        chunk = chunk[np.argsort([lengths[i] for i in chunk], kind="stable")]
        batches.extend(chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size))
    return [batches[i] for i in rng.permutation(len(batches))]


# ---- model -----------------------------------------------------------------------------------------


_LAYER = re.compile(r"\.(?:layer|layers)\.(\d+)\.")


def freeze_lower_layers(model, train_layers: int) -> tuple[int, int]:
    """Freeze the embeddings and all but the top ``train_layers`` encoder layers; the head always trains.

    Returns (trainable, total) parameter counts. ``train_layers=0`` trains everything.
    """
    base_prefix = model.base_model_prefix + "."
    layer_ids = [int(m.group(1)) for name, _ in model.named_parameters() if (m := _LAYER.search(name))]
    if not layer_ids:
        raise UserError("cannot find the encoder layers of this backbone to freeze; pass --train-layers 0")
    first_trained = max(layer_ids) + 1 - train_layers if train_layers else 0
    for name, parameter in model.named_parameters():
        match = _LAYER.search(name)
        if not name.startswith(base_prefix) or "pooler" in name:
            parameter.requires_grad = True  # the classification head (and BERT's pooler, part of it)
        elif match:
            parameter.requires_grad = int(match.group(1)) >= first_trained
        else:
            parameter.requires_grad = train_layers == ALL_LAYERS  # embeddings, final norms
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return trainable, sum(p.numel() for p in model.parameters())


def seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def pick_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise UserError("--device cuda asked for, but torch sees no GPU")
    return device


# ---- the loop --------------------------------------------------------------------------------------


def train(questions: Sequence[LabelledQuestion], backbone: str, output: Path, recipe: Recipe, seed: int = 0,
          device: str = "auto", max_steps: int | None = None, log_every: int = 10,
          provenance: dict[str, Any] | None = None) -> TrainResult:
    """Fine-tune ``backbone`` on ``questions`` and write the model folder to ``output``."""
    _check_recipe(recipe)
    if recipe.kind == CROSS_ENCODER:
        missing = [q.id for q in questions if q.answer is None]
        if missing:
            raise UserError(f"a cross-encoder trains on (question, key, option) pairs, but {len(missing)} rows have no "
                            f"'answer' (the key index), e.g. {missing[0]}; `classifiers.sba sample` writes it")
    backbone = str(backbone)
    started = time.time()
    device = pick_device(device)
    seed_everything(seed)
    fit, calibration = split_calibration(questions, recipe.calibration_fraction, seed)
    if not any(q.is_sba for q in fit) or all(q.is_sba for q in fit):
        raise UserError("the training data needs both SBA and SCA labels")
    model, tokenizer = load_backbone(backbone, recipe.backbone_layers)
    tokenizer.truncation_side = recipe.truncation_side
    trainable, total = freeze_lower_layers(model, recipe.train_layers)
    model.to(device).train()
    examples = TrainingExamples.build(fit, tokenizer, recipe)
    logger.info("training %d of %d parameters of %s on %s (%d questions, %d sequences; %d held for calibration)",
                trainable, total, backbone, device, len(fit), len(examples.encoded.input_ids), len(calibration))
    steps_per_epoch = math.ceil(len(examples.items) / recipe.batch_size)
    total_steps = max(1, math.ceil(recipe.epochs * steps_per_epoch))
    if max_steps is not None:
        total_steps = min(total_steps, max_steps)
    losses, epoch_losses = _fit(model, tokenizer, examples, recipe, total_steps, device, seed, log_every, started)
    output = Path(output)
    model.eval()
    info = {
        "recipe": asdict(recipe), "backbone": describe_backbone(backbone), "seed": seed, "device": device,
        "steps": total_steps,
        "trainable_parameters": trainable, "total_parameters": total, "epoch_losses": [round(x, 5) for x in epoch_losses],
        "data": {**(provenance or {}), **_data_counts(fit, calibration)},
        "software": _software(),
    }
    _save(model, tokenizer, output, recipe, threshold=0.5, info=info)
    threshold, calibration_report = 0.5, None
    if calibration:
        threshold, calibration_report = calibrate(output, calibration, recipe.target_recall)
        info["calibration"] = calibration_report
    info["seconds"] = round(time.time() - started, 1)
    _save(model, tokenizer, output, recipe, threshold=threshold, info=info)
    logger.info("wrote %s (threshold %.4f) in %.0f s", output, threshold, info["seconds"])
    return TrainResult(output, losses, epoch_losses, threshold, calibration_report, info["seconds"], info)


@dataclass(frozen=True)
class TrainingExamples:
    """The sequences of the training items, with a target per sequence and the item each belongs to.

    A target is 1 (SBA item, or the option its label names), 0, or UNKNOWN (a remaining option of an SBA
    item whose label names none: only the item's best option is trained, towards 1).
    """

    encoded: Encoded
    targets: np.ndarray
    items: list[np.ndarray]  # the sequence indices of each item that has any

    @classmethod
    def build(cls, questions: Sequence[LabelledQuestion], tokenizer, recipe: Recipe) -> "TrainingExamples":
        encoded = encode_items(tokenizer, [Item(q.question, q.choices, q.answer) for q in questions], recipe.kind,
                               recipe.input_format, recipe.max_length)
        targets = np.array([_target(questions[owner], option) for owner, option in zip(encoded.owners, encoded.options, strict=True)],
                           dtype=np.int64)
        order = np.argsort(encoded.owners, kind="stable")
        items = [group for group in np.split(order, np.flatnonzero(np.diff(encoded.owners[order])) + 1) if group.size]
        return cls(encoded, targets, items)

    def class_weights(self, mode: str):
        """Per class; 'balanced' weighs the positive units (known positives, multiple-instance items) as
        much as the negatives."""
        import torch

        if mode == "none":
            return torch.ones(2)
        positives = int(np.sum(self.targets == 1)) + sum(
            1 for item in self.items if np.any(self.targets[item] == UNKNOWN))
        counts = torch.tensor([float(np.sum(self.targets == 0)), float(positives)]).clamp(min=1)
        return counts.sum() / (2 * counts)


def _target(question: LabelledQuestion, option: int) -> int:
    if option < 0 or not question.is_sba:  # a whole-item sequence, or a remaining option of an SCA item
        return int(question.is_sba)
    if question.alternative is None:
        return UNKNOWN
    return int(option == question.alternative)


def _fit(model, tokenizer, examples: TrainingExamples, recipe: Recipe, total_steps: int, device: str, seed: int,
         log_every: int, started: float) -> tuple[list[float], list[float]]:
    """The optimisation loop: (mean loss of each logged window, mean loss of each epoch)."""
    import torch

    optimizer, scheduler = _optimizer(model, recipe, total_steps)
    rng = np.random.default_rng(seed)
    encoded = examples.encoded
    lengths = [max(len(encoded.input_ids[k]) for k in item) for item in examples.items]
    weights = examples.class_weights(recipe.class_weight).to(device)
    with_types = getattr(model.config, "type_vocab_size", 0) > 1
    trained = [p for p in model.parameters() if p.requires_grad]
    step, window, losses, epoch_losses = 0, [], [], []
    while step < total_steps:
        epoch = []
        for batch in length_bucketed_batches(lengths, recipe.batch_size, rng)[: total_steps - step]:
            sequences = np.concatenate([examples.items[i] for i in batch])
            features = {"input_ids": [encoded.input_ids[k] for k in sequences]}
            if with_types:
                features["token_type_ids"] = [encoded.token_type_ids[k] for k in sequences]
            padded = tokenizer.pad(features, return_tensors="pt").to(device)
            loss = weighted_loss(model(**padded).logits, torch.as_tensor(examples.targets[sequences], device=device),
                                 torch.as_tensor(encoded.owners[sequences], device=device), weights)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trained, 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            window.append(loss.item())
            epoch.append(loss.item())
            if len(window) == log_every or step == total_steps:
                losses.append(float(np.mean(window)))
                logger.info("step %d/%d loss %.4f (%.0f s)", step, total_steps, losses[-1], time.time() - started)
                window = []
        epoch_losses.append(float(np.mean(epoch)))
    return losses, epoch_losses


def weighted_loss(logits, targets, owners, weights):
    """Class-weighted cross-entropy over the sequences with a known target, plus, for each item whose
    positive option is unknown, the cross-entropy of its best option against "acceptable"."""
    import torch

    log_p = torch.log_softmax(logits.float(), dim=-1)
    known = targets != UNKNOWN
    known_targets = targets[known]
    total = -(log_p[known, known_targets] * weights[known_targets]).sum()
    weight_sum = weights[known_targets].sum()
    if not bool(known.all()):
        _, item = torch.unique(owners[~known], return_inverse=True)
        best = torch.full((int(item.max()) + 1,), -torch.inf, device=logits.device)
        best = best.scatter_reduce(0, item, log_p[~known, 1], reduce="amax")
        total = total - best.sum() * weights[1]
        weight_sum = weight_sum + weights[1] * best.numel()
    return total / weight_sum


def describe_backbone(backbone: str) -> str:
    """A Hub id as is; a local folder by its last two path parts, so no machine path reaches a model card."""
    path = Path(backbone)
    if not path.exists():
        return backbone
    return "local folder " + "/".join(path.resolve().parts[-2:])


def _optimizer(model, recipe: Recipe, total_steps: int):
    import torch
    from transformers import get_linear_schedule_with_warmup

    decay, no_decay = [], []
    for parameter in model.parameters():
        if parameter.requires_grad:
            (no_decay if parameter.ndim < 2 else decay).append(parameter)  # no decay on biases and norms
    groups = [{"params": decay, "weight_decay": recipe.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    try:  # the fused kernel updates all parameters in one pass: 5x faster than the loop on CPU
        optimizer = torch.optim.AdamW(groups, lr=recipe.learning_rate, fused=True)
    except (RuntimeError, TypeError):
        optimizer = torch.optim.AdamW(groups, lr=recipe.learning_rate)
    warmup = int(recipe.warmup_ratio * total_steps)
    return optimizer, get_linear_schedule_with_warmup(optimizer, warmup, total_steps)


def calibrate(model_dir: Path, calibration: Sequence[LabelledQuestion], target_recall: float
              ) -> tuple[float, dict[str, Any]]:
    """Choose the threshold on held-out labels, scored by the same inference WiCkeD runs."""
    classifier = SBAClassifier.load(str(model_dir))
    scores = classifier.scores([(q.question, q.choices, q.answer) for q in calibration])
    truth = [q.is_sba for q in calibration]
    if not any(truth):
        logger.warning("no SBA question among the %d calibration questions; keeping threshold 0.5", len(calibration))
        return 0.5, {"questions": len(calibration), "note": "no SBA question held out"}
    threshold = threshold_for_recall(truth, scores, target_recall)
    at = metrics_at(truth, scores, threshold)
    auc = roc_auc(truth, scores)
    logger.info("calibration: threshold %.4f reaches recall %.3f at precision %.3f on %d held-out questions",
                threshold, at.recall, at.precision or 0.0, len(calibration))
    return threshold, {"questions": len(calibration), "target_recall": target_recall, **at.to_dict(),
                       "auc": None if auc is None else round(auc, 4)}


def train_summary(result: TrainResult, recipe: Recipe) -> str:
    """What ``train`` ends with: where the model went, the mean loss of each epoch (a step's loss is noise), and the
    held-out figures the threshold was chosen on."""
    losses = ", ".join(f"{loss:.4f}" for loss in result.epoch_losses)
    lines = [f"wrote {result.output}: recipe {recipe.name}, {result.seconds:.0f} s",
             f"  mean loss per epoch: {losses}"]
    held = result.calibration
    if not held:
        lines.append(f"  no held-out share (--calibration-fraction 0): threshold {result.threshold:.4f}")
    elif "recall" not in held:
        lines.append(f"  held out: {held['questions']} questions, no SBA among them: threshold {result.threshold:.4f}")
    else:
        auc = "n/a" if held.get("auc") is None else f"{held['auc']:.3f}"
        lines.append(f"  held out: {held['questions']} questions, ROC AUC {auc}; threshold {result.threshold:.4f}: "
                     f"recall {shown(held['recall'])}, precision {shown(held['precision'])}")
    return "\n".join(lines)


def _data_counts(fit: Sequence[LabelledQuestion], calibration: Sequence[LabelledQuestion]) -> dict[str, Any]:
    def counts(questions):
        table = Counter((q.source, q.label) for q in questions)
        return {source: {label: table[(source, label)] for label in LABELS}
                for source in sorted({q.source for q in questions})}

    return {"train_questions": len(fit), "calibration_questions": len(calibration),
            "train_counts": counts(fit), "calibration_counts": counts(calibration)}


def _software() -> dict[str, str]:
    import torch
    import transformers

    from builders.core.version import __version__

    return {"mcqforge": __version__, "torch": torch.__version__, "transformers": transformers.__version__,
            "python": platform.python_version()}


def _save(model, tokenizer, output: Path, recipe: Recipe, threshold: float, info: dict[str, Any]) -> None:
    config = model.config
    config.id2label = dict(enumerate(LABELS))
    config.label2id = {label: i for i, label in enumerate(LABELS)}
    config.sba_threshold = float(threshold)
    config.sba_kind = recipe.kind
    config.sba_input = recipe.input_format
    config.sba_max_length = recipe.max_length
    config.sba_truncation_side = recipe.truncation_side
    config.sba_training = json.loads(json.dumps(info, default=str))  # plain JSON types only
    output.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output)
    tokenizer.save_pretrained(output)

