"""LangChain-style memory backed by agentmem, without LangChain.

The classes are duck-typed to LangChain's interfaces, so LangChain need not be installed:

- :class:`AgentmemChatMessageHistory` has what ``BaseChatMessageHistory`` has (``messages``,
  ``add_messages``, ``add_message``, ``add_user_message``, ``add_ai_message``, ``clear``, and
  ``aget_messages``, ``aadd_messages``, ``aclear``), so it
  can be what ``RunnableWithMessageHistory``'s ``get_session_history`` returns.
- :class:`AgentmemMemory` has what LangChain's (legacy) memory classes have
  (``memory_variables``, ``load_memory_variables``, ``save_context``, ``clear``).

Every message is published to agentmem as a turn as it happens. agentmem serves memory by
relevance, not transcripts: the history's ``messages`` are the messages this object added (and,
with ``context_query``, a system message carrying what agentmem remembers), and the memory
class's variable is the context agentmem builds for the current input, the user's profile
included.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from .client import Client
from .models import SessionEnd, Turn

__all__ = ["Message", "AgentmemChatMessageHistory", "AgentmemMemory"]

# LangChain message types and agentmem roles.
_ROLE_OF_TYPE = {"human": "user", "user": "user", "ai": "assistant", "assistant": "assistant",
                 "system": "system", "tool": "tool", "function": "tool"}
_TYPE_OF_ROLE = {"user": "human", "assistant": "ai", "system": "system", "tool": "tool"}


@dataclass
class Message:
    """A chat message shaped like LangChain's ``BaseMessage``: ``type`` is human, ai, system or
    tool, ``content`` the text."""

    type: str
    content: str
    name: Optional[str] = None
    additional_kwargs: Dict[str, Any] = field(default_factory=dict)


def _langchain_message(m: Message) -> Any:
    """Returns m as a langchain_core message when LangChain is installed, else m itself."""
    try:
        from langchain_core import messages as lc  # type: ignore[import-not-found]
    except ImportError:
        return m
    if m.type == "human":
        return lc.HumanMessage(content=m.content)
    if m.type == "ai":
        return lc.AIMessage(content=m.content)
    if m.type == "system":
        return lc.SystemMessage(content=m.content)
    return lc.ToolMessage(content=m.content, tool_call_id=m.additional_kwargs.get("tool_call_id", m.name or ""))


def _role_content(msg: Any) -> "tuple[str, str, Optional[str]]":
    """Returns the agentmem role, content and tool name of a message: a LangChain message or a
    :class:`Message` (``.type``, ``.content``), a ``{"role", "content"}`` dict, or a
    ``(role, content)`` tuple."""
    if isinstance(msg, dict):
        kind, content, name = msg.get("role") or msg.get("type"), msg.get("content"), msg.get("name")
    elif isinstance(msg, (tuple, list)) and len(msg) == 2:
        kind, content, name = msg[0], msg[1], None
    else:
        kind, content, name = getattr(msg, "type", None), getattr(msg, "content", None), getattr(msg, "name", None)
        if kind == "chat":
            kind = getattr(msg, "role", kind)
    role = _ROLE_OF_TYPE.get(str(kind))
    if role is None:
        raise ValueError("agentmem: a message of type %r: want human, ai, system or tool" % (kind,))
    if not isinstance(content, str):
        # LangChain content may be a list of parts; keep their text.
        parts = content if isinstance(content, list) else [content]
        content = "\n".join(p if isinstance(p, str) else str(p.get("text", "")) if isinstance(p, dict) else str(p)
                            for p in parts)
    return role, content, name if role == "tool" else None


class AgentmemChatMessageHistory:
    """A chat message history (duck-typed to LangChain's ``BaseChatMessageHistory``) that
    publishes every message to agentmem as a turn of ``session`` owned by ``user``.

    ``messages`` are the messages added through this object. With ``context_query`` set, the
    list starts with a system message carrying agentmem's context for that query (the user's
    profile, facts and summaries of earlier sessions), so a new session starts with what
    agentmem remembers. ``clear()`` ends the session (agentmem then extracts its facts) and
    empties the list; the memory stays in agentmem (``Client.forget`` removes it).
    """

    def __init__(
        self,
        client: Client,
        session: str,
        user: str,
        *,
        context_query: Optional[str] = None,
        context_tokens: Optional[int] = None,
        wait_ms: int = 5000,
    ) -> None:
        self.client = client
        self.session = session
        self.user = user
        self.context_query = context_query
        self.context_tokens = context_tokens
        self.wait_ms = wait_ms
        self.last_id: Optional[str] = None
        self._messages: List[Message] = []

    @property
    def messages(self) -> List[Any]:
        """The messages added through this object, oldest first (langchain_core messages when
        LangChain is installed, else :class:`Message`), after the context message when
        ``context_query`` is set and agentmem remembers something for it."""
        out: List[Message] = []
        if self.context_query:
            ctx = self.client.context(self.context_query, session=self.session, user=self.user,
                                      sources=["long"], context_tokens=self.context_tokens,
                                      **self._read_your_writes())
            if ctx.text:
                out.append(Message(type="system", content=ctx.text))
        out.extend(self._messages)
        return [_langchain_message(m) for m in out]

    def add_messages(self, messages: Sequence[Any]) -> None:
        """Publishes messages (LangChain messages, :class:`Message`, ``{"role", "content"}``
        dicts or ``(role, content)`` tuples) as turns in one batch, in order."""
        turns: List[Turn] = []
        added: List[Message] = []
        for m in messages:
            role, content, tool = _role_content(m)
            turns.append(Turn(session=self.session, role=role, content=content, user=self.user,
                              tool=tool, id=str(uuid.uuid4())))
            added.append(Message(type=_TYPE_OF_ROLE[role], content=content, name=tool))
        if not turns:
            return
        acks = self.client.publish_batch(turns)
        self.last_id = acks[-1].id if acks else turns[-1].id
        self._messages.extend(added)

    def add_message(self, message: Any) -> None:
        """Publishes one message."""
        self.add_messages([message])

    def add_user_message(self, message: Any) -> None:
        """Publishes a user (human) message: a string or a message."""
        self.add_messages([("human", message) if isinstance(message, str) else message])

    def add_ai_message(self, message: Any) -> None:
        """Publishes an assistant (AI) message: a string or a message."""
        self.add_messages([("ai", message) if isinstance(message, str) else message])

    def clear(self) -> None:
        """Ends the session (its facts are extracted) and empties the messages. A message added
        after it reopens the session."""
        ack = self.client.end_session(self.session, self.user)
        self.last_id = ack.id
        self._messages = []

    # The async methods LangChain calls when a chain runs async: the same calls, on a thread.

    async def aget_messages(self) -> List[Any]:
        """Returns :attr:`messages` without blocking the event loop."""
        return await asyncio.get_running_loop().run_in_executor(None, lambda: self.messages)

    async def aadd_messages(self, messages: Sequence[Any]) -> None:
        """Runs :meth:`add_messages` without blocking the event loop."""
        await asyncio.get_running_loop().run_in_executor(None, self.add_messages, list(messages))

    async def aclear(self) -> None:
        """Runs :meth:`clear` without blocking the event loop."""
        await asyncio.get_running_loop().run_in_executor(None, self.clear)

    def _read_your_writes(self) -> Dict[str, Any]:
        if self.last_id and self.wait_ms:
            return {"after": self.last_id, "wait_ms": self.wait_ms}
        return {}


class AgentmemMemory:
    """A conversation memory (duck-typed to LangChain's memory interface) backed by agentmem.

    ``save_context(inputs, outputs)`` publishes the user's input and the assistant's output as
    two turns of ``session``; ``load_memory_variables(inputs)`` returns
    ``{memory_key: context}``, the text agentmem builds for the current input: the user's
    profile (their live facts, also in a new session), relevant facts, summaries and turns.
    With ``profile_key`` set it also returns the profile facts' contents as a list under that
    key. It waits until the last saved turn is applied (read your writes, up to ``wait_ms``).
    """

    def __init__(
        self,
        client: Client,
        session: str,
        user: str,
        *,
        memory_key: str = "history",
        input_key: Optional[str] = None,
        output_key: Optional[str] = None,
        profile_key: Optional[str] = None,
        context_tokens: Optional[int] = None,
        wait_ms: int = 5000,
    ) -> None:
        self.client = client
        self.session = session
        self.user = user
        self.memory_key = memory_key
        self.input_key = input_key
        self.output_key = output_key
        self.profile_key = profile_key
        self.context_tokens = context_tokens
        self.wait_ms = wait_ms
        self.last_id: Optional[str] = None

    @property
    def memory_variables(self) -> List[str]:
        """The keys load_memory_variables returns."""
        return [self.memory_key] + ([self.profile_key] if self.profile_key else [])

    def load_memory_variables(self, inputs: Dict[str, Any]) -> Dict[str, Any]:
        """Returns the context agentmem builds for the input (``""`` when it remembers nothing
        relevant, or when there is no input to ask about)."""
        query = self._input(inputs, required=False)
        out: Dict[str, Any] = {self.memory_key: ""}
        if self.profile_key:
            out[self.profile_key] = []
        if not query or not query.strip():
            return out
        kw: Dict[str, Any] = {}
        if self.last_id and self.wait_ms:
            kw = {"after": self.last_id, "wait_ms": self.wait_ms}
        ctx = self.client.context(query, session=self.session, user=self.user,
                                  context_tokens=self.context_tokens, **kw)
        out[self.memory_key] = ctx.text
        if self.profile_key:
            out[self.profile_key] = [f.content for f in ctx.profile]
        return out

    def save_context(self, inputs: Dict[str, Any], outputs: Dict[str, Any]) -> None:
        """Publishes the input as a user turn and the output as an assistant turn, in one
        batch."""
        turns = [Turn(session=self.session, role="user", content=str(self._input(inputs)),
                      user=self.user, id=str(uuid.uuid4()))]
        output = self._output(outputs)
        if output:
            turns.append(Turn(session=self.session, role="assistant", content=str(output),
                              user=self.user, id=str(uuid.uuid4())))
        acks = self.client.publish_batch(turns)
        self.last_id = acks[-1].id if acks else turns[-1].id

    def clear(self) -> None:
        """Ends the session: agentmem extracts its facts, which later sessions of the user get
        back. It deletes nothing (``Client.forget`` forgets the user)."""
        self.last_id = self.client.end_session(self.session, self.user).id

    def _input(self, inputs: Dict[str, Any], required: bool = True) -> Any:
        if self.input_key:
            return inputs.get(self.input_key) if not required else inputs[self.input_key]
        keys = [k for k in inputs if k not in self.memory_variables and k != "stop"]
        if len(keys) == 1:
            return inputs[keys[0]]
        if not required and not keys:
            return None
        raise ValueError("agentmem: set input_key: inputs have %r" % (sorted(keys),))

    def _output(self, outputs: Dict[str, Any]) -> Any:
        if self.output_key:
            return outputs.get(self.output_key)
        if len(outputs) == 1:
            return next(iter(outputs.values()))
        for k in ("output", "response", "text", "answer"):
            if k in outputs:
                return outputs[k]
        raise ValueError("agentmem: set output_key: outputs have %r" % (sorted(outputs),))
