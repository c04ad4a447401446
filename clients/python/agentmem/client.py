"""The agentmem HTTP client (docs/http.md), standard library only."""

from __future__ import annotations

import email.utils
import http.client
import json
import random
import socket
import time as _time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from datetime import datetime, timezone
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Union

from . import errors
from .errors import AgentmemError
from .models import (
    Ack,
    Context,
    Fact,
    RetrieveResult,
    Session,
    SessionEnd,
    TimeLike,
    Turn,
    format_time,
)
from .status import DeadLetter, EventStatus

__all__ = ["Client", "TYPE_TURN", "TYPE_SESSION_ENDED"]

TYPE_TURN = "agentmem.turn.v1"
TYPE_SESSION_ENDED = "agentmem.session.ended.v1"

CONTENT_TYPE_STRUCTURED = "application/cloudevents+json"
CONTENT_TYPE_BATCH = "application/cloudevents-batch+json"

# Statuses retried (honouring Retry-After): the tenant is over its rate, or the service, NATS or
# JetStream is not there for a moment (a gateway or proxy in front of it included). Every request
# is safe to repeat: events carry their ids, retrieve and facts only read, forget forgets what is
# left. A 503 on field "after" is not retried: the retriever waited the request's wait_ms for that
# turn already.
RETRY_STATUSES = frozenset({429, 502, 503, 504})

# How long a call keeps trying by default, in seconds: longer than a NATS stream's leader election
# after a crash (4-9 s) with an attempt lost in it.
DEFAULT_RETRY_FOR = 30.0


def _check_token(name: str, value: Any) -> str:
    """Checks a tenant, session or user locally only as far as a URL needs (the server checks the
    rest and answers a 400 naming the field)."""
    if not isinstance(value, str) or not value:
        raise ValueError("agentmem: %s must be a non-empty string, got %r" % (name, value))
    return value


def new_id() -> str:
    """Returns a random event id (a UUID), as the client gives an event published without one."""
    return str(uuid.uuid4())


