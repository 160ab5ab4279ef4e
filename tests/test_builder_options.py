"""Each builder's options: one typed, frozen object made once from the checked arguments, which the build takes
instead of the namespace; checking never changes the arguments, and what a build derived for an option left unset
is what its build_config.yaml records."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
from pathlib import Path

import pytest
import yaml
from fixtures import MMLU_TEST

from builders.core.release import build_config
from builders.core.pipeline import cli
from builders.core.sources.spec import SAMPLES_DIR
from builders.core.runtime.content import content_revision

BUILDERS = ("wicked", "gsm_mc", "math_mc", "python_io", "mmlu_pro_plus", "contrast_sets", "perturbations")


def builder_module(name: str):
    return importlib.import_module(f"builders.{name}")


@pytest.mark.parametrize("name", BUILDERS)
def test_each_builder_makes_frozen_options_once_and_leaves_the_arguments_as_parsed(name):
    module = builder_module(name)
    args = cli.builder_parser(module.BUILDER).parse_args(["--source", "sample", "--unsafe-no-sandbox"]
                                                         if name == "python_io" else ["--source", "sample"])
    parsed = vars(args).copy()
    module.BUILDER.check_arguments(args)
    options = module.BUILDER.make_options(args)
    assert vars(args) == parsed  # no check fills in a default by changing the namespace
    assert isinstance(options, module.Options) and dataclasses.is_dataclass(options)
    assert not isinstance(options, argparse.Namespace)
    field = dataclasses.fields(options)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(options, field, None)


def test_a_builder_whose_options_are_the_namespace_is_refused_before_any_source_is_read():
    wicked = builder_module("wicked")
    loose = dataclasses.replace(wicked.BUILDER, make_options=lambda args: args)
    with pytest.raises(TypeError, match="^wicked: make_options gave a Namespace, not a frozen dataclass$"):
        cli.main(loose, ["--source", "no/such/folder", "--sba-classifier", "none", "--preview", "1"])


def test_the_python_api_hands_the_build_its_options_object(monkeypatch):
    wicked = builder_module("wicked")
    received = []

    def build(source, options):
        received.append(options)
        return wicked.build(source, options)

    monkeypatch.setattr(wicked.builder, "BUILDER", dataclasses.replace(wicked.BUILDER, build=build))
    result = wicked.builder.build_dataset(MMLU_TEST, seed=3, variants=2, sba_classifier="none")
    assert result.report.passed and list(result.configs) == ["original", "variant_0", "variant_1"]
    [options] = received
    assert options == wicked.Options(seed=3, variants=2, nota_position="last", sba=options.sba)
    assert (options.sba.classifier, options.sba.judge, options.sba.llm, options.sba.classifies) == \
        ("none", None, None, False)


def test_derived_defaults_are_recorded_and_replayed(tmp_path):
    """The sample's own predictions (GSM-MC) are derived in the options, not written into the namespace; the
    build config records them as before, and a rebuild from it reads the same file and builds the same release."""
    gsm_mc = builder_module("gsm_mc")
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
    args = argparse.Namespace(threshold=None, embedder=None, seed=0, predictions=[], choices=4)

    @dataclasses.dataclass(frozen=True)
    class Options:
        threshold: float
        predictions: tuple[str, ...]
        choices: int
        encoding: str  # no option of that name: never recorded

    built = build_config.arguments_as_built(args, Options(0.78, ("p.jsonl",), 5, "x"))
    # only options left unset take the derived value; a given one is recorded as given
    assert vars(built) == {"threshold": 0.78, "embedder": None, "seed": 0, "predictions": ("p.jsonl",), "choices": 4}
    assert args.threshold is None


def _parquet(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.parquet"))}
