"""The client against a real agentmem (memoryd's workers and the HTTP gateway)."""

from __future__ import annotations

import unittest
import uuid
from datetime import datetime, timedelta, timezone
from typing import List

import agentmem
from agentmem import SessionEnd, Turn

from .support import OTHER_TENANT, OTHER_TOKEN, TENANT, client, eventually, needs_service, unique


@needs_service
class PublishRetrieveTest(unittest.TestCase):
    def setUp(self) -> None:
        self.mem = client()

    def test_publish_then_retrieve_round_trip(self) -> None:
        session, user = unique("s"), unique("u")
        at = datetime(2026, 11, 30, 10, 0, 0, 123456, tzinfo=timezone.utc)
        planted = "My passport is in the second drawer of the blue desk."
        ack = self.mem.publish(session, "user", planted, user=user, time=at, metadata={"channel": "web"})
        self.assertEqual(ack.session, session)
        self.assertFalse(ack.duplicate)
        self.assertGreater(ack.seq, 0)
        self.assertTrue(ack.stream)
        uuid.UUID(ack.id)  # an id was made for the turn
        reply_ack = self.mem.publish(session, "assistant", "Noted, the blue desk.", time=at + timedelta(seconds=5))

        r = self.mem.retrieve("where is my passport?", session=session, after=reply_ack.id, wait_ms=15000)
        self.assertTrue(r.entries, r)
        top = r.entries[0]
        self.assertEqual((top.id, top.type, top.source, top.content), (ack.id, "CONVERSATION", "short", planted))
        self.assertEqual(top.timestamp, at)
        self.assertEqual(top.session, session)
        self.assertEqual(top.metadata.get("role"), "user")
        self.assertGreater(top.score, 0)
        self.assertGreater(top.scores.keyword, 0)
        self.assertIn(planted, r.context)
        self.assertGreater(r.context_tokens, 0)

        # Every request field reaches the retriever: types and sources filter, limit cuts,
        # context_tokens=0 builds no context, at bounds what is visible.
        r = self.mem.retrieve("passport drawer desk", session=session, user=user, limit=1,
                              sources=["short"], types=["CONVERSATION"], context_tokens=0,
                              at=at + timedelta(minutes=1))
        self.assertEqual([e.id for e in r.entries], [ack.id])
        self.assertEqual((r.context, r.context_tokens), ("", 0))
        r = self.mem.retrieve("passport drawer desk", session=session, at=at - timedelta(hours=1))
        self.assertEqual(r.entries, [], "at before the turn: it is not visible yet")
        r = self.mem.retrieve("passport drawer desk", session=session, types=["FACT"])
        self.assertEqual(r.entries, [])

        ctx = self.mem.context("where is my passport?", session=session, context_tokens=500)
        self.assertIn(planted, ctx.text)
        self.assertIn(planted, str(ctx))
        self.assertEqual(ctx.entries[0].id, ack.id)

        st = self.mem.session(session)
        self.assertEqual((st.session, st.user, st.turns), (session, user, 2))
        self.assertEqual([e.id for e in st.entries], [ack.id, reply_ack.id])
        self.assertEqual(st.entries[0].role, "user")

    def test_publish_with_the_same_id_again_is_a_duplicate(self) -> None:
        session, user = unique("s"), unique("u")
        first = self.mem.publish(session, "user", "Remember the code word: heron.", user=user, id="turn-1")
        again = self.mem.publish(session, "user", "Remember the code word: heron.", user=user, id="turn-1")
        self.assertEqual(first.id, "turn-1")
        self.assertFalse(first.duplicate)
        self.assertTrue(again.duplicate)
        self.assertEqual(again.seq, first.seq)

    def test_chinese_text_round_trips(self) -> None:
        session, user = unique("s"), unique("u")
        planted = "请记住：我的护照放在书房左边第二个抽屉里。"
        ack = self.mem.publish(session, "user", planted, user=user)
        r = self.mem.retrieve("护照", session=session, after=ack.id, wait_ms=15000)
        self.assertEqual(r.entries[0].content, planted)


