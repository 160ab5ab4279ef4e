"""The on-disk reply cache: one JSON file per request, keyed by everything that determines the reply, written
atomically the moment the reply arrives, so a killed run resumes without paying for any reply twice."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from builders.core.llm.requests import ChatRequest, TokenUsage, plain_data
from builders.core.runtime.cache import write_atomically

logger = logging.getLogger(__name__)

#: Part of every cache key: bump it when the key's payload or the cache file format changes.
CACHE_FORMAT_VERSION = 1


def request_key(model: str, request: ChatRequest) -> str:
    """sha256 of the canonical JSON of everything that determines a reply."""
    payload = {
        "format": CACHE_FORMAT_VERSION,
        "model": model,
        "messages": list(request.messages),
        "temperature": float(request.temperature),
        "max_tokens": request.max_tokens,
        "response_format": request.response_format,
        "stop": list(request.stop) if request.stop is not None else None,
        "seed": request.seed,
        "extra_body": request.extra_body,
        "template_version": request.template_version,
        "cache_salt": request.cache_salt,
    }
    canonical = json.dumps(plain_data(payload), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def attempt_key(key: str, attempt: int) -> str:
    """The key a request's reply is kept under at ``attempt`` (0: the first ask, the request's own key; n: the n-th
    ask after a reply the parser rejected)."""
    return key if attempt == 0 else hashlib.sha256(f"{key}\x1fattempt {attempt}".encode()).hexdigest()


class ReplyCache:
    """One JSON file per request key, at ``<root>/<key[:2]>/<key>.json``.

    Files are written to a temporary name and moved into place with ``os.replace``, so a process
    killed mid-write leaves either the old state or the whole file, never half of one. A file that
    cannot be read (e.g. cut short by a power loss) counts as a miss and is rewritten.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def path_for(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        path = self.path_for(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            logger.warning("unreadable cache file %s (%s); asking again", path, type(exc).__name__)
            return None
        if not isinstance(entry, dict) or not isinstance(entry.get("text"), str):
            logger.warning("cache file %s has no reply text; asking again", path)
            return None
        return entry

    def put(self, key: str, entry: Mapping[str, Any]) -> None:
        data = json.dumps(entry, ensure_ascii=False).encode("utf-8")
        write_atomically(self.path_for(key), lambda handle: handle.write(data))

    def reply(self, key: str) -> tuple[str, TokenUsage, str | None] | None:
        """The kept reply's text, token usage and finish reason, or None."""
        entry = self.get(key)
        if entry is None:
            return None
        usage = entry.get("usage") or {}
        return (entry["text"], TokenUsage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
                entry.get("finish_reason"))

    def keep_reply(self, key: str, model: str, text: str, usage: TokenUsage, finish_reason: str | None) -> None:
        """Keep a reply the moment it arrives; a file that cannot be written is logged, and the reply still used
        (only a rerun would pay for it again)."""
        entry = {"format": CACHE_FORMAT_VERSION, "model": model, "text": text, "finish_reason": finish_reason,
                 "usage": dataclasses.asdict(usage),
                 "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        try:
            self.put(key, entry)
        except OSError as exc:
            logger.warning("could not write cache file for %s… (%s)", key[:12], exc)
