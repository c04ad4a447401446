"""Retries, timeouts and problem decoding against a tiny local HTTP server (no agentmem)."""

from __future__ import annotations

import email.utils
import json
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

import agentmem
from agentmem.client import parse_retry_after

Reply = Tuple[int, Dict[str, str], Dict[str, Any]]


class Script:
    """Answers requests with scripted replies, in order (the last one repeats), and records
    every request: when it came, its path, headers and body."""

    def __init__(self, *replies: Reply, hold: Optional[threading.Event] = None) -> None:
        self.replies = list(replies)
        self.hold = hold
        self.requests: List[Dict[str, Any]] = []
        self.lock = threading.Lock()


def serve(script: Script) -> Tuple[str, ThreadingHTTPServer]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            with script.lock:
                script.requests.append({"at": time.monotonic(), "method": self.command, "path": self.path,
                                        "headers": dict(self.headers), "body": body})
                n = len(script.requests)
                status, headers, doc = script.replies[min(n, len(script.replies)) - 1]
            if script.hold is not None:
                script.hold.wait(10)
            raw = json.dumps(doc).encode()
            self.send_response(status)
            ctype = "application/json" if status < 400 else "application/problem+json"
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(raw)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            try:
                self.wfile.write(raw)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        do_GET = do_POST = do_DELETE = _answer

        def log_message(self, *args: Any) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    return "http://127.0.0.1:%d" % srv.server_address[1], srv


def problem(status: int, detail: str, field: str = "") -> Dict[str, Any]:
    p = {"type": "about:blank", "title": "x", "status": status, "detail": detail}
    if field:
        p["field"] = field
    return p


ACK = {"id": "x", "session": "s1", "stream": "AGENTMEM_TURNS", "seq": 7, "duplicate": False}
RETRIEVE = {"entries": [], "context": "", "context_tokens": 0}


