"""The LangChain-style history and memory against a real agentmem, without LangChain."""

from __future__ import annotations

import asyncio
import unittest

import agentmem
from agentmem import AgentmemChatMessageHistory, AgentmemMemory, Message

from .support import client, eventually, needs_service, unique


class FakeLangChainMessage:
    """What LangChain's messages look like to the history: a type and a content."""

    def __init__(self, type: str, content: object) -> None:
        self.type = type
        self.content = content


@needs_service
class ChatMessageHistoryTest(unittest.TestCase):
    def setUp(self) -> None:
        self.mem = client()

    def test_messages_are_published_as_turns(self) -> None:
        session, user = unique("s"), unique("u")
        h = AgentmemChatMessageHistory(self.mem, session, user)
        self.assertEqual(h.messages, [])
        h.add_messages([
            FakeLangChainMessage("human", "My favourite programming language is Rust."),
            {"role": "assistant", "content": "Rust, noted."},
        ])
        h.add_user_message("And I live in Oslo.")
        h.add_ai_message(Message("ai", "Oslo it is."))
        h.add_message(("system", "Be brief."))
        h.add_message(FakeLangChainMessage("tool", [{"type": "text", "text": "sunny"}]))
        got = [(m.type, m.content) for m in h.messages]
        self.assertEqual(got, [
            ("human", "My favourite programming language is Rust."), ("ai", "Rust, noted."),
            ("human", "And I live in Oslo."), ("ai", "Oslo it is."), ("system", "Be brief."), ("tool", "sunny"),
        ])
        r = self.mem.retrieve("favourite programming language Rust", session=session, after=h.last_id, wait_ms=15000)
        self.assertEqual(r.entries[0].content, "My favourite programming language is Rust.")
        self.assertEqual(r.entries[0].metadata.get("role"), "user")
        st = self.mem.session(session)
        self.assertEqual((st.user, st.turns), (user, 6))
        self.assertEqual([e.role for e in st.entries], ["user", "assistant", "user", "assistant", "system", "tool"])

        with self.assertRaises(ValueError):
            h.add_message(FakeLangChainMessage("robot", "beep"))

        # The async methods LangChain calls when a chain runs async.
        async def run_async() -> list:
            await h.aadd_messages([("human", "One more thing.")])
            return await h.aget_messages()

        self.assertEqual(asyncio.run(run_async())[-1].content, "One more thing.")
        self.assertEqual(eventually(lambda: (lambda s: s if s.turns == 7 else None)(self.mem.session(session))).turns, 7)

        # clear ends the session: its facts are extracted, the list is empty.
        h.clear()
        self.assertEqual(h.messages, [])
        self.mem.wait_for_fact(user, "Oslo")

        # A new session whose history starts with what agentmem remembers.
        h2 = AgentmemChatMessageHistory(self.mem, unique("s"), user, context_query="what do you know about me?")
        first = h2.messages[0]
        self.assertEqual(first.type, "system")
        self.assertIn("The user lives in Oslo", first.content)
        self.assertEqual(len(h2.messages), 1)


@needs_service
class MemoryTest(unittest.TestCase):
    def setUp(self) -> None:
        self.mem = client()

    def test_memory_saves_turns_and_loads_the_context_with_the_profile(self) -> None:
        user = unique("u")
        m = AgentmemMemory(self.mem, unique("s"), user)
        self.assertEqual(m.memory_variables, ["history"])
        self.assertEqual(m.load_memory_variables({"input": "hello"}), {"history": ""})
        m.save_context({"input": "I live in Berlin."}, {"output": "Berlin, noted."})
        got = m.load_memory_variables({"input": "do you remember Berlin?"})
        self.assertIn("I live in Berlin.", got["history"])
        self.assertIn("Berlin, noted.", got["history"])
        m.clear()
        self.mem.wait_for_fact(user, "Berlin")

        # A new session: the input shares nothing with the fact; the profile brings it.
        m2 = AgentmemMemory(self.mem, unique("s"), user, memory_key="memory", input_key="question",
                            output_key="answer", profile_key="profile")
        self.assertEqual(m2.memory_variables, ["memory", "profile"])
        got = m2.load_memory_variables({"question": "what do you know about me?", "other": "x"})
        self.assertIn("The user lives in Berlin", got["memory"])
        self.assertEqual(got["profile"], ["The user lives in Berlin"])
        m2.save_context({"question": "Thanks!", "other": "x"}, {"answer": "You are welcome.", "extra": 1})
        st = eventually(lambda: (lambda s: s if s.turns == 2 else None)(self.mem.session(m2.session)))
        self.assertEqual([e.role for e in st.entries], ["user", "assistant"])

    def test_ambiguous_keys_need_input_key(self) -> None:
        m = AgentmemMemory(self.mem, unique("s"), unique("u"))
        with self.assertRaises(ValueError):
            m.save_context({"a": "1", "b": "2"}, {"output": "x"})


if __name__ == "__main__":
    unittest.main()
