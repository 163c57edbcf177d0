"""``python -m memd_client.memctl``: the ``memctl`` command."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
