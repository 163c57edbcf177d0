"""``memd-mcp`` / ``python -m memd_client.mcp``: the MCP server on stdin/stdout.

It answers Claude Code's first requests from the listing (``early``) and imports the
whole server only for the first message that needs it.  (Claude Code itself runs
``serve.py`` with ``-I -S``, which does the same without site's start-up cost.)
"""

import os
import sys

from ..paths import resolve
from .early import LISTING, answer_early, read_listing


def run() -> None:
    paths = resolve()
    listing_path = os.path.join(paths.state_dir, LISTING)
    listing = read_listing(listing_path)
    read: list[bytes] = []
    if listing is not None:
        try:
            read, ended = answer_early(listing, sys.stdin.buffer, sys.stdout.buffer)
        except (KeyboardInterrupt, BrokenPipeError):  # Claude Code ends the session: SIGINT
            sys.exit(0)
        if ended:
            sys.exit(0)
    from .server import main

    sys.exit(main(paths, early=read, listing=None if listing is not None else listing_path))


if __name__ == "__main__":
    run()
