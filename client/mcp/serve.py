"""What Claude Code runs for memd's MCP server: ``<python> -I -S .../memd_client/mcp/serve.py``.

Claude Code waits for the server's first answers at every session start, so they come
from ``early`` before ``site`` is even imported (~35 ms with an editable install): ``-S``
leaves it out, and this script puts the two stdlib-only modules it needs on ``sys.path``
by hand, as ``hook.py`` does.  Only the first message the listing cannot answer brings
``site`` in, and with it the whole server (``memd_client.mcp.server``).
"""

import sys

TYPE_CHECKING = False  # typing's flag without importing typing before site: mypy honours the name
if TYPE_CHECKING:  # the checker knows these two modules by their package names
    from memd_client.mcp import early
    from memd_wire import paths

if __name__ == "__main__":
    here = __file__.rpartition("/")[0]
    sys.path[:0] = [here, here + "/../../memd_wire"]  # early.py; the wire package's paths.py
    if not TYPE_CHECKING:
        import early
        import paths

    del sys.path[:2]  # nothing of this package shadows a top-level module later on
    begun = early.start(paths.resolve().state_dir, sys.stdin.buffer, sys.stdout.buffer)
    if begun is None:
        sys.exit(0)
    import site

    site.main()  # the installation's packages: msgspec, memd, and memd_client itself
    from memd_client.mcp.server import main
    from memd_wire.paths import resolve

    read, listing = begun
    sys.exit(main(resolve(), early=read, listing=listing))
