"""The build backend of the agentmem client (PEP 517 and PEP 660), standard library only.

pip builds a package with the backend its pyproject.toml names, installed first into an isolated
environment from the package index. This one needs nothing installed (``requires = []``,
``backend-path = ["."]``), so ``pip install ./clients/python`` works offline, in a fresh venv
(which has pip but perhaps neither setuptools nor wheel) and with any Python 3.8 or later.

It builds what the package is: the ``agentmem`` directory as a pure-Python wheel
(``py3-none-any``) with the metadata of pyproject.toml's ``[project]`` table, an sdist, and an
editable wheel (``pip install -e``) whose ``.pth`` file imports the package from this directory.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import tarfile
import time
import zipfile
from typing import Any, Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "agentmem"
# What an sdist holds besides the package: enough to build the wheel from it again.
SDIST_FILES = ("pyproject.toml", "README.md", "agentmem_build.py")


def read_project(root: str = ROOT) -> Dict[str, Any]:
    """Returns the ``[project]`` table of pyproject.toml (tomllib from Python 3.11, else
    :func:`parse_toml`, which reads the part of TOML that file uses)."""
    with open(os.path.join(root, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    try:
        import tomllib  # type: ignore[import-not-found]
    except ImportError:
        doc = parse_toml(text)
    else:
        doc = tomllib.loads(text)
    project = doc.get("project")
    if not isinstance(project, dict) or not project.get("name") or not project.get("version"):
        raise ValueError("pyproject.toml: [project] needs a name and a version")
    return project


_STRING = r'"(?:[^"\\\n]|\\.)*"'


def parse_toml(text: str) -> Dict[str, Any]:
    """Parses the TOML pyproject.toml is written in: ``[table]`` headers and ``key = value``
    lines whose value is a string, an array of strings (over several lines too) or an inline
    table of strings. Anything else raises ValueError naming the line, so that a change to
    pyproject.toml beyond this subset is noticed on Python 3.8 to 3.10 (tests/test_build.py
    checks that this parser and tomllib agree)."""
    doc: Dict[str, Any] = {}
    table = doc
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        n, line = i + 1, lines[i].strip()
        i += 1
        if not line or line.startswith("#"):
            continue
        header = re.fullmatch(r"\[([A-Za-z0-9_.-]+)\]", line)
        if header:
            table = doc
            for part in header.group(1).split("."):
                table = table.setdefault(part, {})
            continue
        kv = re.fullmatch(r"([A-Za-z0-9_-]+)\s*=\s*(.*)", line)
        if not kv:
            raise ValueError("pyproject.toml line %d: cannot read %r" % (n, line))
        key, value = kv.groups()
        if value.startswith("["):
            while value.count("[") != value.count("]") and i < len(lines):
                value += "\n" + lines[i].strip()
                i += 1
            if not re.fullmatch(r"\[\s*(?:%s\s*,\s*)*(?:%s\s*,?\s*)?\]" % (_STRING, _STRING), value):
                raise ValueError("pyproject.toml line %d: %s is not an array of strings" % (n, key))
            table[key] = [json.loads(s) for s in re.findall(_STRING, value)]
        elif value.startswith("{"):
            pair = r"([A-Za-z0-9_-]+)\s*=\s*(%s)" % _STRING
            if not re.fullmatch(r"\{\s*(?:%s\s*,\s*)*(?:%s)?\s*\}" % (pair, pair), value):
                raise ValueError("pyproject.toml line %d: %s is not an inline table of strings" % (n, key))
            table[key] = {k: json.loads(v) for k, v in re.findall(pair, value)}
        elif re.fullmatch(_STRING, value):
            table[key] = json.loads(value)
        else:
            raise ValueError("pyproject.toml line %d: %s: only strings, arrays and inline tables of strings are read" % (n, key))
    return doc


def metadata(project: Dict[str, Any], root: str = ROOT) -> str:
    """Returns the core metadata (METADATA, PKG-INFO) of the project, the README as its
    description."""
    lines = ["Metadata-Version: 2.1", "Name: " + project["name"], "Version: " + project["version"]]
    if project.get("description"):
        lines.append("Summary: " + project["description"])
    lic = project.get("license")
    if isinstance(lic, dict) and lic.get("text"):
        lines.append("License: " + lic["text"])
    if project.get("requires-python"):
        lines.append("Requires-Python: " + project["requires-python"])
    lines += ["Requires-Dist: " + d for d in project.get("dependencies") or []]
    lines += ["Classifier: " + c for c in project.get("classifiers") or []]
    readme = project.get("readme")
    body = ""
    if readme:
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(root, readme), encoding="utf-8") as f:
            body = f.read()
    return "\n".join(lines) + "\n\n" + body


def _epoch() -> Tuple[int, int, int, int, int, int]:
    """The time stamped on archive members: SOURCE_DATE_EPOCH when set (reproducible builds),
    else 1980-01-01, the earliest a zip can hold; either way the same for every build."""
    when = int(os.environ.get("SOURCE_DATE_EPOCH") or 315532800)
    return time.gmtime(max(when, 315532800))[:6]


def _package_files(root: str) -> List[str]:
    """Returns the files of the package, relative to root, in a stable order."""
    found = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, PACKAGE)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if not name.endswith((".pyc", ".pyo")):
                found.append(os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/"))
    return found


def _wheel(wheel_directory: str, files: Dict[str, bytes]) -> str:
    """Writes a wheel of files (archive path → content) with its dist-info and returns its name."""
    project = read_project()
    name, version = project["name"].replace("-", "_"), project["version"]
    dist_info = "%s-%s.dist-info" % (name, version)
    files = dict(files)
    files[dist_info + "/METADATA"] = metadata(project).encode("utf-8")
    files[dist_info + "/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: agentmem_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n").encode()
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (path, digest, len(data)))
    record.append(dist_info + "/RECORD,,")
    files[dist_info + "/RECORD"] = ("\n".join(record) + "\n").encode()

    filename = "%s-%s-py3-none-any.whl" % (name, version)
    stamp = _epoch()
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, stamp)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return filename


def _read(path: str) -> bytes:
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read()


# PEP 517 hooks.

def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                metadata_directory: Optional[str] = None) -> str:
    """Builds the wheel of the agentmem package into wheel_directory and returns its name."""
    return _wheel(wheel_directory, {path: _read(path) for path in _package_files(ROOT)})


# The editable wheel's module: it finds the package agentmem, and only it, in the source tree
# (this directory on sys.path would make tests/ and this backend importable too).
_EDITABLE = """import importlib.util
import sys


