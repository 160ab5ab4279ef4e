"""Each builder's release from its embedded sample (``--source sample`` and the builder's ``sample_options``), built
in-process once per test session and shared: the conformance suite, the inspect tests and the template's test read
the same folders instead of building their own.

A release is built lazily, the first time a test asks for it, so that a run of one test file builds only the
builders it reads, and once for all pytest-xdist workers, which share the folder.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from filelock import FileLock

from builders.core.pipeline import cli
from builders.registry import BUILDERS, load_builder

QUIET = ("--log-level", "WARNING", "--no-progress")
# The tests that embed texts, and those that read (so may be the first to build) the sample release of a builder
# that embeds, run in one pytest-xdist worker (``--dist loadgroup``): importing sentence-transformers and loading
# the embedder costs about 8 CPU-seconds in each worker that does it.
EMBEDDER_GROUP = pytest.mark.xdist_group("embedder")


def embeds_texts(name: str) -> bool:
    """Whether builder ``name`` embeds texts (it takes ``--embedder``)."""
    return "embedder" in {field.name for field in dataclasses.fields(load_builder(name).options)}


def every_builder() -> list:
    """One parameter per builder of the registry, read when the tests are collected (``tests/test_contributing.py``
    calls the conformance checks on the toy builder it adds); those of the builders that embed texts are in the
    embedder's group."""
    return [pytest.param(name, id=name, marks=[EMBEDDER_GROUP] if embeds_texts(name) else []) for name in BUILDERS]


def sample_argv(name: str) -> list[str]:
    """The words of the sample build of builder ``name``, as a user types them after ``python -m builders NAME``."""
    return ["--source", "sample", *load_builder(name).sample_options]


class SampleReleases:
    """The release folders of the session's sample builds, under ``root``: ``release(name)`` the first build,
    ``again(name)`` a second one from the same words, ``rebuilt(name)`` the rebuild from the first one's
    ``build_config.yaml`` (``--config``)."""

    def __init__(self, root: Path):
        self.root = root

    def _built(self, name: str, kind: str, argv: list[str]) -> Path:
        out = self.root / kind / name
        out.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(out) + ".lock"):  # the pytest-xdist workers share the root: the first one builds
            if not (out / "build_config.yaml").is_file():
                status = cli.main(load_builder(name), [*argv, "--output", str(out), *QUIET])
                assert status == 0, f"{name}: the {kind} sample build exited with {status}"
        return out

    def release(self, name: str) -> Path:
        return self._built(name, "first", sample_argv(name))

    def again(self, name: str) -> Path:
        return self._built(name, "again", sample_argv(name))

    def rebuilt(self, name: str) -> Path:
        config = self.release(name) / "build_config.yaml"
        return self._built(name, "rebuilt", ["--config", str(config)])
