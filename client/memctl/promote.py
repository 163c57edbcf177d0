"""``memctl promote``: a memd memory written as a Claude Code memory file, so that a user can
hand one fact to both memories.  On request only: memd never writes into Claude Code's
memory by itself.

The file goes into the memory folder of the memory's project (``autoMemoryDirectory``, else
``~/.claude/projects/<slug>/memory/``), in Claude Code's own format (``name``,
``description``, ``metadata.type``), with a line added to ``MEMORY.md`` so that Claude Code
loads it with the index.  An existing file of the same name is never overwritten.
"""

from __future__ import annotations

import argparse
import os

from .common import CommandError, connect, emit
from .parsing import Command

__all__ = ["PROMOTE"]


def promote_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", metavar="ID", help="the memory's citation id (mem:Ab3xY9Kq) or event number")
    p.add_argument(
        "--type", choices=("user", "feedback", "project", "reference"),
        help="Claude Code's kind of fact (default: project)",
    )  # fmt: skip
    p.add_argument("--name", help="the memory's name, a short-kebab-case slug (default: from its title)")
    p.add_argument("--description", help="the one line Claude Code's recall decides on (default: its title)")
    p.set_defaults(handler=run_promote)


def _write_new(path: str, content: str) -> None:
    """Write ``content`` to ``path`` at once (a rename), never over an existing file."""
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    import tempfile  # here: memctl loads every command's module to parse one

    fd, scratch = tempfile.mkstemp(dir=directory, prefix=".memd-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(content)
        os.chmod(scratch, 0o644)
        os.link(scratch, path)  # fails if the name is taken: nothing is overwritten
    finally:
        os.unlink(scratch)


def _add_to_index(index: str, entry: str, file_name: str) -> bool:
    """Append ``entry`` to ``MEMORY.md`` unless a line points to ``file_name`` already."""
    try:
        with open(index, encoding="utf-8") as f:
            current = f.read()
    except FileNotFoundError:
        current = ""
    if f"]({file_name})" in current:
        return False
    with open(index, "a", encoding="utf-8") as f:
        f.write(("" if not current or current.endswith("\n") else "\n") + entry + "\n")
    return True


def run_promote(args: argparse.Namespace) -> int:
    import msgspec

    from memd.capture.claude_folder import memory_folder
    from memd.capture.claude_memory import NAME, index_entry, promoted, render
    from memd.capture.project import project_root
    from memd.protocol import ClaudeMemoryMirrored, Details, DetailsResult, MirrorClaudeMemory

    from ..importer import claude_projects

    with connect(args) as client:
        details = client.call(Details(ids=[args.id], budget=100_000), DetailsResult).details
        if not details:
            raise CommandError(f"no memory {args.id} (memctl search finds ids)")
        detail = details[0]
        if detail.kind == "claude-memory":
            raise CommandError(f"{args.id} is one of Claude Code's own memories already")
        memory = promoted(detail.cite, detail.title, detail.text, args.type or "")
        if args.name:
            if not NAME.match(args.name):
                raise CommandError(f"--name {args.name!r}: a short kebab-case slug, such as deploy-freeze")
            memory = msgspec.structs.replace(memory, name=args.name)
        if args.description:
            memory = msgspec.structs.replace(memory, description=" ".join(args.description.split()))
        home = os.path.dirname(claude_projects(dict(os.environ)))
        root = project_root(detail.project or os.getcwd())
        folder = memory_folder(home, root)
        file_name = f"{memory.name}.md"
        path = os.path.join(folder, file_name)
        try:
            _write_new(path, render(memory))
        except FileExistsError:
            raise CommandError(f"{path} exists already: choose another --name") from None
        indexed = _add_to_index(os.path.join(folder, "MEMORY.md"), index_entry(memory, file_name), file_name)
        client.call(MirrorClaudeMemory(home=home, roots=[root]), ClaudeMemoryMirrored)
    data = {"path": path, "name": memory.name, "type": memory.type, "indexed": indexed, "cite": detail.cite}
    emit(args, data, f"wrote {path} ({memory.type}); Claude Code loads it from MEMORY.md at its next session")
    return 0


PROMOTE = Command(
    "promote", "write a memory as a Claude Code memory file (its own format, in MEMORY.md)", promote_arguments
)
