"""``memd-mcp`` / ``python -m memd_client.mcp``: the MCP server on stdin/stdout."""

import sys

from ..paths import resolve
from .server import main


def run() -> None:
    sys.exit(main(resolve()))


if __name__ == "__main__":
    run()
