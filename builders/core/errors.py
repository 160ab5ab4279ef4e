"""Errors a user can act on. The CLI prints their message on one line, without a traceback."""

import os
import re
import sys


class UserError(Exception):
    """Bad input, options or environment: the message says what to do."""


class SourceError(UserError):
    """A source benchmark could not be found or read."""


class MalformedRow(UserError):
    """A source row breaks the benchmark's schema. Names the row and the field."""

    def __init__(self, row_id: str, field: str, problem: str):
        self.row_id, self.field, self.problem = row_id, field, problem
        super().__init__(f"malformed row {row_id}: field {field!r}: {problem}")


class ValidationFailed(UserError):
    """The built dataset breaks an invariant; nothing was written or published."""


class ReleaseError(UserError):
    """Publishing refused or failed (existing tag, bad version, missing token...)."""


def tag_hint(revision: str | None) -> str:
    """For a revision the Hub does not have: mcqforge tags a release vX.Y.Z, so ``@1.0.0`` meant ``@v1.0.0``."""
    if revision and re.fullmatch(r"\d+\.\d+\.\d+", revision):
        return f"; did you mean @v{revision}? (releases are tagged vX.Y.Z)"
    return ""


def raised_by_an_interrupt(error: BaseException) -> bool:
    """Ctrl-C, or an error raised while it was being handled (an import that Ctrl-C broke half-way)."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def report_interruptions(previous_hook, message: str | None = "interrupted"):
    """A ``sys.excepthook`` for the time before a command's own handler runs (``cli.exit_code``): Ctrl-C while
    the libraries import is ``message`` (None: nothing, for a worker whose command says it) and status 130, not
    a traceback; anything else goes to ``previous_hook``."""

    def hook(kind, value, traceback) -> None:
        if not raised_by_an_interrupt(value):
            previous_hook(kind, value, traceback)
            return
        if message:
            print(message, file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)  # nothing has started yet: there is nothing to clean up

    return hook
