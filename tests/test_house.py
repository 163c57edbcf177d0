"""The house rules, checked by the command that runs the suite.

- **Floors run one way.**  ``ARCHITECTURE.md`` lists the floors, bottom first, in a
  ```` ```floors ```` block; a module may import modules of its own floor or of a floor
  below, never above, and the modules Python imports form no cycle.  The ``wire`` floor
  (``memd_wire``: what the hook client runs with ``-I -S`` and the daemon shares with it)
  imports the standard library only.
- **Packages keep their side**: ``memd`` (the daemon) imports nothing of ``memd_client``;
  ``memd_client`` imports ``memd`` only through the modules the ```` ```surface ```` block
  of ``ARCHITECTURE.md`` names.
- **Rooms fit in a head**: no module over 400 lines, no class over 150, except the ones
  ``ARCHITECTURE.md`` names under "Rooms over the size", each with its reason.
- **SQL lives in the store**: no SQL text or ``execute`` call outside ``memd/store/``.
- **Types**: mypy, configured in pyproject.toml, reports nothing.

Imports are read from the source (``ast``), function-level ones included: a lazy import
is still an arrow.  ``if TYPE_CHECKING:`` imports are arrows too.
"""

from __future__ import annotations

import ast
import graphlib
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"memd_wire": ROOT / "memd_wire", "memd": ROOT / "memd", "memd_client": ROOT / "client"}
MAX_MODULE_LINES = 400
MAX_CLASS_LINES = 150


def architecture() -> str:
    return (ROOT / "ARCHITECTURE.md").read_text()


@dataclass(frozen=True)
class Floor:
    name: str
    level: int
    patterns: tuple[str, ...]

    def holds(self, module: str) -> int:
        """How closely this floor claims ``module``: the length of its best pattern, 0 for none."""
        best = 0
        for pattern in self.patterns:
            if pattern.endswith(".*"):
                prefix = pattern[:-2]
                if module == prefix or module.startswith(prefix + "."):
                    best = max(best, len(prefix))
            elif module == pattern:
                best = max(best, len(pattern) + 1)  # an exact name beats the package around it
        return best


def floors() -> list[Floor]:
    block = re.search(r"```floors\n(.*?)```", architecture(), re.S)
    assert block, "ARCHITECTURE.md has no ```floors block"
    lines = [line.split("#")[0].split() for line in block.group(1).splitlines()]
    return [Floor(words[0], level, tuple(words[1:])) for level, words in enumerate(w for w in lines if w)]


