"""Errors a user can act on. The CLI prints their message on one line, without a traceback. And Ctrl-C, which
ends a command with one line too."""

import atexit
import contextlib
import os
import re
import signal
import sys
import threading
from collections.abc import Iterator


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


class WorkDone(KeyboardInterrupt):
    """Ctrl-C once the command's work was done (a release published): the message says what was done, and the
    command ends with status 0."""


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
        _exit_at_once()  # nothing has started yet: there is nothing to clean up

    hook.runs_a_command = True  # type: ignore[attr-defined]  # read by end_quietly_on_another_interrupt
    return hook


@contextlib.contextmanager
def interrupts_put_off(what: str) -> Iterator[None]:
    """Run a step that must not be cut half-way (the clean-up after an interrupted upload): a Ctrl-C during it
    is put off, with a line saying so, and another one stops it at once. Signals reach the main thread only:
    elsewhere, or where Ctrl-C is ignored anyway, the block just runs."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        yield
        return
    pressed = 0

    def put_off(signum, frame) -> None:
        nonlocal pressed
        pressed += 1
        if pressed > 1:
            raise KeyboardInterrupt
        print(f"{what}; press Ctrl-C again to stop at once", file=sys.stderr)

    previous = signal.signal(signal.SIGINT, put_off)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)


def end_quietly_on_another_interrupt() -> None:
    """Once a command has handled Ctrl-C, all that is left is the end of the process (atexit handlers, threads an
    upload left running: a second or more), where another Ctrl-C met Python's own handling: a traceback from
    wherever it landed. There it now ends the process at once, with status 130. Only in a process that runs a
    command (its excepthook is :func:`report_interruptions`'), never in a program that uses builders as a library."""
    if getattr(sys.excepthook, "runs_a_command", False) and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, lambda signum, frame: _exit_at_once())
        # past the atexit handlers Python runs no handler, and puts the default one back: ignored there instead
        atexit.register(signal.signal, signal.SIGINT, signal.SIG_IGN)


def _exit_at_once() -> None:
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(130)
