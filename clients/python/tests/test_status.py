"""What became of an event: its status, the tenant's dead letters, and a rejected ``after``."""

from __future__ import annotations

import unittest

import agentmem

import os

from .support import OTHER_TENANT, OTHER_TOKEN, URL, client, eventually, needs_service, unique

REJECTED_SESSION = os.environ.get("AGENTMEM_REJECTED_SESSION", "")
REJECTED_ID = os.environ.get("AGENTMEM_REJECTED_ID", "")


@needs_service
class EventStatusTest(unittest.TestCase):
    def setUp(self) -> None:
        self.mem = client()

    def status_is(self, session: str, id: str, want: str) -> agentmem.EventStatus:
        """Polls the event's status until it is want."""
        def check():
            st = self.mem.event_status(session, id)
            return st if st.status == want else None
        return eventually(check)

    def test_applied(self) -> None:
        session, user = unique("s"), unique("u")
        ack = self.mem.publish(session, "user", "I like tea.", user=user)
        st = self.status_is(session, ack.id, "applied")
        self.assertEqual((st.id, st.session, st.status, st.dead_letter), (ack.id, session, "applied", None))

    def test_rejected_turn_is_visible(self) -> None:
        # No user on the session's first turn: the gateway refuses it at once (400 on user)...
        with self.assertRaises(agentmem.BadRequestError) as cm:
            self.mem.publish(unique("s"), "user", "who am I?")
        self.assertEqual(cm.exception.field, "user")
        # ... and an agent that published it over NATS (python_test.go did, for this test) sees
        # ingest's rejection here.
        session, id = REJECTED_SESSION, REJECTED_ID
        if not id:
            self.fail("AGENTMEM_REJECTED_ID is not set: run through python_test.go")
        ack = agentmem.Ack(id=id, session=session, stream="", seq=0, duplicate=False)
        st = self.status_is(session, ack.id, "rejected")
        self.assertIn("user is required", st.reason)
        dl = st.dead_letter
        self.assertIsNotNone(dl)
        self.assertEqual((dl.id, dl.session, dl.cls), (ack.id, session, "owner_mismatch"))
        self.assertIn("who am I?", dl.body)

        with self.assertRaises(agentmem.TurnRejectedError) as cm:
            self.mem.retrieve("anything", session=session, after=ack.id, wait_ms=15000)
        self.assertEqual((cm.exception.status, cm.exception.field), (400, "after"))
        self.assertIn("was rejected", cm.exception.detail)
        self.assertIn("user is required", cm.exception.detail)
        self.assertIsInstance(cm.exception, agentmem.BadRequestError)

        letters = self.mem.dead_letters(session=session)
        self.assertEqual([d.id for d in letters], [ack.id])
        self.assertIn(ack.id, [d.id for d in self.mem.dead_letters(limit=1000)])
        self.assertEqual(len(self.mem.dead_letters(limit=1)), 1)

        # Another tenant sees none of it.
        if OTHER_TENANT:
            other = agentmem.Client(URL, OTHER_TENANT, token=OTHER_TOKEN, timeout=20.0)
            with self.assertRaises(agentmem.NotFoundError):
                other.event_status(session, ack.id)
            self.assertNotIn(ack.id, [d.id for d in other.dead_letters(limit=1000)])

    def test_unknown_id(self) -> None:
        with self.assertRaises(agentmem.NotFoundError) as cm:
            self.mem.event_status(unique("s"), "never-published")
        self.assertEqual(cm.exception.field, "id")

    def test_bad_limit(self) -> None:
        with self.assertRaises(agentmem.BadRequestError) as cm:
            self.mem.dead_letters(limit=0)
        self.assertEqual(cm.exception.field, "limit")


if __name__ == "__main__":
    unittest.main()