@needs_service
class FactsTest(unittest.TestCase):
    def setUp(self) -> None:
        self.mem = client()

    def test_fact_remembered_in_one_session_is_recalled_in_a_new_one(self) -> None:
        user, s1, s2 = unique("u"), unique("s1"), unique("s2")
        said = self.mem.publish(s1, "user", "I live in Paris.", user=user)
        self.mem.publish(s1, "assistant", "Paris, noted.")
        end = self.mem.end_session(s1, user)
        self.assertFalse(end.duplicate)

        fact = self.mem.wait_for_fact(user, "Paris")
        self.assertEqual(fact.content, "The user lives in Paris")
        self.assertEqual((fact.state, fact.category, fact.key), ("live", "identity", "user.city"))
        self.assertEqual(fact.provenance, [said.id])
        self.assertIsNotNone(fact.valid_from)
        self.assertEqual([f.id for f in self.mem.facts(user)], [fact.id])

        # A new session: the query shares no word with the fact, the profile carries it.
        ctx = self.mem.context("what do you know about me?", session=s2, user=user)
        self.assertIn("The user lives in Paris", ctx.text)
        self.assertEqual([p.id for p in ctx.profile], [fact.id])
        self.assertEqual((ctx.profile[0].type, ctx.profile[0].source), ("FACT", "long"))
        self.assertGreater(ctx.tokens, 0)
        # A query that matches it finds it among the entries, from long-term memory.
        r = self.mem.retrieve("which city does the user live in? Paris?", session=s2, user=user)
        self.assertIn(fact.id, [e.id for e in r.entries if e.source == "long" and e.type == "FACT"])

        # A changed fact supersedes the old one, kept in the history.
        s3 = unique("s3")
        self.mem.publish(s3, "user", "I live in Lyon now.", user=user)
        self.mem.end_session(s3, user)
        self.mem.wait_for_fact(user, "Lyon")
        history = eventually(lambda: (lambda fs: fs if any(f.state == "superseded" for f in fs) else None)(
            self.mem.facts(user, history=True)))
        old = [f for f in history if f.id == fact.id][0]
        self.assertEqual(old.state, "superseded")
        self.assertIsNotNone(old.valid_to)
        self.assertTrue(old.superseded_by)
        self.assertNotIn(fact.id, [f.id for f in self.mem.facts(user)])

        forgotten = self.mem.forget(user)
        self.assertGreaterEqual(forgotten.get("facts", 0), 2, forgotten)
        self.assertGreaterEqual(forgotten.get("sessions", 0), 1, forgotten)
        eventually(lambda: True if self.mem.facts(user, history=True) == [] else None)

        def gone():
            try:
                self.mem.session(s1)
            except agentmem.NotFoundError as e:
                return e
            return None

        self.assertEqual(eventually(gone).field, "session")

    def test_end_session_then_get_correct_delete_one_fact(self) -> None:
        user, session = unique("u"), unique("s")
        said = self.mem.publish(session, "user", "I live in Paris.", user=user)
        self.mem.retrieve("Paris", session=session, after=said.id, wait_ms=15000)  # applied
        end = self.mem.end_session(session)  # the user is the session's owner
        self.assertTrue(end.id)
        self.assertEqual(end.session, session)

        paris = self.mem.wait_for_fact(user, "Paris")
        self.assertEqual(self.mem.get_fact(user, paris.id), paris)
        lyon = self.mem.correct_fact(user, paris.id, "The user lives in Lyon")
        self.assertEqual((lyon.content, lyon.state, lyon.key), ("The user lives in Lyon", "live", paris.key))
        old = self.mem.get_fact(user, paris.id)
        self.assertEqual((old.state, old.superseded_by), ("superseded", lyon.id))
        self.assertEqual(self.mem.delete_fact(user, lyon.id).state, "deleted")
        self.assertEqual(self.mem.facts(user), [])

        with self.assertRaises(agentmem.NotFoundError) as cm:
            self.mem.get_fact(user, "nope")
        self.assertEqual(cm.exception.field, "id")
        with self.assertRaises(agentmem.NotFoundError) as cm:
            self.mem.end_session(unique("nope"))
        self.assertEqual(cm.exception.field, "session")
        if OTHER_TOKEN:
            with self.assertRaises(agentmem.PermissionDeniedError):
                client(token=OTHER_TOKEN).delete_fact(user, paris.id)

    def test_unknown_user_has_no_facts(self) -> None:
        self.assertEqual(self.mem.facts(unique("nobody")), [])


@needs_service
class BatchTest(unittest.TestCase):
    def setUp(self) -> None:
        self.mem = client()

    def test_batch_with_duplicate_ids_is_idempotent(self) -> None:
        session, user = unique("s"), unique("u")
        batch = [
            Turn(session, "user", "I prefer tea over coffee.", user=user, id="b-1"),
            Turn(session, "assistant", "Tea it is.", id="b-2"),
            Turn(session, "user", "I prefer tea over coffee.", user=user, id="b-1"),  # the same id again
        ]
        acks = self.mem.publish_batch(batch)
        self.assertEqual([a.id for a in acks], ["b-1", "b-2", "b-1"])
        self.assertEqual([a.duplicate for a in acks], [False, False, True])
        self.assertEqual(acks[2].seq, acks[0].seq)

        again = self.mem.publish_batch(batch)  # a retried batch adds nothing
        self.assertEqual([a.duplicate for a in again], [True, True, True])
        self.assertEqual([a.seq for a in again], [acks[0].seq, acks[1].seq, acks[0].seq])

        r = self.mem.retrieve("tea or coffee", session=session, after="b-2", wait_ms=15000)
        self.assertEqual(sorted(e.id for e in r.entries), ["b-1", "b-2"])
        st = self.mem.session(session)
        self.assertEqual((st.turns, [e.id for e in st.entries]), (2, ["b-1", "b-2"]))

    def test_batch_makes_ids_and_ends_sessions(self) -> None:
        session, user = unique("s"), unique("u")
        acks = self.mem.publish_batch([
            Turn(session, "user", "My favourite programming language is Go.", user=user),
            Turn(session, "tool", '{"weather": "sunny"}', tool="weather"),
            SessionEnd(session, user),
        ])
        self.assertEqual(len({a.id for a in acks}), 3)
        for a in acks:
            uuid.UUID(a.id)
            self.assertEqual(a.session, session)
        self.assertEqual([a.seq for a in acks], sorted(a.seq for a in acks))
        self.assertEqual(self.mem.publish_batch([]), [])
        fact = self.mem.wait_for_fact(user, "Go")
        self.assertEqual(fact.key, "user.favorite_language")
        self.assertTrue(eventually(lambda: self.mem.session(session).ended or None))


