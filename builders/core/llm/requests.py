"""What is asked of an LLM (:class:`ChatRequest`) and what became of it (:class:`ChatResult`, token counts and a
client's running totals)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Mapping, Sequence, TypeVar

T = TypeVar("T")

# ChatResult.error codes that the callers test for
UNPARSEABLE = "unparseable"
BAD_REPLY = "bad_reply"


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion to ask for. Everything here except the salts is sent to the server.

    ``template_version`` names the prompt template (e.g. ``"sba-label-v2"``) and ``cache_salt``
    anything else that must not share a cached reply, e.g. the sample index when the same prompt
    is sampled several times at ``temperature > 0``. Both only enter the cache key.
    """

    messages: Sequence[Mapping[str, Any]]
    temperature: float = 0.0
    max_tokens: int | None = None
    response_format: Mapping[str, Any] | None = None
    stop: str | Sequence[str] | None = None
    seed: int | None = None
    extra_body: Mapping[str, Any] | None = None
    template_version: str = ""
    cache_salt: str = ""

    def __post_init__(self) -> None:
        if not self.messages:
            raise ValueError("ChatRequest needs at least one message")
        for message in self.messages:
            if "role" not in message or "content" not in message:
                raise ValueError(f"each message needs 'role' and 'content', got keys {sorted(message)}")
        # Frozen copies, so a caller mutating its dicts later cannot change what was keyed.
        object.__setattr__(self, "messages", tuple(dict(m) for m in self.messages))
        if isinstance(self.stop, str):
            object.__setattr__(self, "stop", (self.stop,))
        elif self.stop is not None:
            object.__setattr__(self, "stop", tuple(self.stop))

    @classmethod
    def from_prompt(cls, prompt: str, *, system: str | None = None, **options: Any) -> ChatRequest:
        """A single user turn, optionally after a system message."""
        messages = [{"role": "system", "content": system}] if system is not None else []
        messages.append({"role": "user", "content": prompt})
        return cls(messages=messages, **options)

    def api_params(self) -> dict[str, Any]:
        """Keyword arguments for ``chat.completions.create``, besides model and messages."""
        params: dict[str, Any] = {"temperature": float(self.temperature)}
        optional = {
            "max_tokens": self.max_tokens,
            "response_format": plain_data(self.response_format),
            "stop": list(self.stop) if self.stop is not None else None,
            "seed": self.seed,
            "extra_body": plain_data(self.extra_body),
        }
        params.update({name: value for name, value in optional.items() if value is not None})
        return params


@dataclass(frozen=True)
class TokenUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class ChatResult(Generic[T]):
    """What became of one request.

    ``text`` is the raw reply (kept even when unparseable), ``parsed`` what ``parse`` made of it.
    ``error`` is a short code: ``"unparseable"``, ``"http_<status>"``, ``"timeout"``,
    ``"connection"`` (dropped mid-request), ``"bad_reply"`` (a 200 that is not a chat completion),
    ``"no_choices"`` or ``"api_error"``; ``error_detail`` says more.
    ``attempts`` counts HTTP calls made for this request in this run (0 when served from cache).
    ``usage`` is the token count of the reply returned (as first billed, when it is cached).
    """

    key: str
    ok: bool
    text: str | None = None
    parsed: T | None = None
    error: str | None = None
    error_detail: str = ""
    usage: TokenUsage = field(default_factory=TokenUsage)
    cached: bool = False
    attempts: int = 0
    finish_reason: str | None = None


@dataclass(frozen=True)
class UsageTotals:
    """Running totals of one client. Tokens count only replies paid for in this process."""

    calls: int = 0  # HTTP requests sent, every attempt included
    cache_hits: int = 0
    retries: int = 0  # transport retries (429, 5xx, timeout, connection, bad reply)
    parse_retries: int = 0  # requests asked again because ``parse`` rejected the reply
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: int = 0  # results returned with ok=False


def plain_data(value: Any) -> Any:
    """Mappings and sequences as dicts and lists, so json and the openai client accept them."""
    if isinstance(value, Mapping):
        return {str(k): plain_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_data(v) for v in value]
    return value
