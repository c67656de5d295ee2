"""The lock file: `make lab` and `make test` install requirements.lock, so it must cover pyproject.toml.

A dependency added to pyproject.toml, or a range moved past the locked version, without `make lock`
makes these tests fail; so does an environment that was not installed from the lock.
"""
from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]


def requirements(pyproject: str) -> list[Requirement]:
    """Every requirement of pyproject.toml: the dependencies and every extra's."""
    project = tomllib.loads(pyproject)["project"]
    reqs = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        reqs += extra
    return [Requirement(r) for r in reqs]


def pins(lock: str) -> list[tuple[str, Version, Marker | None]]:
    """``(name, version, marker)`` of every ``name==version ; marker`` line of a lock file."""
    out = []
    for line in lock.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        spec, _, marker = line.partition(";")
        name, _, version = spec.partition("==")
        assert version, f"requirements.lock line {line!r} is not an exact pin (name==version)"
        out.append((canonicalize_name(name.strip()), Version(version.strip()),
                    Marker(marker.strip()) if marker.strip() else None))
    return out


def applicable(lock: str) -> dict[str, Version]:
    """The pins that apply to this interpreter and platform, by package name."""
    chosen: dict[str, Version] = {}
    for name, version, marker in pins(lock):
        if marker is None or marker.evaluate():
            assert name not in chosen, f"requirements.lock pins {name} twice for this Python"
            chosen[name] = version
    return chosen


def stale(pyproject: str, lock: str) -> list[str]:
    """What pyproject.toml asks for that the lock does not give (empty when the lock is current)."""
    chosen = applicable(lock)
    problems = []
    for req in requirements(pyproject):
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(req.name)
        if name not in chosen:
            problems.append(f"{req.name} is not in requirements.lock")
        elif not req.specifier.contains(chosen[name], prereleases=True):
            problems.append(f"{req.name}: requirements.lock pins {chosen[name]}, outside {req.specifier}")
    return problems


def test_lock_covers_pyproject():
    problems = stale((ROOT / "pyproject.toml").read_text(), (ROOT / "requirements.lock").read_text())
    assert not problems, "requirements.lock is older than pyproject.toml; run `make lock`:\n" + \
        "\n".join(problems)


def test_a_stale_lock_is_caught():
    """The check itself can fail: a new dependency, and a range the pin falls outside."""
    lock = "numpy==2.0.0\n    # via memlab\nscipy==1.10.0 ; python_version >= '3'\n"
    base = '[project]\nname = "x"\ndependencies = ["numpy>=1.24", "scipy>=1.9"]\n'
    assert stale(base, lock) == []
    assert stale(base.replace('"scipy>=1.9"', '"scipy>=1.11"'), lock) == \
        ["scipy: requirements.lock pins 1.10.0, outside >=1.11"]
    assert stale(base + '[project.optional-dependencies]\ntest = ["tqdm"]\n', lock) == \
        ["tqdm is not in requirements.lock"]


def test_environment_is_installed_from_the_lock():
    """Every locked package is installed at its locked version (`make` installs from the lock)."""
    wrong = []
    for name, version in applicable((ROOT / "requirements.lock").read_text()).items():
        try:
            have = Version(metadata.version(name))
        except metadata.PackageNotFoundError:
            wrong.append(f"{name} {version} is not installed")
            continue
        if have != version:
            wrong.append(f"{name} {have} is installed, the lock says {version}")
    assert not wrong, "this environment was not installed from requirements.lock " \
        "(rm -rf .venv; make test):\n" + "\n".join(wrong)
