"""Credentials out of what mcqforge prints and logs, in every spelling a server may echo them in.

Two things are hidden. The user info of a URL (``https://user:secret@host``), wherever a URL is shown
(:func:`scrub_url`). And every secret the process knows (:func:`known_secrets`: the Hub token and API keys it
read, the keys and tokens in the environment, the credentials of every URL in the environment), in each of
its spellings: as it is, in any letter case; percent-encoded (all of it or only some characters, once or twice);
JSON- or backslash-escaped; as HTML character references; and base64, standard or URL-safe, padded or not,
alone or inside a longer encoded text (``Bearer <key>``), and ``user:password`` as Basic auth sends it.

:func:`scrub_text` applies both to a message (an exception's text, a server's answer, a log line) and
:class:`ScrubbingFilter` to every log record a handler emits.
"""

from __future__ import annotations

import base64
import functools
import html
import logging
import os
import re
import threading
import urllib.parse
from collections.abc import Iterable

# scheme://userinfo@ : the user info ends at the last "@" before the host's path, query or fragment.
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#\s@]*@)+")
HIDDEN = "***@"
SECRET_HIDDEN = "***"
#: A shorter value is too likely to be an ordinary word or number to be hidden wherever it appears (a short
#: password is still hidden as part of its URL, and inside the base64 of ``user:password``).
MIN_SECRET_LENGTH = 6
#: Environment variables whose value is a secret: ``HF_TOKEN``, ``OPENAI_API_KEY``, ``AWS_SECRET_ACCESS_KEY``...
_SECRET_VARIABLE = re.compile(r"(?:^|_)(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.I)

_REMEMBERED: set[str] = set()
_GUARD = threading.Lock()


def remember_secret(value: str | None) -> None:
    """Hide ``value`` (an API key, a token) from everything scrubbed from now on."""
    if value and len(value.strip()) >= MIN_SECRET_LENGTH:
        with _GUARD:
            _REMEMBERED.add(value.strip())


def url_secrets(url: str | None) -> set[str]:
    """The secrets in a URL's user info: the password and ``user:password`` (Basic auth's text), or the
    whole user info when it has no password (``https://TOKEN@host``)."""
    found: set[str] = set()
    for match in _USERINFO.finditer(url or ""):
        userinfo = match.group(0)[len(match["scheme"]):-1]  # up to the last "@": a password may hold one
        user, colon, password = (urllib.parse.unquote(part) for part in userinfo.partition(":"))
        found.update({password, f"{user}:{password}"} if colon else {user})
    return {secret for secret in found if secret}


def known_secrets() -> frozenset[str]:
    """Every secret remembered, every value of a secret-named environment variable, and the credentials of
    every URL in the environment (``$HTTPS_PROXY``, ``$OPENAI_BASE_URL``, ``$HF_ENDPOINT``...)."""
    secrets = set(_REMEMBERED)
    for name, value in os.environ.items():
        if _SECRET_VARIABLE.search(name):
            secrets.add(value.strip())
        if "@" in value:
            secrets |= url_secrets(value)
    return frozenset(secret for secret in secrets if secret)


def scrub_url(url: str | None) -> str:
    """``url`` with any user info (name and password) replaced by ``***``, and any known secret hidden."""
    return scrub_text(url or "")


def scrub_text(text: str) -> str:
    """``text`` with the user info of every URL in it replaced by ``***``, and every spelling of every
    known secret (:func:`known_secrets`) by ``***``."""
    text = _USERINFO.sub(lambda match: match["scheme"] + HIDDEN, text)
    pattern = _spellings_pattern(known_secrets())
    return pattern.sub(SECRET_HIDDEN, text) if pattern is not None else text


@functools.lru_cache(maxsize=16)
def _spellings_pattern(secrets: frozenset[str]) -> re.Pattern[str] | None:
    """One regular expression for every spelling of every secret, the longest forms first."""
    forms = {(form, fold) for secret in secrets for form, fold in _forms(secret)}
    if not forms:
        return None
    ordered = sorted(forms, key=lambda item: (-len(item[0]), item))
    return re.compile("|".join("".join(_char_spellings(c, fold) for c in form) for form, fold in ordered))


def _forms(secret: str) -> Iterable[tuple[str, bool]]:
    """(text, whether its letter case is free): the secret itself (a server may change its case), and its
    base64 encodings (case matters); each may in turn be percent-encoded or escaped (:func:`_char_spellings`)."""
    if len(secret) >= MIN_SECRET_LENGTH:
        yield secret, True
    data = secret.encode()
    whole = base64.b64encode(data).decode()
    cores = [whole, whole.rstrip("=")]  # encoded on its own, padded or not
    for offset in range(3):  # inside a longer encoded text, at each of the 3 byte offsets: the characters that
        encoded = base64.b64encode(bytes(offset) + data).decode()  # the secret's bytes alone decide
        cores.append(encoded[-(-8 * offset // 6):(8 * (offset + len(data))) // 6])
    for core in dict.fromkeys(cores):
        if len(core) >= MIN_SECRET_LENGTH + 2:
            yield core, False
            yield core.replace("+", "-").replace("/", "_"), False  # URL-safe


def _char_spellings(char: str, fold_case: bool) -> str:
    """A regular expression for one character in any of its spellings."""
    options = {re.escape(char), re.escape(html.escape(char))}
    if fold_case and char.lower() != char.upper():
        options |= {re.escape(char.lower()), re.escape(char.upper())}
    options.add("".join(f"%(?:25)?{_hex(byte)}" for byte in char.encode()))  # percent-encoded, once or twice
    if ord(char) < 0x10000:
        options.add(r"\\u" + _hex(ord(char), 4))  # JSON's \u00e9
    options |= {f"&#0*{ord(char)};", f"&#[xX]0*{_hex(ord(char), 1)};"}  # HTML's &#47; and &#x2F;
    if not char.isalnum():
        options.add(re.escape("\\" + char))  # JSON's \/ and \", a shell's \-
    if char == " ":
        options.add(r"\+")
    return "(?:" + "|".join(sorted(options, key=len, reverse=True)) + ")"


def _hex(number: int, width: int = 2) -> str:
    """``number`` in hexadecimal digits of either case, at least ``width`` of them: ``2[fF]``."""
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in f"{number:0{width}x}")


class ScrubbingFilter(logging.Filter):
    """A handler filter: each record's message, arguments merged, and its exception text, scrubbed."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        scrubbed = scrub_text(message)
        if scrubbed != message:
            record.msg, record.args = scrubbed, None
        if record.exc_info and record.exc_info[1] is not None:
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_text = scrub_text(text)
        return True


def scrub_log_handlers(logger: logging.Logger | None = None) -> None:
    """Install :class:`ScrubbingFilter` on every handler of ``logger`` (the root logger by default), once."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, ScrubbingFilter) for f in handler.filters):
            handler.addFilter(ScrubbingFilter())
