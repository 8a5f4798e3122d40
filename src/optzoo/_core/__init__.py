"""Shared mechanics: results, validation, seeding, statistics and I/O. No method logic lives here."""

from optzoo._core.result import Result, Status

__all__ = ["Result", "Status"]
