"""What Claude Code runs for each hook event: ``<python> -I -S hook.py <EventName>``.

The work is in ``handoff.py``.  This file stays this short because Python compiles
the script it is given from source on every run (~3.6 ms for the whole client here),
while modules it imports load from cached bytecode.
"""

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing; mypy takes the name as true

if __name__ == "__main__":
    sys.path.insert(0, __file__.rpartition("/")[0])  # -I leaves the script's directory off sys.path
    if TYPE_CHECKING:  # for mypy, which reads this file as part of the package
        from .handoff import main
    else:
        from handoff import main

    main()
