"""The build backend (agentmem_build.py): what pip install ./clients/python builds, offline.

python_test.go runs the install recipe of the README itself, in fresh venvs; these tests check
the wheel and the sdist the backend writes, and its TOML reader for Pythons without tomllib.
"""

from __future__ import annotations

import base64
import hashlib
import os
import tarfile
import tempfile
import unittest
import zipfile

import agentmem_build

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pyproject() -> str:
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        return f.read()


class BuildTest(unittest.TestCase):
    def test_pyproject_needs_nothing_to_build(self) -> None:
        doc = agentmem_build.parse_toml(pyproject())
        self.assertEqual(doc["build-system"], {"requires": [], "build-backend": "agentmem_build",
                                               "backend-path": ["."]})
        self.assertEqual(doc["project"]["dependencies"], [])

    def test_the_toml_reader_agrees_with_tomllib(self) -> None:
        try:
            import tomllib  # type: ignore[import-not-found]
        except ImportError:  # Python 3.8 to 3.10: the reader is all there is; it read the file above.
            return
        self.assertEqual(agentmem_build.parse_toml(pyproject()), tomllib.loads(pyproject()))

    def test_the_toml_reader_refuses_what_it_cannot_read(self) -> None:
        for text, want in [("[project]\nversion = 1\n", "line 2: version"),
                           ("[project]\nname = 'single'\n", "line 2: name"),
                           ("[project]\nx = [1, 2]\n", "line 2: x is not an array of strings"),
                           ("[project]\nlicense = {text = 3}\n", "line 2: license is not an inline table"),
                           ("[[bin]]\n", "line 1: cannot read")]:
            with self.subTest(text=text):
                with self.assertRaises(ValueError) as cm:
                    agentmem_build.parse_toml(text)
                self.assertIn(want, str(cm.exception))

    def test_the_wheel_holds_the_package_and_its_record(self) -> None:
        with tempfile.TemporaryDirectory() as out:
            name = agentmem_build.build_wheel(out)
            self.assertEqual(name, "agentmem-0.1.0-py3-none-any.whl")
            with zipfile.ZipFile(os.path.join(out, name)) as zf:
                names = set(zf.namelist())
                want = {"agentmem/" + f for f in os.listdir(os.path.join(HERE, "agentmem"))
                        if f.endswith(".py") or f == "py.typed"}
                self.assertEqual({n for n in names if n.startswith("agentmem/")}, want)
                meta = zf.read("agentmem-0.1.0.dist-info/METADATA").decode()
                self.assertIn("Name: agentmem\nVersion: 0.1.0\n", meta)
                self.assertIn("Requires-Python: >=3.8\n", meta)
                self.assertIn("Tag: py3-none-any", zf.read("agentmem-0.1.0.dist-info/WHEEL").decode())
                record = zf.read("agentmem-0.1.0.dist-info/RECORD").decode().splitlines()
                self.assertEqual({line.split(",")[0] for line in record}, names)
                for line in record:
                    path, digest, size = line.split(",")
                    if path.endswith("/RECORD"):
                        continue
                    data = zf.read(path)
                    sha = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                    self.assertEqual((digest, size), ("sha256=" + sha, str(len(data))), path)

    def test_the_sdist_holds_what_builds_the_wheel(self) -> None:
        with tempfile.TemporaryDirectory() as out:
            name = agentmem_build.build_sdist(out)
            with tarfile.open(os.path.join(out, name)) as tf:
                names = set(tf.getnames())
            for path in ["PKG-INFO", "pyproject.toml", "README.md", "agentmem_build.py", "agentmem/client.py"]:
                self.assertIn("agentmem-0.1.0/" + path, names)


if __name__ == "__main__":
    unittest.main()
