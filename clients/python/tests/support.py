"""What the tests share: the service under test, from the environment the Go test sets."""

from __future__ import annotations

import os
import time
import unittest
import uuid
from typing import Callable, Optional, TypeVar

import agentmem

URL = os.environ.get("AGENTMEM_URL", "")
TENANT = os.environ.get("AGENTMEM_TENANT", "acme")
TOKEN = os.environ.get("AGENTMEM_TOKEN") or None
OTHER_TENANT = os.environ.get("AGENTMEM_OTHER_TENANT", "")
OTHER_TOKEN = os.environ.get("AGENTMEM_OTHER_TOKEN") or None

# Service tests skip without a service; the Go test (python_test.go) always gives one and fails
# when a test is skipped.
needs_service = unittest.skipUnless(URL, "AGENTMEM_URL is not set: run through go test ./clients/python/")

T = TypeVar("T")


def unique(prefix: str) -> str:
    """Returns a session or user id no other test uses."""
    return "%s-%s" % (prefix, uuid.uuid4().hex[:12])


def client(**kw) -> agentmem.Client:
    kw.setdefault("token", TOKEN)
    kw.setdefault("timeout", 20.0)
    return agentmem.Client(URL, TENANT, **kw)


def eventually(fn: Callable[[], Optional[T]], timeout: float = 15.0, interval: float = 0.05) -> T:
    """Calls fn until it returns something other than None (an event happened), bounded by
    timeout; raises AssertionError with the last exception or result otherwise."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            got = fn()
            if got is not None:
                return got
            last = got
        except (AssertionError, agentmem.AgentmemError) as e:
            last = e
        if time.monotonic() >= deadline:
            raise AssertionError("not within %.1fs: %r" % (timeout, last))
        time.sleep(interval)
