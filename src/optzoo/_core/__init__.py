"""Shared mechanics: results, validation, seeding, statistics and I/O. No method logic lives here."""

from optzoo._core.result import NotConvergedWarning, Result, Status

__all__ = ["NotConvergedWarning", "Result", "Status"]
