"""What became of a published event: its status and the tenant's dead letters (docs/http.md)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Dict, Optional

from .models import parse_time

APPLIED = "applied"
PENDING = "pending"
REJECTED = "rejected"


@dataclass
class DeadLetter:
    """An event ingest refused for good: why (``reason``, ``cls`` its class such as
    ``owner_mismatch``), when, and the start of its body (``body``, at most 1,024 bytes of
    ``body_size``). ``seq`` is its sequence in the dead-letter stream (``memctl dlq retry``)."""

    seq: int
    id: str
    session: str
    subject: str
    reason: str
    cls: Optional[str]
    time: Optional[datetime]
    delivered: int
    stream_seq: int
    body: str
    body_size: int
    truncated: bool

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "DeadLetter":
        return cls(
            seq=int(d.get("seq") or 0),
            id=str(d.get("id", "")),
            session=str(d.get("session", "")),
            subject=str(d.get("subject", "")),
            reason=str(d.get("reason", "")),
            cls=d.get("class") or None,
            time=parse_time(d.get("time")),
            delivered=int(d.get("delivered") or 0),
            stream_seq=int(d.get("stream_seq") or 0),
            body=str(d.get("body", "")),
            body_size=int(d.get("body_size") or 0),
            truncated=bool(d.get("truncated", False)),
        )


@dataclass
class EventStatus:
    """What became of one event: ``status`` is ``applied``, ``pending`` (stored, not decided
    yet) or ``rejected`` (``reason`` and ``dead_letter`` say why)."""

    id: str
    session: str
    status: str
    reason: Optional[str] = None
    dead_letter: Optional[DeadLetter] = None

    @property
    def applied(self) -> bool:
        return self.status == APPLIED

    @property
    def pending(self) -> bool:
        return self.status == PENDING

    @property
    def rejected(self) -> bool:
        return self.status == REJECTED

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "EventStatus":
        dl = d.get("dead_letter")
        return cls(
            id=str(d.get("id", "")),
            session=str(d.get("session", "")),
            status=str(d.get("status", "")),
            reason=d.get("reason") or None,
            dead_letter=DeadLetter.from_json(dl) if isinstance(dl, dict) else None,
        )