@needs_service
class ProblemTest(unittest.TestCase):
    def setUp(self) -> None:
        self.mem = client()

    def test_bad_request_names_the_field(self) -> None:
        cases = [
            ("empty query", lambda: self.mem.retrieve(""), "query"),
            ("limit out of range", lambda: self.mem.retrieve("x", limit=0), "limit"),
            ("unknown source", lambda: self.mem.retrieve("x", session="s", sources=["nowhere"]), "sources"),
            ("unknown type", lambda: self.mem.retrieve("x", types=["NOTE"]), "types"),
            ("wait_ms without after", lambda: self.mem.retrieve("x", session="s", wait_ms=10), "wait_ms"),
            ("bad time", lambda: self.mem.retrieve("x", at="yesterday"), "at"),
            ("bad role", lambda: self.mem.publish(unique("s"), "robot", "hi", user="u1"), "role"),
            ("bad session", lambda: self.mem.publish("a.b", "user", "hi", user="u1"), "subject"),
            ("bad user", lambda: self.mem.facts("al ice"), "user"),
            ("bad turn time", lambda: self.mem.publish(unique("s"), "user", "hi", user="u1", time="yesterday"), "time"),
        ]
        for name, call, field in cases:
            with self.subTest(name):
                with self.assertRaises(agentmem.BadRequestError) as cm:
                    call()
                err = cm.exception
                self.assertEqual((err.status, err.field), (400, field), err.problem)
                self.assertTrue(err.detail)
                self.assertIn(field, str(err))
                self.assertIsInstance(err, agentmem.AgentmemError)

    def test_invalid_event_in_a_batch_is_named_and_nothing_is_published(self) -> None:
        session, user = unique("s"), unique("u")
        with self.assertRaises(agentmem.BadRequestError) as cm:
            self.mem.publish_batch([
                Turn(session, "user", "fine", user=user, id="ok-1"),
                Turn(session, "user", "", user=user, id="bad-1"),
            ])
        err = cm.exception
        self.assertEqual((err.index, err.field), (1, "content"), err.problem)
        self.assertEqual([e["index"] for e in err.errors], [1])
        with self.assertRaises(agentmem.NotFoundError):
            self.mem.session(session)

    def test_authentication_and_tenancy(self) -> None:
        with self.assertRaises(agentmem.AuthenticationError) as cm:
            client(token=None).retrieve("anything")
        self.assertEqual((cm.exception.status, cm.exception.field), (401, "authorization"))
        with self.assertRaises(agentmem.AuthenticationError):
            client(token="not-a-token").retrieve("anything")
        if OTHER_TOKEN:
            with self.assertRaises(agentmem.PermissionDeniedError) as cm2:
                client(token=OTHER_TOKEN).retrieve("anything")
            self.assertEqual(cm2.exception.status, 403)
            self.assertNotEqual(OTHER_TENANT, TENANT)

    def test_unknown_session_is_not_found(self) -> None:
        with self.assertRaises(agentmem.NotFoundError) as cm:
            self.mem.session(unique("nope"))
        self.assertEqual((cm.exception.status, cm.exception.field), (404, "session"))

    def test_after_not_applied_in_time_is_unavailable_at_once(self) -> None:
        # The retriever waits wait_ms for the turn; retrying would wait that long again (a
        # retrieve with an unknown after took max_attempts times wait_ms plus backoffs to fail).
        waits: List[float] = []
        mem = client(max_attempts=4, sleep=waits.append)
        session = unique("s")
        with self.assertRaises(agentmem.ServiceUnavailableError) as cm:
            mem.retrieve("x", session=session, after="never-published", wait_ms=50)
        err = cm.exception
        self.assertEqual((err.status, err.field), (503, "after"), err.problem)
        self.assertEqual(waits, [], "a 503 on after was retried")
        self.assertIn('"never-published"', err.detail)
        self.assertEqual(str(err).count("after:"), 1, str(err))
        self.assertTrue(str(err).startswith("agentmem: 503 after: turn "), str(err))

if __name__ == "__main__":
    unittest.main()
