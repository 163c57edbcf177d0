"""What Claude Code runs for each hook event: ``<python> -I -S hook.py <EventName>``.

The work is in ``handoff.py``.  This file stays this short because Python compiles
the script it is given from source on every run (~3.6 ms for the whole client here),
while modules it imports load from cached bytecode.
"""

import sys

if __name__ == "__main__":
    sys.path.insert(0, __file__.rpartition("/")[0])  # -I leaves the script's directory off sys.path
    from handoff import main

    main()
