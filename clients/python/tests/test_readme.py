"""The README's script, run as it is written, against a real agentmem."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import unittest

from .support import TOKEN, URL, needs_service

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = "<!-- tests/test_readme.py runs the next block -->"


def readme_script() -> str:
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(re.escape(MARKER) + r"\s*```python\n(.*?)```", text, re.S)
    if not m:
        raise AssertionError("README.md has no python block after %r" % MARKER)
    return m.group(1)


def readme_output() -> str:
    """Returns a pattern of what the README says the script prints (any date)."""
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"It prints:\s*```text\n(.*?)```", text, re.S)
    if not m:
        raise AssertionError("README.md does not say what the script prints")
    return re.escape(m.group(1)).replace(r"2026\-12\-01", r"\d{4}\-\d{2}\-\d{2}")


class ReadmeTest(unittest.TestCase):
    def test_the_script_is_short(self) -> None:
        lines = readme_script().splitlines()
        self.assertLess(len(lines), 30, "the README promises a script under 30 lines")

    @needs_service
    def test_the_script_remembers_a_fact_across_sessions(self) -> None:
        # With AGENTMEM_INSTALLED=1 the package is the copy installed into this interpreter
        # (python_test.go installs it into a fresh venv as the README says); else it is imported
        # from this directory. Either way the script runs in an empty directory, so nothing else
        # is importable by accident.
        installed = os.environ.get("AGENTMEM_INSTALLED") == "1"
        env = dict(os.environ, AGENTMEM_URL=URL, PYTHONNOUSERSITE="1")
        env.pop("PYTHONPATH", None)
        if installed:
            where_want = sys.prefix
        else:
            env["PYTHONPATH"] = where_want = HERE
        if TOKEN:
            env["AGENTMEM_TOKEN"] = TOKEN
        wrapper = ("import os, sys, agentmem\n"
                   "sys.stderr.write('agentmem from %s\\n' % os.path.realpath(agentmem.__file__))\n"
                   "exec(compile(sys.stdin.read(), 'README.md', 'exec'))\n")
        with tempfile.TemporaryDirectory() as cwd:
            done = subprocess.run([sys.executable, "-c", wrapper], input=readme_script(), cwd=cwd, env=env,
                                  capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, "stdout:\n%s\nstderr:\n%s" % (done.stdout, done.stderr))
        where = done.stderr.splitlines()[0]
        self.assertTrue(where.startswith("agentmem from " + os.path.realpath(where_want)), where)
        self.assertRegex(done.stdout, "^" + readme_output() + "$", "the README says it prints something else")


if __name__ == "__main__":
    unittest.main()
