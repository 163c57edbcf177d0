"""Remove private content and secrets from text before memd stores anything.

Pure: no IO, no logging, no state between calls.  Build a ``Privacy`` once from the
``[privacy]`` config and call ``text`` or ``value`` for every event; both return the
filtered result and a ``Redactions`` (counts and lengths, never content, so it is safe
to log).

The rules, each in the module that applies them:

- ``tags``: the private tags (``<private>``, ``[private]``, ``<!-- private -->``) the user
  marks text with, and how code keeps them literal;
- ``rules``: the secret shapes, one row each (the table); ``shapes`` runs it;
- ``keys`` and ``assignments``: which names name a secret, and the value in
  ``key = value`` and its relatives;
- ``filter``: ``Privacy``, the order of the passes, and what it guarantees;
- ``redactions``: what a filter reports, and a secret's marker.
"""

from .filter import Privacy
from .keys import is_sensitive_key, secret_kind
from .redactions import MARKER, Redactions, redacted

__all__ = ["MARKER", "Privacy", "Redactions", "is_sensitive_key", "redacted", "secret_kind"]
