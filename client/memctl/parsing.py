"""memctl's command line: the options every command takes, a command's own parser, and the
types of the arguments people type.

A command is a ``Command``: its name, its one-line help, and ``arguments``, the function
that declares its arguments and binds its handler (``p.set_defaults(handler=run)``), both
in the command's module.  ``memctl`` lists every command's name and help, but declares the
arguments of the one it runs only (``CommandParser``): declaring them imports what their
choices are made of (the event kinds, the citation formats, the hook events: msgspec and
half of memd), which ``memctl --version`` or ``memctl install`` has no use for.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

__all__ = ["Command", "CommandParser", "at_least", "common_options", "lazy_commands", "moment"]


class Command(NamedTuple):
    """One ``memctl`` command, as the top-level parser lists it."""

    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    """Declares the command's arguments and binds its handler with ``set_defaults(handler=...)``."""


class CommandParser(argparse.ArgumentParser):
    """A command's parser, whose arguments are declared the first time they are needed: to
    parse its arguments, or to show its usage or help."""

    def __init__(self, *args: Any, arguments: Callable[[argparse.ArgumentParser], None] | None = None, **kw: Any):
        super().__init__(*args, **kw)
        self._undeclared = arguments

    def _declare(self) -> None:
        if self._undeclared is not None:
            declare, self._undeclared = self._undeclared, None
            declare(self)

    def parse_known_args(  # type: ignore[override]  # typeshed's overloads only narrow the namespace's type
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._declare()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self._declare()
        return super().format_usage()

    def format_help(self) -> str:
        self._declare()
        return super().format_help()


class _Parsers(dict[str, "CommandParser | None"]):
    """The commands' parsers by name, each made when argparse first looks it up: making one
    costs ~0.2 ms (argparse asks gettext for its messages, and each ask searches the locale
    directories), 6.1 ms for all of them, and a run looks up one."""

    def __init__(self, make: Callable[[str], CommandParser]) -> None:
        super().__init__()
        self._make = make

    def __getitem__(self, name: str) -> CommandParser:
        parser = super().__getitem__(name)  # KeyError for a name that is no command, as argparse expects
        if parser is None:
            parser = self[name] = self._make(name)
        return parser


def lazy_commands(
    action: argparse._SubParsersAction[Any], commands: Sequence[Command], make: Callable[[Command], CommandParser]
) -> None:
    """Register ``commands`` with the subparsers ``action``: listed by ``--help`` with their help
    line, their parsers made by ``make`` only when one runs.  (argparse has no public way to
    defer ``add_parser``; this fills the two tables it keeps, as ``add_parser`` does.)"""
    by_name = {command.name: command for command in commands}
    parsers = _Parsers(lambda name: make(by_name[name]))
    action._name_parser_map = action.choices = parsers
    for command in commands:
        parsers[command.name] = None
        action._choices_actions.append(action._ChoicesPseudoAction(command.name, (), command.help))


def common_options(defaults: bool) -> argparse.ArgumentParser:
    """The options every command takes, before or after its name.  A command's copy has no
    defaults (``SUPPRESS``): argparse would otherwise overwrite ``memctl --socket X
    status``'s ``--socket`` with the command's default."""
    common = argparse.ArgumentParser(add_help=False)
    unset: dict[str, Any] = {} if defaults else {"default": argparse.SUPPRESS}
    common.add_argument("--json", action="store_true", help="print one JSON object (stable keys)", **unset)
    common.add_argument("--socket", help="daemon socket (default: $MEMD_SOCKET or $XDG_RUNTIME_DIR/memd/)", **unset)
    common.add_argument("--data-dir", help="data directory (default: $MEMD_DATA_DIR or $XDG_DATA_HOME/memd)", **unset)
    return common


def moment(text: str) -> float:
    """A ``--since``/``--before`` time as people type it (``memd_client.times``)."""
    from ..times import parse_time

    try:
        return parse_time(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def at_least(minimum: int) -> Callable[[str], int]:
    """An integer flag of ``minimum`` or more: a clear error, not a silent clamp by the daemon."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of {minimum} or more")
        return value

    return parse