class RetryTest(unittest.TestCase):
    def start(self, script: Script) -> str:
        url, srv = serve(script)

        def stop() -> None:
            srv.shutdown()
            srv.server_close()

        self.addCleanup(stop)
        return url

    def test_503_with_retry_after_is_retried_after_it_with_the_same_id(self) -> None:
        script = Script((503, {"Retry-After": "1"}, problem(503, "the turns stream is not there")),
                        (202, {}, ACK))
        mem = agentmem.Client(self.start(script), "acme", token="tok")
        ack = mem.publish("s1", "user", "hello", user="u1")
        self.assertEqual(ack.seq, 7)
        self.assertEqual(len(script.requests), 2)
        first, second = script.requests
        self.assertGreaterEqual(second["at"] - first["at"], 0.95, "the retry came before Retry-After")
        self.assertEqual(first["body"], second["body"], "a retry sends the same event")
        event = json.loads(first["body"])
        self.assertTrue(event["id"], "an id was made for the turn")
        self.assertEqual((event["subject"], event["type"], event["data"]["user"]), ("s1", agentmem.TYPE_TURN, "u1"))
        self.assertEqual(first["path"], "/v1/tenants/acme/events")
        self.assertEqual(first["headers"].get("Authorization"), "Bearer tok")
        self.assertEqual(first["headers"].get("Content-Type"), "application/cloudevents+json")

    def test_429_with_retry_after_as_a_date_is_retried(self) -> None:
        # An HTTP date has whole seconds: two seconds ahead is still at least one ahead once
        # truncated, so the wait is never 0 however late in its second the test runs.
        when = email.utils.formatdate(time.time() + 2, usegmt=True)
        script = Script((429, {"Retry-After": when}, problem(429, "tenant acme is over its retrieve rate")),
                        (200, {}, RETRIEVE))
        waits: List[float] = []
        mem = agentmem.Client(self.start(script), "acme", sleep=waits.append)
        mem.retrieve("anything")
        self.assertEqual(len(script.requests), 2)
        self.assertEqual(len(waits), 1)
        self.assertTrue(0 < waits[0] <= 2.0, waits)
        self.assertNotIn("Authorization", script.requests[0]["headers"], "no token, no header")

    def test_without_retry_after_the_backoff_doubles_with_jitter(self) -> None:
        script = Script((503, {}, problem(503, "no retriever")), (503, {}, problem(503, "no retriever")),
                        (503, {}, problem(503, "no retriever")), (200, {}, RETRIEVE))
        waits: List[float] = []
        mem = agentmem.Client(self.start(script), "acme", max_attempts=4, backoff=0.1, max_backoff=0.3,
                              sleep=waits.append)
        mem.retrieve("anything")
        self.assertEqual(len(script.requests), 4)
        self.assertEqual(len(waits), 3)
        for wait, cap in zip(waits, [0.1, 0.2, 0.3]):
            self.assertTrue(cap / 2 <= wait <= cap, (waits, cap))

    def test_gives_up_after_max_attempts(self) -> None:
        script = Script((503, {"Retry-After": "0"}, problem(503, "no retriever")))
        waits: List[float] = []
        mem = agentmem.Client(self.start(script), "acme", max_attempts=3, sleep=waits.append)
        with self.assertRaises(agentmem.ServiceUnavailableError) as cm:
            mem.retrieve("anything")
        self.assertEqual(len(script.requests), 3)
        self.assertEqual(waits, [0.0, 0.0])
        self.assertEqual((cm.exception.status, cm.exception.retry_after, cm.exception.detail), (503, 0.0, "no retriever"))

    def test_503_on_after_is_raised_at_once(self) -> None:
        # The retriever waited wait_ms for the turn already: another attempt would wait again.
        detail = 'after: turn "t9" of session "s1" is not applied yet (waited 50 ms)'
        script = Script((503, {}, problem(503, detail, "after")), (200, {}, RETRIEVE))
        waits: List[float] = []
        mem = agentmem.Client(self.start(script), "acme", max_attempts=4, sleep=waits.append)
        with self.assertRaises(agentmem.ServiceUnavailableError) as cm:
            mem.retrieve("anything", session="s1", after="t9", wait_ms=50)
        self.assertEqual((len(script.requests), waits), (1, []))
        self.assertEqual((cm.exception.status, cm.exception.field, cm.exception.detail), (503, "after", detail))
        self.assertEqual(str(cm.exception), "agentmem: 503 " + detail)

    def test_the_field_is_named_once(self) -> None:
        for field, detail, want in [
            ("after", "after: turn t9 is not applied yet", "agentmem: 400 after: turn t9 is not applied yet"),
            ("limit", "must be between 1 and 200", "agentmem: 400 limit: must be between 1 and 200"),
            ("at", "at least one of …", "agentmem: 400 at: at least one of …"),
        ]:
            with self.subTest(field=field):
                self.assertEqual(str(agentmem.BadRequestError(detail, status=400, field=field)), want)

    def test_a_retry_after_beyond_the_bound_is_raised_at_once(self) -> None:
        script = Script((429, {"Retry-After": "3600"}, problem(429, "over the rate")))
        mem = agentmem.Client(self.start(script), "acme", max_retry_after=10)
        with self.assertRaises(agentmem.RateLimitError) as cm:
            mem.retrieve("anything")
        self.assertEqual(len(script.requests), 1)
        self.assertEqual(cm.exception.retry_after, 3600.0)

    def test_other_errors_are_not_retried(self) -> None:
        for status, cls in [(400, agentmem.BadRequestError), (401, agentmem.AuthenticationError),
                            (403, agentmem.PermissionDeniedError), (404, agentmem.NotFoundError),
                            (413, agentmem.PayloadTooLargeError), (500, agentmem.ServerError),
                            (418, agentmem.AgentmemError)]:
            with self.subTest(status=status):
                script = Script((status, {}, problem(status, "no", "limit")))
                mem = agentmem.Client(self.start(script), "acme")
                with self.assertRaises(cls) as cm:
                    mem.retrieve("anything", limit=5)
                self.assertEqual((cm.exception.status, cm.exception.field), (status, "limit"))
                self.assertEqual(len(script.requests), 1)

    def test_a_leader_election_costs_latency(self) -> None:
        # What a client may meet while a NATS stream elects a leader, the gateway restarts or a
        # proxy in front of it times out: each is tried again, the same event every time.
        for status, doc in [(502, problem(502, "bad gateway")), (503, problem(503, "no stream took the event")),
                            (504, problem(504, "JetStream did not acknowledge the event within 30s"))]:
            with self.subTest(status=status):
                script = Script((status, {}, doc), (status, {}, doc), (202, {}, ACK))
                waits: List[float] = []
                mem = agentmem.Client(self.start(script), "acme", sleep=waits.append)
                self.assertEqual(mem.publish("s1", "user", "hello", user="u1").seq, 7)
                self.assertEqual((len(script.requests), len(waits)), (3, 2))
                self.assertEqual(len({r["body"] for r in script.requests}), 1, "every attempt sends the same event")

    def test_retries_stop_at_retry_for(self) -> None:
        script = Script((503, {}, problem(503, "no retriever")))
        mem = agentmem.Client(self.start(script), "acme", retry_for=0.5, backoff=0.05, max_backoff=0.1)
        start = time.monotonic()
        with self.assertRaises(agentmem.ServiceUnavailableError):
            mem.retrieve("anything")
        took = time.monotonic() - start
        self.assertGreater(len(script.requests), 2)
        self.assertTrue(0.4 <= took < 5, took)
        # A Retry-After that ends after retry_for is raised at once, with it.
        script = Script((429, {"Retry-After": "5"}, problem(429, "over the rate")))
        mem = agentmem.Client(self.start(script), "acme", retry_for=2)
        with self.assertRaises(agentmem.RateLimitError) as cm:
            mem.retrieve("anything")
        self.assertEqual((len(script.requests), cm.exception.retry_after), (1, 5.0))
        # retry_for=0: one attempt.
        script = Script((503, {}, problem(503, "no retriever")))
        mem = agentmem.Client(self.start(script), "acme", retry_for=0)
        with self.assertRaises(agentmem.ServiceUnavailableError):
            mem.retrieve("anything")
        self.assertEqual(len(script.requests), 1)

    def test_batch_problem_names_the_event(self) -> None:
        p = problem(400, "event 1: content: must not be empty", "content")
        p.update({"index": 1, "errors": [{"index": 1, "field": "content", "detail": "must not be empty"}]})
        script = Script((400, {}, p))
        mem = agentmem.Client(self.start(script), "acme")
        with self.assertRaises(agentmem.BadRequestError) as cm:
            mem.publish_batch([agentmem.Turn("s1", "user", "a", user="u"), agentmem.Turn("s1", "user", "")])
        self.assertEqual((cm.exception.index, cm.exception.errors[0]["field"]), (1, "content"))
        self.assertEqual(script.requests[0]["headers"].get("Content-Type"), "application/cloudevents-batch+json")
        self.assertEqual(len(json.loads(script.requests[0]["body"])), 2)

    def test_timeout(self) -> None:
        # No answer within timeout: tried again (every request is safe to repeat) until
        # retry_for, then raised as a timeout.
        hold = threading.Event()
        script = Script((200, {}, RETRIEVE), hold=hold)
        url = self.start(script)
        self.addCleanup(hold.set)  # runs before the server stops
        mem = agentmem.Client(url, "acme", timeout=0.2, retry_for=0.6, backoff=0.05, max_backoff=0.05)
        start = time.monotonic()
        with self.assertRaises(agentmem.AgentmemTimeoutError) as cm:
            mem.retrieve("anything")
        self.assertIsInstance(cm.exception, TimeoutError)
        self.assertLess(time.monotonic() - start, 5)
        self.assertGreaterEqual(len(script.requests), 2, "a timeout is tried again")
        # max_attempts=1: one attempt.
        script = Script((200, {}, RETRIEVE), hold=hold)
        mem = agentmem.Client(self.start(script), "acme", timeout=0.2, max_attempts=1)
        with self.assertRaises(agentmem.AgentmemTimeoutError):
            mem.retrieve("anything")
        self.assertEqual(len(script.requests), 1)

    def test_wait_ms_lengthens_the_timeout_and_is_sent(self) -> None:
        script = Script((200, {}, RETRIEVE))
        mem = agentmem.Client(self.start(script), "acme")
        mem.retrieve("q", session="s1", user="u1", limit=3, sources=["short", "long"], types=["FACT"],
                     at="2026-11-30T10:00:00Z", context_tokens=100, after="t1", wait_ms=2000)
        body = json.loads(script.requests[0]["body"])
        self.assertEqual(body, {"query": "q", "session": "s1", "user": "u1", "limit": 3, "sources": ["short", "long"],
                                "types": ["FACT"], "at": "2026-11-30T10:00:00Z", "context_tokens": 100,
                                "after": "t1", "wait_ms": 2000})

    def test_connection_refused(self) -> None:
        url, srv = serve(Script((200, {}, RETRIEVE)))
        srv.shutdown()
        srv.server_close()  # the port is free again: nothing listens
        waits: List[float] = []
        mem = agentmem.Client(url, "acme", max_attempts=2, sleep=waits.append)
        with self.assertRaises(agentmem.AgentmemConnectionError) as cm:
            mem.retrieve("anything")
        self.assertIsInstance(cm.exception, ConnectionError)
        self.assertEqual(cm.exception.status, 0)
        self.assertEqual(len(waits), 1)