class _AgentmemFinder:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != "agentmem":
            return None
        return importlib.util.spec_from_file_location(
            name, %(init)r, submodule_search_locations=[%(package)r])


sys.meta_path.append(_AgentmemFinder)
"""


def build_editable(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                   metadata_directory: Optional[str] = None) -> str:
    """Builds an editable wheel (PEP 660): a .pth file that imports a finder of the package in
    this source tree, so that an edit of agentmem/ takes effect without installing again."""
    package = os.path.join(ROOT, PACKAGE)
    finder = _EDITABLE % {"init": os.path.join(package, "__init__.py"), "package": package}
    return _wheel(wheel_directory, {"_agentmem_editable.py": finder.encode("utf-8"),
                                    "_agentmem_editable.pth": b"import _agentmem_editable\n"})


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    """Builds the source distribution (the package, pyproject.toml, README.md, this backend and
    PKG-INFO) into sdist_directory and returns its name."""
    project = read_project()
    base = "%s-%s" % (project["name"].replace("-", "_"), project["version"])
    files = {path: _read(path) for path in list(SDIST_FILES) + _package_files(ROOT)}
    files["PKG-INFO"] = metadata(project).encode("utf-8")
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH") or 315532800)
    filename = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz", format=tarfile.PAX_FORMAT) as tf:
        for path in sorted(files):
            info = tarfile.TarInfo(base + "/" + path)
            info.size, info.mtime, info.mode = len(files[path]), mtime, 0o644
            tf.addfile(info, io.BytesIO(files[path]))
    return filename
