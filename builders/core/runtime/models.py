"""The models a build loads on this machine (WiCkeD's SBA classifier, an embedder), checked before any source is
read: a model that cannot be loaded is one ``error:`` line in a second, not after the whole source was read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from builders.core.errors import UserError

HUB_TIMEOUT = 5.0  # seconds: an unreachable Hub fails the check quickly
MODEL_CONFIG_FILES = ("config.json", "modules.json")  # transformers, sentence-transformers


@dataclass(frozen=True)
class ModelToLoad:
    """One model a build will load: its Hub id or local folder, what it is to the user (``--sba-classifier``),
    and what to do instead when it cannot be loaded."""

    name: str
    what: str
    instead: str


def check_model(model: ModelToLoad) -> None:
    """A local folder holds a model; a Hub id is in the local Hub cache, or (online) the Hub has it."""
    folder = Path(model.name).expanduser()
    if folder.is_dir() or model.name.startswith(("/", ".", "~")):
        if not any((folder / name).is_file() for name in MODEL_CONFIG_FILES):
            raise UserError(f"{model.what} {model.name}: no model folder there (no config.json); {model.instead}")
        return
    import httpx2  # huggingface_hub's HTTP client
    from huggingface_hub import HfApi, constants, try_to_load_from_cache
    from huggingface_hub.errors import HfHubHTTPError, HFValidationError, RepositoryNotFoundError

    try:
        if any(isinstance(try_to_load_from_cache(model.name, name), str) for name in MODEL_CONFIG_FILES):
            return  # loads from the cache, online or not
    except HFValidationError:
        raise UserError(f"{model.what} {model.name!r} is neither a local folder nor a Hub model id; "
                        f"{model.instead}") from None
    if constants.HF_HUB_OFFLINE:
        raise UserError(f"cannot load {model.what} {model.name!r}: HF_HUB_OFFLINE is set and the model is not in the "
                        f"local Hub cache ({constants.HF_HUB_CACHE}); {model.instead}")
    try:
        HfApi().model_info(model.name, timeout=HUB_TIMEOUT)
    except RepositoryNotFoundError:
        raise UserError(f"cannot load {model.what} {model.name!r}: the Hub has no such model; {model.instead}") from None
    except (HfHubHTTPError, httpx2.HTTPError, OSError) as error:
        raise UserError(f"cannot load {model.what} {model.name!r}: the Hub at {constants.ENDPOINT} did not answer "
                        f"({type(error).__name__}); {model.instead}") from None
