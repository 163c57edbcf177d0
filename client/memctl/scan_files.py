"""``memctl scan PATH... | -``: a file or a paste checked against memd's privacy filter before it
reaches Claude Code.

Each finding is a run of lines the filter would change (``memd.capture.privacy.findings``):
where it is, the kinds it holds, and the lines as memd would store them, so the report never
prints the secret it found.  The filter is the daemon's own, with this user's ``[privacy]``
config (private tags, ``extra_patterns``); no daemon is needed.  Exit 1 when something is found,
2 when a file cannot be read and nothing was found, else 0.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import CommandError, emit

__all__ = ["run_scan_files"]

STDIN = "-"


def _read(name: str) -> str | None:
    """A file's text (standard input for ``-``); None when it is binary (it holds a NUL)."""
    if name == STDIN:
        data = sys.stdin.buffer.read()
    else:
        with open(name, "rb") as f:
            data = f.read()
    if b"\0" in data:
        return None
    return data.decode("utf-8", errors="replace")


def _line(path: str, finding: Any) -> str:
    where = f"{finding.line}" if finding.end_line == finding.line else f"{finding.line}-{finding.end_line}"
    shown = finding.redacted.strip().replace("\n", "\n    ")
    return f"{path}:{where}: {', '.join(finding.kinds)}: {shown}"


def run_scan_files(args: argparse.Namespace) -> int:
    from memd.capture.privacy import Privacy
    from memd.capture.privacy.findings import findings
    from memd.config import ConfigError, load

    if args.yes or args.dry_run:
        raise CommandError("--yes and --dry-run are for the scan of what is stored; a file is only checked")
    try:
        privacy = Privacy(load(args.paths.config_file).privacy)
    except ConfigError as exc:
        raise CommandError(f"{exc} (fix it, or scan with the defaults: move it away)") from None
    found: list[dict[str, Any]] = []
    lines: list[str] = []
    unreadable: list[dict[str, str]] = []
    binary: list[str] = []
    for name in args.files:
        shown = "<stdin>" if name == STDIN else name
        try:
            text = _read(name)
        except OSError as exc:
            unreadable.append({"path": shown, "error": exc.strerror or str(exc)})
            continue
        if text is None:
            binary.append(shown)
            continue
        for finding in findings(text, lambda part: privacy.text(part)[0]):
            found.append({"path": shown, **finding._asdict(), "kinds": list(finding.kinds)})
            lines.append(_line(shown, finding))
    checked = len(args.files) - len(unreadable) - len(binary)
    kinds: dict[str, int] = {}
    for item in found:
        for kind in item["kinds"]:
            kinds[kind] = kinds.get(kind, 0) + 1
    files_with = len({item["path"] for item in found})
    if found:
        by_kind = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
        lines.append(
            f"{len(found)} {'finding' if len(found) == 1 else 'findings'} in {files_with} of {checked} files checked"
            f" ({by_kind}): memd would store these lines as shown; the values were not printed"
        )
    else:
        lines.append(f"no secret or private span found ({checked} {'file' if checked == 1 else 'files'} checked)")
    data = {"checked": checked, "findings": found, "kinds": kinds, "unreadable": unreadable, "binary": binary}
    emit(args, data, "\n".join(lines))
    for item in unreadable:
        print(f"memctl: {item['path']}: {item['error']}", file=sys.stderr)
    for path in binary:
        print(f"memctl: {path}: binary, not checked", file=sys.stderr)
    return 1 if found else 2 if unreadable else 0
