"""The server: accept, peer check, framing and dispatch; nothing else.

- ``accept``: the listening socket's loop (the EMFILE back-off, the connection cap) and a
  graceful close;
- ``connection``: one connection, its peer checked (``peer``), frames in and replies out,
  with the silent and idle timeouts;
- ``dispatch``: the table that binds each request type to the service that answers it
  (``memd.services``), and the typed ``Error`` for a request that fails;
- ``activation``: the listening socket systemd may pass instead of memd binding one.

The daemon (``memd.daemon``) builds the services and hands the server what it needs: the
socket, the services, and the ``Activity`` it reports connections and latencies to.
"""
