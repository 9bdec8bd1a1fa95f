"""The refusal of a request, shared by the service (:mod:`ladderlab.serve.service`) and the rules of
its recorded actions (:mod:`ladderlab.serve.events`)."""

from __future__ import annotations


class ServiceError(Exception):
    """A request the service refuses: ``status`` (HTTP), ``reason`` (a stable word) and a
    message for people; ``retry_after`` in seconds where waiting helps."""

    def __init__(self, status: int, reason: str, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.retry_after = retry_after
