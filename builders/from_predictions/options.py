"""The option groups of the builders made from models' predictions (GSM-MC, MATH-MC, PythonIO), each declared once
as a mixin of their options: the predictions and the sets (:class:`PredictionOptions`, with the LLM endpoint of
``--generate-with``; :class:`NumericPredictionOptions` where the answers are numbers) and the consensus check
(:class:`ConsensusOptions`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

from builders.core.errors import UserError
from builders.core.llm.settings import LLMEndpoint
from builders.core.options.argtypes import positive_int, whole_number
from builders.core.options.declare import option, with_default
from builders.core.pipeline.cli import check_writable_file
from builders.core.pipeline.options import BuildOptions
from builders.core.sources.spec import SAMPLES_DIR

from .consensus import RULE, REASON

MAX_SETS = 1000  # each set is a config of the release
SIDE_OUTPUTS = "side outputs"
DRAW_HELP = ("how a set draws from the pool: 'weighted' by how many models gave each wrong answer (frequent ones are "
             "the plausible ones), 'uniform' as the paper")


def sample_predictions(benchmark: str | None, source: str | None) -> tuple[str, ...]:
    """The predictions of the sample's models, which the embedded sample of ``benchmark`` carries (none but for
    ``--source sample``)."""
    sample = SAMPLES_DIR / str(benchmark) / "predictions.jsonl"
    return (str(sample),) if source == "sample" and sample.is_file() else ()


@dataclass(frozen=True, kw_only=True)
class PredictionOptions(BuildOptions, LLMEndpoint):
    """Distractors that are models' wrong answers: the predictions read or generated (the sample's own, for a
    ``--source sample`` build), and the sets drawn from the pools."""

    GROUP: ClassVar[str] = "distractors from models' predictions"

    predictions: tuple[str, ...] = option((), action="extend", metavar="[MODEL=]PATH",
                                          help="predictions: lm-evaluation-harness samples_<task>_*.jsonl logs, or "
                                               "plain JSON lines {model, id | question_index [+ split] | question, "
                                               "output, output_kind?}; a folder is read recursively; MODEL= names the "
                                               "model (default with --source sample: the sample's own)")
    generate_with: tuple[str, ...] = option((), action="extend", metavar="MODEL",
                                            help="ask these models for predictions (greedy, the benchmark's standard "
                                                 "few-shot prompt)")
    max_tokens: int | None = option(None, type=positive_int, help="longest generation (default: the prompt's)")
    choices: int = option(4, type=whole_number(2, 8), help="options per question, 2 to 8")
    sets: int = option(10, type=whole_number(1, MAX_SETS),
                       help="draws of distractors and order (configs set_0...); an item whose pool holds no more "
                            "distractors than a set shows has the same options in every set (the card counts them)")
    distractors: str = option("pool", choices=["pool"], help="'pool': models' wrong answers")
    draw: str = option("weighted", choices=["weighted", "uniform"], help=DRAW_HELP)
    save_predictions: Path | None = option(None, metavar="PATH", runtime=True, group=SIDE_OUTPUTS,
                                           help="also write the generated predictions here, as plain JSON lines")
    pool: Path | None = option(None, metavar="REPORT_PATH", runtime=True, group=SIDE_OUTPUTS,
                               help="write the per-question pool report (JSON lines) here")

    def check(self) -> None:
        for flag, path in (("--pool", self.pool), ("--save-predictions", self.save_predictions)):
            if path:
                check_writable_file(Path(path), flag)  # written at the end: found before the build and any paid call
        has_predictions = self.predictions or sample_predictions(self.benchmark, self.source)
        if self.distractors == "pool" and not (has_predictions or self.generate_with):
            raise UserError("distractor pools need --predictions PATH... and/or --generate-with MODEL...")

    def derived(self) -> PredictionOptions:
        """Without ``--predictions`` and ``--generate-with``, a ``--source sample`` build reads the predictions of
        the sample's models: what it records."""
        if self.predictions or self.generate_with:
            return self
        return replace(self, predictions=sample_predictions(self.benchmark, self.source))

    def llm_models(self) -> list[str]:
        return list(self.generate_with)


@dataclass(frozen=True, kw_only=True)
class NumericPredictionOptions(PredictionOptions):
    """Numeric answers: random distractors near the gold (the paper's ablation), and the balanced draw."""

    distractors: str = with_default(PredictionOptions, "distractors", "pool", choices=["pool", "random"],
                                    help="'pool': models' wrong answers; 'random': random numbers near the gold (the "
                                         "paper's ablation)")
    draw: str = with_default(PredictionOptions, "draw", "balanced", choices=["balanced", "weighted", "uniform", "rank"],
                             help=DRAW_HELP + "; 'balanced' (default) weighted too, of the key's kind (integer or not, "
                                  "sign) and tilted so that the key's place among the numeric options (rank, nearness "
                                  "to their mean and median) is no cue (models' wrong answers scatter around the key, "
                                  "which the 'weighted' draw leaves in the middle); 'rank', the default before "
                                  "'balanced', draws the key's rank uniformly first (kept to rebuild older releases)")


@dataclass(frozen=True, kw_only=True)
class ConsensusOptions:
    """The consensus check (:mod:`.consensus`): items whose key most models contradict."""

    GROUP: ClassVar[str] = "consensus check"

    keep_suspect_keys: bool = option(False, help="keep the items whose key most models contradict (consensus check: "
                                                 f"{RULE.describe().replace('%', '%%')}); they are excluded as "
                                                 f"{REASON} by default")
