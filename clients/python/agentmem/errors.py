"""Exceptions of the agentmem client.

Every error response of the HTTP API is an RFC 9457 problem (``application/problem+json``) that
names the offending input in ``field``; the client raises it as an :class:`AgentmemError`
subclass chosen by the status, with the problem's members as attributes.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Type


class AgentmemError(Exception):
    """An error answered by agentmem (a problem detail), or a failure to reach it.

    Attributes:
        status: the HTTP status (0 when no response arrived).
        field: the input the problem names (``query``, ``limit``, ``ce-time``, ``authorization``,
            ``session``, ...), or ``None``.
        detail: what is wrong, in words.
        title: the status text of the problem.
        instance: the request path.
        index: for a batch, the position of the first invalid event (or of the event that was
            not stored).
        errors: for a batch, every invalid event: ``[{"index", "field", "detail"}]``.
        results: for a batch that failed part way, the events stored before the failure.
        retry_after: seconds the server asked to wait (``Retry-After``), or ``None``.
        problem: the whole problem document as received.
    """

    def __init__(
        self,
        detail: str,
        *,
        status: int = 0,
        field: Optional[str] = None,
        title: str = "",
        instance: str = "",
        index: Optional[int] = None,
        errors: Optional[List[Dict[str, Any]]] = None,
        results: Optional[List[Dict[str, Any]]] = None,
        retry_after: Optional[float] = None,
        problem: Optional[Dict[str, Any]] = None,
    ) -> None:
        self.status = status
        self.field = field
        self.detail = detail
        self.title = title
        self.instance = instance
        self.index = index
        self.errors = errors or []
        self.results = results or []
        self.retry_after = retry_after
        self.problem = problem or {}
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = ["agentmem:"]
        if self.status:
            parts.append(str(self.status))
        # The gateway's detail may already start with the field ("after: turn …"): once is enough.
        if self.field and not self.detail.startswith(self.field + ":"):
            parts.append(self.field + ":")
        parts.append(self.detail)
        return " ".join(parts)


class BadRequestError(AgentmemError):
    """400: invalid input; ``field`` says which."""


class TurnRejectedError(BadRequestError):
    """400 on ``after``: ingest rejected the turn a retrieve waits for, so it will never be
    applied; ``detail`` carries the reason (``client.event_status`` gives the dead letter)."""


class AuthenticationError(AgentmemError):
    """401: no bearer token, or an unknown one."""


class PermissionDeniedError(AgentmemError):
    """403: the token belongs to another tenant."""


class NotFoundError(AgentmemError):
    """404: no such session, route or user (a service's 404)."""


class PayloadTooLargeError(AgentmemError):
    """413: the body is over the gateway's limit, or the event over the NATS payload limit."""


class RateLimitError(AgentmemError):
    """429: the tenant is over its rate; retried (honouring ``Retry-After``) before raised."""


class ServerError(AgentmemError):
    """500 or 502: the service failed."""


class ServiceUnavailableError(AgentmemError):
    """503: NATS, JetStream or the service is not there, retried (honouring ``Retry-After``)
    before raised; or, with ``field`` ``after``, the turn ``after`` was not applied within
    ``wait_ms``, raised at once (the service already waited)."""


class GatewayTimeoutError(AgentmemError):
    """504: NATS did not answer within the gateway's timeout."""


class AgentmemConnectionError(AgentmemError, ConnectionError):
    """The server could not be reached (refused, reset, DNS); ``status`` is 0."""


class AgentmemTimeoutError(AgentmemError, TimeoutError):
    """No response within the client's timeout; ``status`` is 0."""


_BY_STATUS: Dict[int, Type[AgentmemError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    413: PayloadTooLargeError,
    429: RateLimitError,
    500: ServerError,
    502: ServerError,
    503: ServiceUnavailableError,
    504: GatewayTimeoutError,
}


def error_for(status: int, problem: Dict[str, Any], retry_after: Optional[float] = None) -> AgentmemError:
    """Returns the exception for an error response with the given status and (decoded) problem."""
    cls = _BY_STATUS.get(status, AgentmemError)
    if status == 400 and problem.get("field") == "after" and "was rejected" in str(problem.get("detail") or ""):
        cls = TurnRejectedError
    index = problem.get("index")
    return cls(
        str(problem.get("detail") or problem.get("title") or "HTTP %d" % status),
        status=status,
        field=problem.get("field") or None,
        title=str(problem.get("title") or ""),
        instance=str(problem.get("instance") or ""),
        index=index if isinstance(index, int) else None,
        errors=problem.get("errors") if isinstance(problem.get("errors"), list) else None,
        results=problem.get("results") if isinstance(problem.get("results"), list) else None,
        retry_after=retry_after,
        problem=problem,
    )
