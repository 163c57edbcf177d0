"""What Claude Code runs for each hook event: ``<python> -I -S hook.py <EventName>``.

The hook client is ``memd_wire/handoff.py``, in the package the daemon shares; this
script stays where every installed hook command names it.  It stays this short because
Python compiles the script it is given from source on every run (~3.6 ms for the whole
client here), while modules it imports load from cached bytecode.
"""

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing; mypy takes the name as true

if __name__ == "__main__":
    # -I -S leaves site-packages off sys.path: the wire package beside this one is put on it by hand
    sys.path.insert(0, (__file__.rpartition("/")[0] or ".") + "/../memd_wire")
    if TYPE_CHECKING:  # for mypy, which reads this file as part of the package
        from memd_wire.handoff import main
    else:
        from handoff import main

    main()