class ParseTest(unittest.TestCase):
    def test_retry_after(self) -> None:
        now = 1_800_000_000.0
        self.assertEqual(parse_retry_after("5"), 5.0)
        self.assertEqual(parse_retry_after(email.utils.formatdate(now + 30, usegmt=True), now=now), 30.0)
        self.assertEqual(parse_retry_after(email.utils.formatdate(now - 30, usegmt=True), now=now), 0.0)
        for bad in [None, "", "soon", "-1"]:
            self.assertIsNone(parse_retry_after(bad), bad)

    def test_times(self) -> None:
        from datetime import datetime, timedelta, timezone

        from agentmem.models import format_time, parse_time

        t = parse_time("2026-11-30T10:00:00.123456789Z")
        self.assertEqual(t, datetime(2026, 11, 30, 10, 0, 0, 123456, tzinfo=timezone.utc))
        self.assertEqual(parse_time("2026-11-30T11:00:00+01:00"), datetime(2026, 11, 30, 10, tzinfo=timezone.utc))
        self.assertEqual(format_time(datetime(2026, 11, 30, 11, tzinfo=timezone(timedelta(hours=1)))), "2026-11-30T10:00:00Z")
        self.assertEqual(format_time(datetime(2026, 11, 30, 10, 0, 0, 5)), "2026-11-30T10:00:00.000005Z")
        with self.assertRaises(ValueError):
            parse_time("yesterday")


if __name__ == "__main__":
    unittest.main()
