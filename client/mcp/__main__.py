"""``memd-mcp`` / ``python -m memd_client.mcp``: the MCP server on stdin/stdout.

It answers Claude Code's first requests from the listing (``early``) and imports the
whole server only for the first message that needs it.  (Claude Code itself runs
``serve.py`` with ``-I -S``, which does the same without site's start-up cost.)
"""

import sys

from memd_wire.paths import resolve

from .early import start


def run() -> None:
    paths = resolve()
    begun = start(paths.state_dir, sys.stdin.buffer, sys.stdout.buffer)
    if begun is None:
        sys.exit(0)
    from .server import main

    read, listing = begun
    sys.exit(main(paths, early=read, listing=listing))


if __name__ == "__main__":
    run()
