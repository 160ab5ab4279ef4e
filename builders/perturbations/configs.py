"""What each config of the perturbation release changes, and which configs a build makes.

A config is one small, meaning-preserving change to the benchmark (Alzahrani et al., 2024): the option
order, the gold position, the option symbols, the prompt wording, or the context (demonstrations). Each
config is compared with a baseline config that differs from it in that change only: `original` (the
subject's first few-shot items as demonstrations, as lm-eval's MMLU task), or `original_zero_shot` for the
zero-shot `gold_at_<L>` configs (the paper's Table 2).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

from builders.core.errors import UserError
from builders.core.items.record import LETTERS, MCQRecord
from builders.core.sources.loading import LoadedSource
from builders.perturbations import prompts

logger = logging.getLogger(__name__)

# The paper's two symbol sets; options beyond the fourth take the extension, in order. The common
# extension stays with ASCII punctuation, the rare one with Latin/Cyrillic letters rarely used as labels.
SYMBOL_SETS: dict[str, tuple[str, ...]] = {"common": ("$", "&", "#", "@"), "rare": ("œ", "§", "З", "ü")}
SYMBOL_EXTENSIONS: dict[str, tuple[str, ...]] = {
    "common": ("%", "*", "+", "=", "~", "^"),
    "rare": ("ß", "Ж", "ø", "¶", "Ð", "þ"),
}
NAME = "perturbations"
ORIGINAL = "original"
ORIGINAL_ZERO_SHOT = "original_zero_shot"


def symbols(name: str) -> tuple[str, ...]:
    return SYMBOL_SETS[name] + SYMBOL_EXTENSIONS[name]


def subject_group(record: MCQRecord) -> str:
    """The subject an item's demonstrations come from."""
    return record.subject or record.category or ""


@dataclass(frozen=True)
class ConfigSpec:
    """What one config changes. ``transformed`` says which splits get the option/label change."""

    name: str
    family: str
    description: str
    order: str = "keep"  # keep | swap_fixed | derangement | shuffle | gold_at
    gold_position: int | None = None
    transformed: str = "all"  # all | fewshot (only the few-shot split: the paper's setting i)
    symbols: str | None = None  # a SYMBOL_SETS key; None: letters A, B, C, ...
    symbol_order: str = "fixed"  # fixed | shuffled (per item)
    demonstrations: str = "same_subject"  # same_subject | other_subject | trivial | none
    context_answer: str | None = None  # correct | wrong: the item itself, answered, as the last demonstration
    with_subject: bool = True
    answer_prefix: str = prompts.ANSWER_PREFIX

    @property
    def changes_options(self) -> bool:
        """Whether the config reorders or relabels options (items that cannot take it are copied unchanged)."""
        return self.order != "keep" or self.symbols is not None

    def transforms(self, split: str, fewshot_split: str | None) -> bool:
        return self.changes_options and (self.transformed == "all" or split == fewshot_split)

    @property
    def relabels_only(self) -> bool:
        """New symbols, the options in source order: only a reference to an option's label breaks."""
        return self.order == "keep" and self.symbols is not None

    def promises_demonstration_answers(self, fewshot_split: str | None) -> bool:
        """Whether every demonstration answers ``gold_position`` (setting i and ii): then the demonstrations are
        the subject's few-shot items the config moves, never one it copies unchanged."""
        return (self.order == "gold_at" and self.demonstrations == "same_subject"
                and self.transforms(fewshot_split or "", fewshot_split))

    @property
    def changes_only_demonstrations(self) -> bool:
        """Whether the config differs from its baseline in the demonstrations only (a build that shows no
        demonstrations would make it a copy of `original`)."""
        return self.transformed == "fewshot" or self.demonstrations in ("other_subject", "trivial")

    @property
    def baseline(self) -> str | None:
        """The config this one is compared with (None for the baselines themselves)."""
        if self.name in (ORIGINAL, ORIGINAL_ZERO_SHOT):
            return None
        return ORIGINAL_ZERO_SHOT if self.demonstrations == "none" else ORIGINAL


