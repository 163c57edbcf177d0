"""memd's MCP server (stdio): ``protocol`` is the pure core, ``tools`` what it offers,
``server`` the IO.  Run it with ``memctl mcp`` or ``memd-mcp``."""
