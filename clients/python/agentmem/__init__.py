"""agentmem: a Python client for agentmem's HTTP API, standard library only.

    from agentmem import Client
    mem = Client("http://127.0.0.1:8080", tenant="acme", token="...")
    mem.publish("s1", "user", "I live in Paris.", user="alice")
    mem.end_session("s1", user="alice")
    print(mem.context("where do I live?", session="s2", user="alice").text)

See README.md, and docs/http.md in the agentmem repository for the API itself.
"""

from .client import TYPE_SESSION_ENDED, TYPE_TURN, Client, new_id, parse_retry_after
from .errors import (
    AgentmemConnectionError,
    AgentmemError,
    AgentmemTimeoutError,
    AuthenticationError,
    BadRequestError,
    GatewayTimeoutError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    ServiceUnavailableError,
    TurnRejectedError,
)
from .langchain import AgentmemChatMessageHistory, AgentmemMemory, Message
from .models import (
    Ack,
    Context,
    Entry,
    Fact,
    RetrieveResult,
    Scores,
    Session,
    SessionEnd,
    SessionEntry,
    Turn,
)
from .status import DeadLetter, EventStatus

__version__ = "0.1.0"

__all__ = [
    "Ack",
    "AgentmemChatMessageHistory",
    "AgentmemConnectionError",
    "AgentmemError",
    "AgentmemMemory",
    "AgentmemTimeoutError",
    "AuthenticationError",
    "BadRequestError",
    "Client",
    "Context",
    "DeadLetter",
    "Entry",
    "EventStatus",
    "Fact",
    "GatewayTimeoutError",
    "Message",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitError",
    "RetrieveResult",
    "Scores",
    "ServerError",
    "ServiceUnavailableError",
    "Session",
    "SessionEnd",
    "SessionEntry",
    "TYPE_SESSION_ENDED",
    "TYPE_TURN",
    "Turn",
    "TurnRejectedError",
    "new_id",
    "parse_retry_after",
]
