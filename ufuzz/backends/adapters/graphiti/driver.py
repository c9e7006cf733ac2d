"""Graphiti's Kuzu driver with bounded memory: a bounded buffer pool and database size, one thread."""

from __future__ import annotations


def driver_class() -> type:
    """KuzuDriver with bounded memory: graphiti's driver opens ``kuzu.Database(path)`` with Kuzu's defaults
    (8 TiB virtual reservation each, so only ~15 states fit in one process); this subclass opens the same
    schema with a bounded buffer pool / database size and one thread (deterministic result order)."""
    import kuzu
    from graphiti_core.driver.driver import GraphDriver
    from graphiti_core.driver.kuzu.operations import (
        community_edge_ops,
        community_node_ops,
        entity_edge_ops,
        entity_node_ops,
        episode_node_ops,
        episodic_edge_ops,
        graph_ops,
        has_episode_edge_ops,
        next_episode_edge_ops,
        saga_node_ops,
        search_ops,
    )
    from graphiti_core.driver.kuzu_driver import KuzuDriver

    class BoundedKuzuDriver(KuzuDriver):
        def __init__(self, db: str, *, buffer_pool_size: int, max_db_size: int, threads: int,
                     schema: bool = True) -> None:
            GraphDriver.__init__(self)
            self.db = kuzu.Database(db, buffer_pool_size=buffer_pool_size, max_db_size=max_db_size,
                                    max_num_threads=threads)
            if schema:  # CREATE ... IF NOT EXISTS: nothing to do in a copy or a reopened file of a built state
                self.setup_schema()
            self.client = kuzu.AsyncConnection(self.db, max_concurrent_queries=1)
            # the same operation objects as KuzuDriver.__init__ (graphiti-core 0.31.2)
            self._entity_node_ops = entity_node_ops.KuzuEntityNodeOperations()
            self._episode_node_ops = episode_node_ops.KuzuEpisodeNodeOperations()
            self._community_node_ops = community_node_ops.KuzuCommunityNodeOperations()
            self._saga_node_ops = saga_node_ops.KuzuSagaNodeOperations()
            self._entity_edge_ops = entity_edge_ops.KuzuEntityEdgeOperations()
            self._episodic_edge_ops = episodic_edge_ops.KuzuEpisodicEdgeOperations()
            self._community_edge_ops = community_edge_ops.KuzuCommunityEdgeOperations()
            self._has_episode_edge_ops = has_episode_edge_ops.KuzuHasEpisodeEdgeOperations()
            self._next_episode_edge_ops = next_episode_edge_ops.KuzuNextEpisodeEdgeOperations()
            self._search_ops = search_ops.KuzuSearchOperations()
            self._graph_ops = graph_ops.KuzuGraphMaintenanceOperations()
            # Known bug 1: KuzuDriver never sets _database, but Graphiti._resolve_request_scope reads it
            # (add_episode with a group_id raises AttributeError).
            self._database = ""

        def renew_connection(self) -> None:
            """A fresh connection (called between queries): gives back what the old one kept per query."""
            old, self.client = self.client, kuzu.AsyncConnection(self.db, max_concurrent_queries=1)
            old.close()

        def shutdown(self, *, checkpoint: bool = True) -> None:
            """Close the database. ``checkpoint=False`` for a state about to be deleted: Kuzu would otherwise
            checkpoint its WAL into the file on close (12+ MB written for a file removed right after)."""
            if not checkpoint:
                try:
                    conn = kuzu.Connection(self.db)
                    conn.execute("CALL force_checkpoint_on_close=false;")
                    conn.close()
                except Exception:  # noqa: BLE001 - best effort: the close still works, it just writes
                    pass
            for thing in (self.client, self.db):
                try:
                    thing.close()
                except Exception:  # noqa: BLE001 - best effort on release
                    pass

    return BoundedKuzuDriver
