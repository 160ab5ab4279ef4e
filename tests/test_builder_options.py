"""Each builder's options: one typed, frozen object made once from the checked arguments, which the build takes
instead of the namespace; checking never changes the arguments, and what a build derived for an option left unset
is what its build_config.yaml records."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
from pathlib import Path
from typing import ClassVar

import pytest
import yaml
from fixtures import MMLU_TEST

from builders.core.errors import UserError
from builders.core.options.declare import changed_options, option, with_default
from builders.core.pipeline import cli
from builders.core.pipeline.options import BuildOptions
from builders.core.runtime.content import content_revision
from builders.core.sources.spec import SAMPLES_DIR
from builders.registry import BUILDERS, load_builder


@pytest.mark.parametrize("name", list(BUILDERS))
def test_each_builder_makes_frozen_options_once_and_leaves_the_arguments_as_parsed(name):
    builder = load_builder(name)
    args = cli.builder_parser(builder).parse_args(["--source", "sample", *builder.sample_options])
    parsed = vars(args).copy()
    options = builder.options_of(args)
    assert vars(args) == parsed  # no check fills in a default by changing the namespace
    assert dataclasses.is_dataclass(options) and not isinstance(options, argparse.Namespace)
    field = dataclasses.fields(options)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(options, field, None)


def test_derived_defaults_fill_only_the_options_left_unset():
    """``derived()`` fills in what depends on other options; an option the user set is never changed by it."""
    wicked = importlib.import_module(BUILDERS["wicked"])

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Changing(wicked.Options):
        def derived(self):
            return dataclasses.replace(self, variants=self.variants + 1)

    changing = dataclasses.replace(wicked.BUILDER, options=Changing)
    with pytest.raises(TypeError, match=r"^wicked: derived\(\) changed options that were set: \['variants'\]$"):
        cli.main(changing, ["--source", "no/such/folder", "--sba-classifier", "none", "--preview", "1"])


def test_every_mixins_checks_run_base_classes_first():
    """Each class of the options may say its rules (``check``): the core runs every one, none calls another's."""
    ran = []

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Shared(BuildOptions):
        GROUP: ClassVar[str] = "shared"
        size: int = option(1)

        def check(self):
            ran.append("shared")

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Own(Shared):
        GROUP: ClassVar[str] = "own"
        name: str = option("x")

        def check(self):
            ran.append("own")
            if self.size > 3:
                raise UserError("--size is at most 3")

    wicked = importlib.import_module(BUILDERS["wicked"])
    builder = dataclasses.replace(wicked.BUILDER, options=Own)
    assert builder.options_from(["--size", "2"]) == Own(benchmark="mmlu", size=2) and ran == ["shared", "own"]
    with pytest.raises(UserError, match="^--size is at most 3$"):
        builder.options_from(["--size", "4"])


def test_the_python_api_hands_the_build_its_options_object(monkeypatch):
    wicked = importlib.import_module(BUILDERS["wicked"])
    received = []

    def build(source, options, run):
        received.append(options)
        return wicked.build(source, options, run)

    result = dataclasses.replace(wicked.BUILDER, build=build).build_dataset(MMLU_TEST, seed=3, variants=2,
                                                                         sba_classifier="none")
    assert result.report.passed and list(result.configs) == ["original", "variant_0", "variant_1"]
    [options] = received
    assert options == wicked.Options(benchmark="mmlu", source=None, seed=3, variants=2, sba_classifier="none")
    assert (options.sba_judge, options.sba_threshold, options.classifies, options.llm_models()) == \
        (None, None, False, [])


@pytest.mark.slow
def test_derived_defaults_are_recorded_and_replayed(tmp_path):
    """The sample's own predictions (GSM-MC) are derived in the options, not written into the namespace; the
    build config records them as before, and a rebuild from it reads the same file and builds the same release."""
    gsm_mc = importlib.import_module(BUILDERS["gsm_mc"])
    assert gsm_mc.main(["--source", "sample", "--output", str(tmp_path / "a"), "--no-progress"]) == 0
    recorded = yaml.safe_load((tmp_path / "a" / "build_config.yaml").read_text())["params"]
    sample = SAMPLES_DIR / "gsm8k" / "predictions.jsonl"
    assert recorded["predictions"] == [{"local": "predictions.jsonl", "content": recorded["predictions"][0]["content"]}]
    assert content_revision(sample) == recorded["predictions"][0]["content"]
    assert recorded["choices"] == 4 and recorded["generate_with"] == [] and recorded["max_tokens"] is None
    assert gsm_mc.main(["--config", str(tmp_path / "a" / "build_config.yaml"), "--source", "sample",
                        "--output", str(tmp_path / "b"), "--no-progress"]) == 0
    assert (tmp_path / "b" / "build_config.yaml").read_text() == (tmp_path / "a" / "build_config.yaml").read_text()
    assert _parquet(tmp_path / "a") == _parquet(tmp_path / "b")


