"""Typed values of the agentmem HTTP API: what the client sends and what it returns."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, List, Optional, Union

TimeLike = Union[datetime, str]

_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|z|[+-]\d{2}:\d{2})$"
)


def parse_time(value: Any) -> Optional[datetime]:
    """Parses an RFC 3339 time as Go writes it (nanoseconds, ``Z``) into an aware datetime
    (microseconds); ``None`` for an empty or missing value. Raises ValueError for anything else."""
    if value is None or value == "":
        return None
    m = _RFC3339.match(str(value))
    if not m:
        raise ValueError("not an RFC 3339 time: %r" % (value,))
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    micro = int((m.group(7) or "0")[:6].ljust(6, "0"))
    tz = m.group(8)
    if tz in ("Z", "z"):
        tzinfo = timezone.utc
    else:
        sign = 1 if tz[0] == "+" else -1
        tzinfo = timezone(sign * timedelta(hours=int(tz[1:3]), minutes=int(tz[4:6])))
    return datetime(year, month, day, hour, minute, second, micro, tzinfo=tzinfo)


def format_time(value: TimeLike) -> str:
    """Formats a datetime as RFC 3339 in UTC (a naive datetime is taken as UTC); a string is
    passed through as it is (the server checks it)."""
    if isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    value = value.astimezone(timezone.utc)
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        text += ".%06d" % value.microsecond
    return text + "Z"


@dataclass
class Turn:
    """One conversation turn to publish.

    ``user`` is required on a session's first turn (the session then belongs to that user).
    ``id`` identifies the turn within its session: publishing the same id again stores it once;
    the client makes a random one when it is ``None`` and reuses it when it retries.
    ``time`` is when the turn happened (default: now).
    """

    session: str
    role: str
    content: str
    user: Optional[str] = None
    id: Optional[str] = None
    tool: Optional[str] = None
    metadata: Optional[Dict[str, Any]] = None
    time: Optional[TimeLike] = None


@dataclass
class SessionEnd:
    """The end of a session, to publish: the extractor then stores the facts it finds in it."""

    session: str
    user: Optional[str] = None
    id: Optional[str] = None
    time: Optional[TimeLike] = None


@dataclass
class Ack:
    """Confirms that JetStream stored an event (202): stored, not yet applied.

    ``duplicate`` is true when the id was stored before and this publish added nothing."""

    id: str
    session: str
    stream: str
    seq: int
    duplicate: bool = False

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Ack":
        return cls(
            id=str(d.get("id", "")),
            session=str(d.get("session", "")),
            stream=str(d.get("stream", "")),
            seq=int(d.get("seq") or 0),
            duplicate=bool(d.get("duplicate", False)),
        )


@dataclass
class Scores:
    """The parts of an entry's score; ``vector`` is None when no embedder is in use."""

    keyword: float = 0.0
    decay: float = 0.0
    weight: float = 0.0
    vector: Optional[float] = None
    relevance: Optional[float] = None

    @classmethod
    def from_json(cls, d: Optional[Dict[str, Any]]) -> "Scores":
        d = d or {}
        return cls(
            keyword=float(d.get("keyword") or 0.0),
            decay=float(d.get("decay") or 0.0),
            weight=float(d.get("weight") or 0.0),
            vector=None if d.get("vector") is None else float(d["vector"]),
            relevance=None if d.get("relevance") is None else float(d["relevance"]),
        )


@dataclass
class Entry:
    """One memory entry of a retrieve reply: a turn (CONVERSATION, TOOL_RESULT), a SUMMARY or a
    FACT, from ``source`` short, long or archive."""

    id: str
    type: str
    content: str
    timestamp: Optional[datetime]
    source: str
    score: float = 0.0
    scores: Scores = field(default_factory=Scores)
    session: Optional[str] = None
    provenance: List[str] = field(default_factory=list)
    metadata: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Entry":
        return cls(
            id=str(d.get("id", "")),
            type=str(d.get("type", "")),
            content=str(d.get("content", "")),
            timestamp=parse_time(d.get("timestamp")),
            source=str(d.get("source", "")),
            score=float(d.get("score") or 0.0),
            scores=Scores.from_json(d.get("scores")),
            session=d.get("session") or None,
            provenance=list(d.get("provenance") or []),
            metadata=dict(d.get("metadata") or {}),
        )


@dataclass
class RetrieveResult:
    """The retriever's reply: entries best first, the context text built from them within
    ``context_tokens``, and ``profile``: the user's live facts the context carries although they
    are not among the entries (empty when there are none)."""

    entries: List[Entry]
    context: str
    context_tokens: int
    profile: List[Entry] = field(default_factory=list)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "RetrieveResult":
        return cls(
            entries=[Entry.from_json(e) for e in d.get("entries") or []],
            context=str(d.get("context") or ""),
            context_tokens=int(d.get("context_tokens") or 0),
            profile=[Entry.from_json(e) for e in d.get("profile") or []],
        )


@dataclass
class Context:
    """The text to put into a prompt, its token count, and the profile facts it carries (the
    user's live facts included whatever the query, e.g. in a new session)."""

    text: str
    tokens: int
    profile: List[Entry] = field(default_factory=list)
    entries: List[Entry] = field(default_factory=list)

    def __str__(self) -> str:
        return self.text


@dataclass
class Fact:
    """One fact of a user. ``state`` is live, superseded or deleted (the last two only with
    history)."""

    id: str
    content: str
    category: str
    state: str
    valid_from: Optional[datetime]
    key: Optional[str] = None
    valid_to: Optional[datetime] = None
    superseded_by: Optional[str] = None
    provenance: List[str] = field(default_factory=list)
    confidence: float = 0.0
    extractor: Optional[str] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Fact":
        return cls(
            id=str(d.get("id", "")),
            content=str(d.get("content", "")),
            category=str(d.get("category", "")),
            state=str(d.get("state", "")),
            valid_from=parse_time(d.get("valid_from")),
            key=d.get("key") or None,
            valid_to=parse_time(d.get("valid_to")),
            superseded_by=d.get("superseded_by") or None,
            provenance=list(d.get("provenance") or []),
            confidence=float(d.get("confidence") or 0.0),
            extractor=d.get("extractor") or None,
        )


@dataclass
class SessionEntry:
    """One entry of a session's short-term state (its text stays in the turns stream)."""

    id: str
    type: str
    tokens: int
    timestamp: Optional[datetime]
    state: str
    role: Optional[str] = None
    covers: int = 0

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "SessionEntry":
        return cls(
            id=str(d.get("id", "")),
            type=str(d.get("type", "")),
            tokens=int(d.get("tokens") or 0),
            timestamp=parse_time(d.get("timestamp")),
            state=str(d.get("state", "")),
            role=d.get("role") or None,
            covers=int(d.get("covers") or 0),
        )


@dataclass
class Session:
    """A session's short-term state as ingest stored it: counters and entries."""

    tenant: str
    session: str
    user: str
    tokens: int
    budget: int
    turns: int
    ended: bool
    entries: List[SessionEntry] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Session":
        return cls(
            tenant=str(d.get("tenant", "")),
            session=str(d.get("session", "")),
            user=str(d.get("user", "")),
            tokens=int(d.get("tokens") or 0),
            budget=int(d.get("budget") or 0),
            turns=int(d.get("turns") or 0),
            ended=bool(d.get("ended", False)),
            entries=[SessionEntry.from_json(e) for e in d.get("entries") or []],
            raw=d,
        )