class Client:
    """A client of agentmem's HTTP API for one tenant.

    Args:
        base_url: the gateway's base URL, e.g. ``http://127.0.0.1:8080`` (``memoryd --http``).
        tenant: the tenant every request is for (the URL's; with tokens on, the token's tenant).
        token: a bearer token of the tenant, sent as ``Authorization: Bearer <token>``; ``None``
            when the gateway runs without ``--tokens``.
        timeout: seconds one HTTP request may take (a retrieve with ``wait_ms`` gets that much
            more); beyond it :class:`~agentmem.errors.AgentmemTimeoutError`.
        retry_for: seconds during which a call that failed for a passing reason is tried again
            (30): a 429, 502, 503 (not a 503 on ``after``: ``wait_ms`` has passed) or 504 answer,
            a connection failure or a timeout. No retry starts later than ``retry_for`` after
            the first attempt (0: no retries).
        max_attempts: attempts of one call at most (``None``: as many as ``retry_for`` allows;
            1: no retries).
        backoff: the first wait between attempts, doubled each time up to ``max_backoff``, with
            jitter, when the answer has no ``Retry-After``.
        max_retry_after: the longest ``Retry-After`` (seconds) the client waits; a longer one,
            or one that ends after ``retry_for``, is raised at once (its ``retry_after`` says
            how long).
        source: the CloudEvents ``source`` of published events.
    """

    def __init__(
        self,
        base_url: str,
        tenant: str,
        *,
        token: Optional[str] = None,
        timeout: float = 30.0,
        retry_for: float = DEFAULT_RETRY_FOR,
        max_attempts: Optional[int] = None,
        backoff: float = 0.2,
        max_backoff: float = 5.0,
        max_retry_after: float = 60.0,
        source: str = "agentmem/python",
        user_agent: str = "agentmem-python/0.1",
        sleep: Callable[[float], None] = _time.sleep,
    ) -> None:
        if not base_url:
            raise ValueError("agentmem: base_url is required")
        self.base_url = base_url.rstrip("/")
        self.tenant = _check_token("tenant", tenant)
        self.token = token
        self.timeout = timeout
        self.retry_for = max(0.0, float(retry_for))
        self.max_attempts = None if max_attempts is None else max(1, int(max_attempts))
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after
        self.source = source
        self.user_agent = user_agent
        self._sleep = sleep
        self._opener = urllib.request.build_opener()

    # Publishing.

    def publish(
        self,
        session: str,
        role: str,
        content: str,
        *,
        user: Optional[str] = None,
        id: Optional[str] = None,
        tool: Optional[str] = None,
        metadata: Optional[Dict[str, Any]] = None,
        time: Optional[TimeLike] = None,
    ) -> Ack:
        """Publishes one turn and returns once JetStream stored it (applying it follows; use
        ``retrieve(after=ack.id, wait_ms=...)`` to wait for that). ``role`` is user, assistant,
        system or tool; ``user`` is required on a session's first turn. Without ``id`` a random
        one is made, and kept across retries, so the turn is stored once. Raises
        :class:`~agentmem.errors.BadRequestError` naming the field for invalid input."""
        return self.publish_turn(
            Turn(session=session, role=role, content=content, user=user, id=id, tool=tool,
                 metadata=metadata, time=time)
        )

    def publish_turn(self, turn: Turn) -> Ack:
        """Publishes a :class:`Turn`, as :meth:`publish` does."""
        event = self._event(turn)
        reply = self._request("POST", self._tenant_path("events"), body=event,
                              content_type=CONTENT_TYPE_STRUCTURED)
        return Ack.from_json(reply)

    def end_session(
        self,
        session: str,
        user: Optional[str] = None,
        *,
        id: Optional[str] = None,
        time: Optional[TimeLike] = None,
    ) -> Ack:
        """Ends a session now: the extractor then stores the facts it finds in it, for every
        other session of the user (they appear a moment later; see :meth:`wait_for_fact`). A
        turn published after it reopens the session.

        Without ``id`` and ``time`` it asks the gateway to end the session
        (``POST .../sessions/{session}/end``): ``user`` defaults to the session's owner, and a
        session whose turns are not applied yet needs ``user`` (else
        :class:`~agentmem.errors.NotFoundError`). With ``id`` or ``time`` it publishes the end
        event itself, with that id (stored once however often it is retried) and time."""
        if id is None and time is None:
            _check_token("session", session)
            body = {"user": user} if user else None
            reply = self._request("POST", self._tenant_path("sessions", session, "end"), body=body,
                                  content_type="application/json" if body else None)
            return Ack.from_json(reply)
        event = self._event(SessionEnd(session=session, user=user, id=id, time=time))
        reply = self._request("POST", self._tenant_path("events"), body=event,
                              content_type=CONTENT_TYPE_STRUCTURED)
        return Ack.from_json(reply)

    def publish_batch(self, events: Sequence[Union[Turn, SessionEnd]]) -> List[Ack]:
        """Publishes turns and session ends in one request, in order, and returns one
        :class:`Ack` per event. Every event is checked first: if one is invalid nothing is
        published and :class:`~agentmem.errors.BadRequestError` says which (``index``,
        ``errors``). Events without an id get a random one, kept across retries: events stored
        before a failure come back as duplicates when the batch is retried, nothing is stored
        twice."""
        if not events:
            return []
        body = [self._event(ev) for ev in events]
        reply = self._request("POST", self._tenant_path("events"), body=body,
                              content_type=CONTENT_TYPE_BATCH)
        return [Ack.from_json(r) for r in reply.get("results") or []]

    def _event(self, ev: Union[Turn, SessionEnd]) -> Dict[str, Any]:
        """Returns ev as a structured-mode CloudEvent, with an id (a random one when ev has none)
        and a time (now when ev has none)."""
        if isinstance(ev, Turn):
            data: Dict[str, Any] = {"role": ev.role, "content": ev.content}
            if ev.user:
                data["user"] = ev.user
            if ev.tool:
                data["tool"] = ev.tool
            if ev.metadata:
                data["metadata"] = ev.metadata
            typ = TYPE_TURN
        elif isinstance(ev, SessionEnd):
            data = {"user": ev.user} if ev.user else {}
            typ = TYPE_SESSION_ENDED
        else:
            raise TypeError("agentmem: want a Turn or a SessionEnd, got %r" % (type(ev).__name__,))
        at = ev.time if ev.time is not None else datetime.now(timezone.utc)
        return {
            "specversion": "1.0",
            "id": ev.id or new_id(),
            "type": typ,
            "source": self.source,
            "subject": ev.session,
            "time": format_time(at),
            "datacontenttype": "application/json",
            "data": data,
        }

    # Reading.

    def retrieve(
        self,
        query: str,
        *,
        session: Optional[str] = None,
        user: Optional[str] = None,
        limit: Optional[int] = None,
        sources: Optional[Iterable[str]] = None,
        types: Optional[Iterable[str]] = None,
        at: Optional[TimeLike] = None,
        context_tokens: Optional[int] = None,
        after: Optional[str] = None,
        wait_ms: Optional[int] = None,
    ) -> RetrieveResult:
        """Asks the retriever what agentmem remembers about ``query``: entries best first and
        the context built from them (see docs/protocol.md#retrieve). ``sources`` are short,
        long and archive; ``types`` FACT, SUMMARY, CONVERSATION and TOOL_RESULT; ``at`` the
        "now" of the query; ``context_tokens`` bounds the context (0: none). ``after`` (a turn
        id of ``session``) with ``wait_ms`` waits until that turn is applied (read your writes),
        else raises :class:`~agentmem.errors.ServiceUnavailableError` on field ``after`` once
        ``wait_ms`` has passed (not retried); a turn ingest rejected raises
        :class:`~agentmem.errors.TurnRejectedError` with the reason at once. Invalid input raises
        :class:`~agentmem.errors.BadRequestError` naming the field."""
        body: Dict[str, Any] = {"query": query}
        if session is not None:
            body["session"] = session
        if user is not None:
            body["user"] = user
        if limit is not None:
            body["limit"] = limit
        if sources is not None:
            body["sources"] = list(sources)
        if types is not None:
            body["types"] = list(types)
        if at is not None:
            body["at"] = format_time(at)
        if context_tokens is not None:
            body["context_tokens"] = context_tokens
        if after is not None:
            body["after"] = after
        if wait_ms:
            body["wait_ms"] = wait_ms
        timeout = self.timeout + (wait_ms or 0) / 1000.0
        reply = self._request("POST", self._tenant_path("retrieve"), body=body,
                              content_type="application/json", timeout=timeout)
        return RetrieveResult.from_json(reply)

    def context(
        self,
        query: str,
        *,
        session: Optional[str] = None,
        user: Optional[str] = None,
        context_tokens: Optional[int] = None,
        sources: Optional[Iterable[str]] = None,
        types: Optional[Iterable[str]] = None,
        limit: Optional[int] = None,
        at: Optional[TimeLike] = None,
        after: Optional[str] = None,
        wait_ms: Optional[int] = None,
    ) -> Context:
        """Returns the text to put into a prompt for ``query``: the user's profile (their live
        facts, also when the query shares no word with them, as in a new session) and the top
        memory entries, within ``context_tokens`` (the retriever's default, 2,000, when
        ``None``). The arguments are :meth:`retrieve`'s."""
        r = self.retrieve(query, session=session, user=user, limit=limit, sources=sources,
                          types=types, at=at, context_tokens=context_tokens, after=after,
                          wait_ms=wait_ms)
        return Context(text=r.context, tokens=r.context_tokens, profile=r.profile, entries=r.entries)

    def facts(self, user: str, *, history: bool = False) -> List[Fact]:
        """Returns the user's live facts, oldest first; with ``history`` superseded and deleted
        ones too. An unknown user has none."""
        _check_token("user", user)
        path = self._tenant_path("users", user, "facts")
        if history:
            path += "?history=true"
        reply = self._request("GET", path)
        return [Fact.from_json(f) for f in reply.get("facts") or []]

    def get_fact(self, user: str, fact_id: str) -> Fact:
        """Returns one fact of the user, whatever its state (live, superseded with
        ``superseded_by``, or deleted). An unknown id raises
        :class:`~agentmem.errors.NotFoundError` (field ``id``)."""
        return Fact.from_json(self._request("GET", self._fact_path(user, fact_id)))

    def correct_fact(self, user: str, fact_id: str, content: str) -> Fact:
        """Corrects one fact of the user and returns the correcting fact: a new fact with
        ``content`` (same category and key) supersedes the old one, which stays in the history.
        An unknown id raises :class:`~agentmem.errors.NotFoundError`, empty content
        :class:`~agentmem.errors.BadRequestError` (field ``content``)."""
        reply = self._request("PUT", self._fact_path(user, fact_id), body={"content": content},
                              content_type="application/json")
        return Fact.from_json(reply)

    def delete_fact(self, user: str, fact_id: str) -> Fact:
        """Deletes one fact of the user and returns it (state deleted): it leaves the live
        facts and stays in the history. Deleting it again changes nothing. An unknown id
        raises :class:`~agentmem.errors.NotFoundError`."""
        return Fact.from_json(self._request("DELETE", self._fact_path(user, fact_id)))

    def _fact_path(self, user: str, fact_id: str) -> str:
        _check_token("user", user)
        _check_token("fact_id", fact_id)
        return self._tenant_path("users", user, "facts", fact_id)

    def wait_for_fact(
        self,
        user: str,
        contains: str = "",
        *,
        timeout: float = 15.0,
        interval: float = 0.1,
    ) -> Fact:
        """Polls the user's live facts until one contains ``contains`` (case-insensitive; any
        fact when empty) and returns it. Facts are extracted when a session ends, so they
        appear a moment after :meth:`end_session`. Raises
        :class:`~agentmem.errors.AgentmemTimeoutError` after ``timeout`` seconds."""
        deadline = _time.monotonic() + timeout
        want = contains.casefold()
        while True:
            for f in self.facts(user):
                if want in f.content.casefold():
                    return f
            if _time.monotonic() >= deadline:
                raise errors.AgentmemTimeoutError(
                    "no fact of user %r contains %r after %.1fs" % (user, contains, timeout))
            self._sleep(interval)

    def session(self, session: str) -> Session:
        """Returns a session's short-term state (counters and entries, without their text).
        An unknown session raises :class:`~agentmem.errors.NotFoundError`."""
        _check_token("session", session)
        return Session.from_json(self._request("GET", self._tenant_path("sessions", session)))

    def event_status(self, session: str, id: str) -> EventStatus:
        """Returns what became of the event ``id`` published to ``session``: applied, pending
        (stored, not decided yet) or rejected (with the reason and its dead letter). An id
        agentmem has no record of raises :class:`~agentmem.errors.NotFoundError`."""
        _check_token("session", session)
        if not id:
            raise ValueError("agentmem: id must be a non-empty string")
        return EventStatus.from_json(self._request("GET", self._tenant_path("sessions", session, "events", id)))

    def dead_letters(self, *, session: Optional[str] = None, limit: Optional[int] = None) -> List[DeadLetter]:
        """Returns the tenant's dead letters (events ingest refused for good), newest first:
        of one ``session`` when given, at most ``limit`` (the server's default, 100, when
        ``None``; up to 1000)."""
        query: Dict[str, Any] = {}
        if session is not None:
            query["session"] = _check_token("session", session)
        if limit is not None:
            query["limit"] = limit
        path = self._tenant_path("dead-letters")
        if query:
            path += "?" + urllib.parse.urlencode(query)
        reply = self._request("GET", path)
        return [DeadLetter.from_json(d) for d in reply.get("dead_letters") or []]

    def forget(self, user: str) -> Dict[str, int]:
        """Forgets everything of the user (facts with their history, summaries, short-term
        state, archived turns, events, dead letters) and returns the counts of what went."""
        _check_token("user", user)
        reply = self._request("DELETE", self._tenant_path("users", user))
        return {k: int(v) for k, v in (reply.get("forgotten") or {}).items()}

    # HTTP.

    def _tenant_path(self, *parts: str) -> str:
        quoted = [urllib.parse.quote(p, safe="") for p in parts]
        return "/v1/tenants/%s/%s" % (urllib.parse.quote(self.tenant, safe=""), "/".join(quoted))

    def _request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Dict[str, Any]:
        """Sends one request, retrying what may pass (429, 502, 503 and 504 answers, after
        Retry-After or a jittered backoff, not a 503 on ``after``; connection failures;
        timeouts) while ``retry_for`` allows, and returns the decoded JSON reply. The body is
        encoded once: every attempt sends the same bytes (the same ids)."""
        data = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Accept": "application/json", "User-Agent": self.user_agent}
        if content_type:
            headers["Content-Type"] = content_type
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        url = self.base_url + path
        timeout = self.timeout if timeout is None else timeout
        start = _time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._send(method, url, data, headers, timeout)
            except AgentmemError as err:
                wait = self._retry_wait(err, attempt, _time.monotonic() - start)
                if wait is None:
                    raise
            self._sleep(wait)

    def _retry_wait(self, err: AgentmemError, attempt: int, elapsed: float) -> Optional[float]:
        """Returns how long to wait before trying again after err, the attempt-th, elapsed
        seconds after the first began; or None to give up."""
        retriable = err.status in RETRY_STATUSES or isinstance(
            err, (errors.AgentmemConnectionError, errors.AgentmemTimeoutError))
        if err.status == 503 and err.field == "after":
            retriable = False  # the turn was not applied within wait_ms: waiting is done
        if not retriable or (self.max_attempts is not None and attempt >= self.max_attempts):
            return None
        if err.retry_after is not None:
            if err.retry_after > self.max_retry_after:
                return None
            wait = err.retry_after
        else:
            base = min(self.max_backoff, self.backoff * (2 ** (attempt - 1)))
            wait = base * random.uniform(0.5, 1.0)
        if elapsed + wait > self.retry_for:
            return None
        return wait

    def _send(
        self, method: str, url: str, data: Optional[bytes], headers: Dict[str, str], timeout: float
    ) -> Dict[str, Any]:
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with self._opener.open(req, timeout=timeout) as resp:
                raw = resp.read()
                status = resp.status
        except urllib.error.HTTPError as e:
            try:
                raw = e.read()
            except (OSError, http.client.HTTPException):
                raw = b""
            finally:
                e.close()
            raise _problem_error(e.code, e.headers, raw) from None
        except (socket.timeout, TimeoutError) as e:
            raise errors.AgentmemTimeoutError(
                "%s %s: no response within %.1fs" % (method, url, timeout)) from e
        except urllib.error.URLError as e:
            if isinstance(e.reason, (socket.timeout, TimeoutError)):
                raise errors.AgentmemTimeoutError(
                    "%s %s: no response within %.1fs" % (method, url, timeout)) from e
            raise errors.AgentmemConnectionError(
                "%s %s: %s (is memoryd --http running?)" % (method, url, e.reason)) from e
        except (http.client.HTTPException, ConnectionError) as e:
            raise errors.AgentmemConnectionError("%s %s: %s" % (method, url, e)) from e
        if not raw:
            return {}
        try:
            reply = json.loads(raw.decode("utf-8"))
        except ValueError as e:
            raise AgentmemError("%s %s: reply is not JSON: %s" % (method, url, e), status=status) from e
        if not isinstance(reply, dict):
            raise AgentmemError("%s %s: reply is not a JSON object" % (method, url), status=status)
        return reply


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Returns the seconds a Retry-After header asks to wait (delay-seconds or an HTTP date),
    or None when it is absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    now = _time.time() if now is None else now
    return max(0.0, when.timestamp() - now)


def _problem_error(status: int, headers: Any, raw: bytes) -> AgentmemError:
    """Returns the exception for an error response: its problem detail when the body is one,
    else the body's text."""
    problem: Dict[str, Any] = {}
    text = raw.decode("utf-8", errors="replace").strip()
    if text:
        try:
            decoded = json.loads(text)
            if isinstance(decoded, dict):
                problem = decoded
        except ValueError:
            pass
    if not problem:
        problem = {"detail": text or "HTTP %d" % status}
    retry_after = parse_retry_after(headers.get("Retry-After") if headers is not None else None)
    return errors.error_for(status, problem, retry_after)
