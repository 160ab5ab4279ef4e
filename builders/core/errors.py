"""Errors a user can act on. The CLI prints their message on one line, without a traceback."""


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
