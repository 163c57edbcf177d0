"""Every service of one daemon, built over one store: what the server's dispatch binds
requests to, and what the daemon runs in the background.

Built once per daemon by ``memd.daemon.run``, after the store is open and before the first
connection is accepted.  The indexer and the consolidator are made (and run) by the daemon,
which owns their lifetimes; the rest live as long as this object.
"""

from __future__ import annotations

from ..capture.prepare import Capture
from ..capture.privacy import Privacy
from ..config import Config
from ..store import Store
from .activity import Activity
from .browse import Browse
from .bulk import BulkLoad
from .consolidation import Consolidator
from .drain import SpoolDrain
from .endless import EndlessSwitch
from .importer import Importer
from .indexer import Indexer
from .ingest import Ingester
from .janitor import Janitor
from .lifecycle import Lifecycle
from .native_memory import Mirror, Transcripts
from .places import Places
from .projects import Projects
from .rebuild import Rebuilder
from .recall import recall
from .recovery import Recovery
from .search import Retriever
from .status import Reports
from .sync import Syncer
from .team import Team

__all__ = ["Services"]


class Services:
    """The daemon's services, wired to each other."""

    def __init__(
        self,
        places: Places,
        config: Config,
        store: Store,
        indexer: Indexer | None,
        consolidator: Consolidator,
        activity: Activity,
    ) -> None:
        self.places = places
        self.config = config
        self.store = store
        self.indexer = indexer
        self.consolidator = consolidator
        self.activity = activity
        self.retriever = Retriever(store.readers, indexer, config.retrieval)
        self.capture = Capture(config.capture, Privacy(config.privacy))
        self.team = Team(config.sync, config.embedding, config.privacy, store, indexer)
        self.syncer = Syncer(config.sync, store, indexer, config.privacy, places.data_dir, self.team)
        self.mirror = Mirror(store, self.capture, indexer, self.syncer.notify)
        self.recall = recall(store, self.retriever, config, Transcripts(store, self.mirror))
        self.bulk = BulkLoad(Importer(self.capture, store, config.retention), consolidator, indexer)
        self.recovery = Recovery(self.bulk)
        self.ingester = Ingester(
            self.capture, store, self.recall, consolidator, indexer, self.syncer.notify, self.mirror, self.recovery
        )
        self.lifecycle = Lifecycle(
            store, self.retriever, indexer, self.ingester.replay, capture=self.capture, spool_dir=places.spool_dir,
            forgot=self.syncer.notify,
        )  # fmt: skip
        self.janitor = Janitor(store, self.lifecycle, config.retention, places.database, indexer)
        self.drain = SpoolDrain(
            places.spool_dir,
            config.daemon.spool_drain_interval,
            self.lifecycle.spool_lock,
            self.ingester.replay,
            store.writer,
            activity.touch,
        )
        self.browse = Browse(store, self.retriever, self.recall)
        self.endless = EndlessSwitch(self.recall, consolidator)
        self.reports = Reports(
            places, store, indexer, config.embedding.model, activity, self.ingester, self.recall, self.syncer
        )
        self.rebuilder = Rebuilder(store, indexer)
        self.projects = Projects(store, self.retriever)