def test_an_option_left_unset_records_the_default_its_options_derived():
    """What the build config records is every recorded option as the build used it: the derived default of one left
    unset, the given value of one set; runtime options and fields that are no option, never."""

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Options(BuildOptions):
        GROUP: ClassVar[str] = "test"
        threshold: float | None = option(None)
        predictions: tuple[str, ...] = option(())
        workers: int = option(2, runtime=True)
        encoding: str = "x"  # no option: never recorded

        def derived(self):
            return dataclasses.replace(self, threshold=self.threshold or 0.78, predictions=self.predictions or ("p",),
                                       encoding="y")

    wicked = importlib.import_module(BUILDERS["wicked"])
    builder = dataclasses.replace(wicked.BUILDER, options=Options)
    options = builder.options_from(["--predictions", "a.jsonl"])
    assert (options.threshold, options.predictions, options.encoding) == (0.78, ("a.jsonl",), "y")
    params = builder.params(argparse.Namespace(), options, cli.builder_parser(builder))
    assert params == {"limit": None, "max_excluded": 0.5, "predictions": ["a.jsonl"], "seed": 0, "splits": None,
                      "strict": False, "subjects": None, "threshold": 0.78}
    assert changed_options(Options(predictions=("a",)), Options(predictions=("b",))) == ["predictions"]


def _parquet(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.parquet"))}


def test_the_prediction_options_are_one_mixin_whose_sample_predictions_are_derived(tmp_path):
    """GSM-MC, MATH-MC and PythonIO share one declaration of the prediction and consensus options: a builder made
    of the mixins records exactly the keys GSM-MC records, the sample's own predictions derived for ``--source
    sample`` (by content hash), and refuses pools without predictions before any source is read."""
    from builders.core.pipeline.builder import Builder
    from builders.core.sources.loading import Benchmark
    from builders.from_predictions.options import ConsensusOptions, NumericPredictionOptions

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Options(NumericPredictionOptions, ConsensusOptions):
        GROUP: ClassVar[str] = "made up"
        splits: tuple[str, ...] | None = with_default(BuildOptions, "splits", ("test",))
        keep_unit_multiples: bool = option(False)
        gsm8k_questions: str | None = option(None)

    gsm8k = Benchmark(name="gsm8k", hub_id="openai/gsm8k", config="main", splits=("train", "test"), to_item=None,
                      license="mit", citation="", pretty_name="GSM8K")
    made_up = Builder(name="made_up", title="x", description="x", citation="", benchmarks=[gsm8k], options=Options,
                      build=lambda source, options, run: None, default_config="default")
    options = made_up.options_from(["--source", "sample"])
    sample = SAMPLES_DIR / "gsm8k" / "predictions.jsonl"
    assert (options.predictions, options.draw, options.llm_models()) == ((str(sample),), "balanced", [])
    parser = cli.builder_parser(made_up)
    recorded = made_up.params(argparse.Namespace(), options, parser)
    gsm_mc = load_builder("gsm_mc")  # GSM-MC's own declaration of the same options
    gsm_args = cli.builder_parser(gsm_mc).parse_args(["--source", "sample"])
    assert recorded == gsm_mc.params(gsm_args, gsm_mc.options_of(gsm_args), cli.builder_parser(gsm_mc))
    assert recorded["predictions"] == [{"local": "predictions.jsonl", "content": content_revision(sample)}]
    titles = [group.title for group in parser._action_groups[2:]]
    assert titles == ["source and release (shared by every builder)", "made up", "distractors from models' predictions",
                      "consensus check", "side outputs (runtime: not recorded in build_config.yaml)",
                      "LLM endpoint (runtime: not recorded in build_config.yaml)"]
    with pytest.raises(UserError, match=r"^distractor pools need --predictions PATH\.\.\. and/or --generate-with"):
        made_up.options_from(["--source", str(tmp_path)])
    assert made_up.options_from(["--source", str(tmp_path), "--distractors", "random"]).predictions == ()
