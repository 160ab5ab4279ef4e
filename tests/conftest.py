"""Shared test setup.

huggingface_hub and datasets read HF_ENDPOINT, HF_HOME, HF_HUB_DISABLE_XET, ... once, when
they are imported. So this module, which pytest imports before any test module, picks the
LocalHub port and exports the environment first, and only then imports the libraries.
"""

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator

import pytest

from hub_server import LocalHub, free_port

pytest_plugins = ["llm_server"]  # the `llm_server` fixture (llmock on 127.0.0.1) for every test module

if "huggingface_hub" in sys.modules or "datasets" in sys.modules:
    raise RuntimeError("huggingface_hub/datasets were imported before tests/conftest.py could set HF_ENDPOINT")

HUB_PORT = free_port()
HF_HOME = tempfile.mkdtemp(prefix="mcqforge-hf-home-")
atexit.register(shutil.rmtree, HF_HOME, ignore_errors=True)

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
for token_variable in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
    os.environ.pop(token_variable, None)  # a developer's real token must never reach any test

import datasets  # noqa: E402  (must come after the environment above)

# The dataset-viewer lives on another host ("datasets-server." + HF_ENDPOINT host): loading the
# main revision would otherwise try to resolve datasets-server.127.0.0.1 through DNS.
datasets.config.USE_PARQUET_EXPORT = False


@pytest.fixture(scope="session")
def local_hub() -> Iterator[LocalHub]:
    """A LocalHub serving HF_ENDPOINT for the whole session, with HF_TOKEN set to its token."""
    with LocalHub(port=HUB_PORT) as hub, pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_TOKEN", hub.token)
        yield hub
