"""Endless mode's switch (``memctl endless``): on, off, and a consolidation on request.

A consolidation asked for runs first, so that the status the reply carries counts the
memories it made.
"""

from __future__ import annotations

from ..protocol import Endless, EndlessStatus
from .consolidation import Consolidator
from .recall import Recall

__all__ = ["EndlessSwitch"]


class EndlessSwitch:
    def __init__(self, recall: Recall, consolidator: Consolidator) -> None:
        self.recall = recall
        self.consolidator = consolidator

    async def switch(self, request: Endless) -> EndlessStatus:
        made = await self.consolidator.run_now() if request.consolidate else 0
        reply = await self.recall.starts.set_endless(request)
        reply.consolidated = made
        return reply
