"""Credentials out of what mcqforge prints and logs: the user info of a URL (``https://user:secret@host``).

A URL given on the command line (``--base-url``), in the environment (``$OPENAI_BASE_URL``, ``$HF_ENDPOINT``)
or quoted back by a library's exception may carry a password. :func:`scrub_url` is the one way a URL is
shown; :func:`scrub_text` applies it to every URL inside a message (an exception's text, a log line), and
:class:`ScrubbingFilter` to every log record a handler emits.
"""

from __future__ import annotations

import logging
import re

# scheme://userinfo@ : the user info ends at the last "@" before the host's path, query or fragment.
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#\s@]*@)+")
HIDDEN = "***@"


def scrub_url(url: str | None) -> str:
    """``url`` with any user info (name and password) replaced by ``***``."""
    return scrub_text(url or "")


def scrub_text(text: str) -> str:
    """``text`` with the user info of every URL in it replaced by ``***``."""
    return _USERINFO.sub(lambda match: match["scheme"] + HIDDEN, text)


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