def config_specs(positions: int, with_other_subjects: bool = True) -> list[ConfigSpec]:
    """Every config, in release order; ``positions`` is the largest number of options of any item."""
    letters = LETTERS[:positions]
    specs = [
        ConfigSpec(ORIGINAL, "original", "the source unchanged, with the subject's first few-shot items as "
                   "demonstrations (the baseline)"),
        ConfigSpec("swap_fixed", "choice_order", "one fixed set of position swaps applied to every item", order="swap_fixed"),
        ConfigSpec("derangement", "choice_order", "a per-item random permutation in which every option moves", order="derangement"),
        ConfigSpec("shuffle", "choice_order", "a per-item random permutation", order="shuffle"),
        ConfigSpec(ORIGINAL_ZERO_SHOT, "original", "the source unchanged, zero-shot (the baseline of `gold_at_<L>`)",
                   demonstrations="none"),
    ]
    specs += [ConfigSpec(f"gold_at_{L}", "gold_position", f"the gold swapped to {L} in every split; zero-shot",
                         order="gold_at", gold_position=i, demonstrations="none") for i, L in enumerate(letters)]
    specs += [ConfigSpec(f"fewshot_gold_at_{L}", "gold_position",
                         f"only the few-shot split has its gold swapped to {L}; other splits unchanged (setting i)",
                         order="gold_at", gold_position=i, transformed="fewshot") for i, L in enumerate(letters)]
    specs += [ConfigSpec(f"fewshot_and_test_gold_at_{L}", "gold_position",
                         f"the gold swapped to {L} in every split, demonstrations included (setting ii)",
                         order="gold_at", gold_position=i) for i, L in enumerate(letters)]
    for name, shown in SYMBOL_SETS.items():
        text = " ".join(shown)
        specs += [
            ConfigSpec(f"symbols_{name}", "symbols", f"labels {text} instead of letters", symbols=name),
            ConfigSpec(f"symbols_{name}_shuffled_symbols", "symbols",
                       f"labels {text} in a per-item random order; options in source order", symbols=name,
                       symbol_order="shuffled"),
            ConfigSpec(f"symbols_{name}_shuffled_content", "symbols",
                       f"labels {text} in order; options shuffled (the `shuffle` permutation)", symbols=name,
                       order="shuffle"),
        ]
    specs += [
        ConfigSpec("no_subject", "prompt_wording", "the instruction without the subject", with_subject=False),
        ConfigSpec("correct_answer", "prompt_wording", '"Correct answer:" instead of "Answer:"',
                   answer_prefix="Correct answer:"),
        ConfigSpec("answer_in_context", "in_context", "the item itself, with its correct answer, as the last demonstration",
                   context_answer="correct"),
        ConfigSpec("wrong_answer_in_context", "in_context",
                   "the item itself, with a wrong answer drawn per item, as the last demonstration", context_answer="wrong"),
    ]
    if with_other_subjects:
        specs.append(ConfigSpec("ood_fewshot", "in_context", "demonstrations from another subject, drawn per item",
                                demonstrations="other_subject"))
    specs.append(ConfigSpec("trivial_fewshot", "in_context",
                            "demonstrations replaced by trivial questions about text and language (shipped file)",
                            demonstrations="trivial"))
    return specs