def modules() -> dict[str, Path]:
    found = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = [package, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def floor_of(module: str, all_floors: list[Floor]) -> Floor | None:
    scored = [(floor.holds(module), floor) for floor in all_floors]
    score, floor = max(scored, key=lambda pair: pair[0])
    return floor if score else None


def imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules ``module`` imports, resolved to the nearest known module."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    wanted: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            wanted.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            wanted.add(target)
            wanted.update(f"{target}.{alias.name}" for alias in node.names)
    found = set()
    for name in wanted:
        if name.split(".")[0] in STDLIB_LOOKALIKES and not module.startswith("memd."):
            name = f"memd_wire.{name}"  # the hook client imports the wire's modules as top-level ones
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name != module:
            found.add(name)
    return found


STDLIB_LOOKALIKES = {path.stem for path in PACKAGES["memd_wire"].glob("*.py")} - {"__init__"}
"""Top-level names the hook client imports from the wire's directory (``import paths``)."""


def graph() -> dict[str, set[str]]:
    known = modules()
    return {module: imports(module, path, known) for module, path in known.items()}


def test_every_module_is_on_a_floor() -> None:
    all_floors = floors()
    lost = sorted(module for module in modules() if floor_of(module, all_floors) is None)
    assert not lost, f"add these modules to the ```floors block of ARCHITECTURE.md: {lost}"


def test_floors_run_one_way() -> None:
    all_floors = floors()
    upward = []
    for module, targets in sorted(graph().items()):
        here = floor_of(module, all_floors)
        for target in sorted(targets):
            there = floor_of(target, all_floors)
            if here and there and there.level > here.level:
                upward.append(f"{module} ({here.name}) -> {target} ({there.name})")
    assert not upward, "imports that run back up:\n" + "\n".join(upward)


def test_no_import_cycle() -> None:
    try:
        tuple(graphlib.TopologicalSorter(graph()).static_order())
    except graphlib.CycleError as cycle:
        pytest.fail(f"import cycle: {' -> '.join(cycle.args[1])}")


def test_the_wire_floor_imports_the_standard_library_only() -> None:
    wire = next(floor for floor in floors() if floor.name == "wire")
    outside = []
    for module, path in modules().items():
        if floor_of(module, floors()) is not wire:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names | STDLIB_LOOKALIKES | {"memd_wire"}:
                    outside.append(f"{module} imports {name}")
    assert not outside, "\n".join(outside)


def test_the_daemon_imports_nothing_of_the_clients() -> None:
    crossing = [
        f"{module} -> {target}"
        for module, targets in sorted(graph().items())
        if not module.startswith("memd_client")
        for target in sorted(targets)
        if target.split(".")[0] == "memd_client"
    ]
    assert not crossing, "memd and memd_wire never import the client package:\n" + "\n".join(crossing)


def surface() -> set[str]:
    block = re.search(r"```surface\n(.*?)```", architecture(), re.S)
    assert block, "ARCHITECTURE.md has no ```surface block"
    return {word for line in block.group(1).splitlines() for word in line.split("#")[0].split()}


def test_the_clients_import_memd_through_its_surface() -> None:
    named = surface()
    assert named <= set(modules()), f"the surface names modules that do not exist: {sorted(named - set(modules()))}"
    through = [
        f"{module} -> {target}"
        for module, targets in sorted(graph().items())
        if module.startswith("memd_client")
        for target in sorted(targets)
        if target.split(".")[0] == "memd" and target not in named
    ]
    assert not through, "client imports outside the ```surface block of ARCHITECTURE.md:\n" + "\n".join(through)


SQL = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|PRAGMA|WITH|REPLACE|BEGIN|COMMIT|VACUUM)\b")


def test_sql_lives_in_the_store() -> None:
    """SQL text and ``execute`` calls appear in ``memd/store/`` only: a schema change is not a hunt."""
    store = PACKAGES["memd"] / "store"
    outside = []
    for path in sorted(modules().values()):
        if store in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.match(node.value):
                outside.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value.strip()[:60]!r}")
            elif isinstance(node, ast.Attribute) and node.attr in {"execute", "executemany", "executescript"}:
                outside.append(f"{path.relative_to(ROOT)}:{node.lineno}: .{node.attr}(...)")
    assert not outside, "SQL outside memd/store/:\n" + "\n".join(outside)


def oversized() -> dict[str, str]:
    """Rooms ARCHITECTURE.md allows over the size, by path, with their reasons."""
    section = re.search(r"## Rooms over the size\n(.*?)(?:\n## |\Z)", architecture(), re.S)
    assert section, "ARCHITECTURE.md has no '## Rooms over the size' section"
    return dict(re.findall(r"^- `([^`]+)`\s*[:—-]+\s*(.+)$", section.group(1), re.M))


def test_rooms_fit_in_a_head() -> None:
    allowed = oversized()
    big = []
    for path in sorted(modules().values()):
        where = str(path.relative_to(ROOT))
        lines = len(path.read_text().splitlines())
        if lines > MAX_MODULE_LINES and where not in allowed:
            big.append(f"{where}: {lines} lines")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.end_lineno:
                size = node.end_lineno - node.lineno + 1
                name = f"{where}::{node.name}"
                if size > MAX_CLASS_LINES and name not in allowed and where not in allowed:
                    big.append(f"{name}: {size} lines")
    assert not big, "over the size, and not named in ARCHITECTURE.md:\n" + "\n".join(big)


def test_types(tmp_path: Path) -> None:
    """mypy over the three packages, the client under the name it is installed as (``memd_client``)."""
    (tmp_path / "memd_client").symlink_to(PACKAGES["memd_client"])
    env = {**os.environ, "MYPYPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(tmp_path / "cache"), "-p", "memd_wire", "-p", "memd", "-p", "memd_client"],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