def select_specs(source: LoadedSource, only: Sequence[str] | None, shots: int) -> list[ConfigSpec]:
    """The configs this build makes, in release order: every config (``--only``: those named and their baselines),
    less those that change only the demonstrations when the build shows none."""
    positions = max((len(r.choices) for records in source.items.values() for r in records), default=4)
    fewshot = source.items.get(source.benchmark.fewshot_split or "", [])
    specs = config_specs(positions, with_other_subjects=len({subject_group(r) for r in fewshot}) > 1)
    if not shows_demonstrations(source, shots):
        # Without demonstrations these configs would be copies of `original`, reported as "no effect".
        left_out = [s.name for s in specs if s.changes_only_demonstrations]
        asked = sorted(set(only or ()) & set(left_out))
        if asked:
            raise UserError(f"--only: {asked} change only the demonstrations, and this build shows none "
                            f"({no_demonstrations_reason(source, shots)})")
        logger.warning("%s: leaving out the configs that change only the demonstrations (%d)",
                       no_demonstrations_reason(source, shots), len(left_out))
        specs = [s for s in specs if not s.changes_only_demonstrations]
    return selected_specs(specs, only)


def shows_demonstrations(source: LoadedSource, shots: int) -> bool:
    return shots > 0 and bool(source.items.get(source.benchmark.fewshot_split or ""))


def no_demonstrations_reason(source: LoadedSource, shots: int) -> str:
    return "--shots 0" if shots <= 0 else f"the source has no few-shot split {source.benchmark.fewshot_split!r}"


def selected_specs(specs: list[ConfigSpec], only: Sequence[str] | None) -> list[ConfigSpec]:
    """``--only``: the named configs and their baselines (`original` always), in release order."""
    if not only:
        return specs
    known = {s.name for s in specs}
    unknown = sorted(set(only) - known)
    if unknown:
        raise UserError(f"--only: unknown configs {unknown}; choose from {sorted(known)}")
    wanted = {ORIGINAL, *only} | {s.baseline for s in specs if s.name in only and s.baseline}
    return [s for s in specs if s.name in wanted]


def parse_swaps(text: str) -> tuple[tuple[int, int], ...]:
    """``--swaps``: 'adjacent' (A<->B, C<->D, ...) or disjoint letter pairs such as 'AC,BD'."""
    if text == "adjacent":
        return tuple((i, i + 1) for i in range(0, len(LETTERS) - 1, 2))
    pairs = []
    for pair in text.replace(" ", "").upper().split(","):
        if len(pair) != 2 or pair[0] == pair[1] or any(c not in LETTERS for c in pair):
            raise UserError(f"--swaps: {pair!r} is not a pair of two different letters (e.g. 'AC,BD')")
        pairs.append((LETTERS.index(pair[0]), LETTERS.index(pair[1])))
    used = [i for pair in pairs for i in pair]
    if len(used) != len(set(used)):
        raise UserError("--swaps: a position appears in two swaps; the swaps must be disjoint")
    return tuple(pairs)


def check_swaps_fit(text: str, swaps: Sequence[tuple[int, int]], source: LoadedSource) -> None:
    """Explicit ``--swaps`` must name positions that some item has: a swap no item can take would make
    `swap_fixed` a silent copy of `original` (``adjacent`` is meant for any number of options)."""
    if text == "adjacent":
        return
    positions = max(len(r.choices) for records in source.items.values() for r in records)
    beyond = [LETTERS[a] + LETTERS[b] for a, b in swaps if max(a, b) >= positions]
    if beyond:
        raise UserError(f"--swaps: {', '.join(beyond)} names a position past the last option of every item "
                        f"(at most {positions} options, A-{LETTERS[positions - 1]})")


def inherent_baselines(specs: Sequence[ConfigSpec]) -> dict[str, str]:
    """The shortcut-audit rules that the gold-position configs make right by design."""
    inherent = {}
    last = max((s.gold_position for s in specs if s.gold_position is not None), default=None)
    for spec in specs:
        if spec.order != "gold_at" or spec.transformed != "all":
            continue
        reason = f"every transformable gold is at position {spec.gold_position} by design"
        inherent[f"{spec.name}/fewshot_position_prior"] = reason
        inherent[f"{spec.name}/choices_only_model"] = reason + ", and the model sees positions"
        if spec.gold_position == 0:
            inherent[f"{spec.name}/always_first"] = reason
        if spec.gold_position == last:
            inherent[f"{spec.name}/always_last"] = reason
    return inherent
