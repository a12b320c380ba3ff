"""A head and N nodes in one process, for a laptop, a test or ``data-cache serve``."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import replace

from trainer_data_cache.connection import ConnectOptions
from trainer_data_cache.errors import InvalidArgumentError
from trainer_data_cache.query import DEFAULT_QUERY_MEMORY
from trainer_data_cache.server.base import ServerSecurity
from trainer_data_cache.server.head import DEFAULT_REPAIR_INTERVAL, HeadServer
from trainer_data_cache.server.node import DEFAULT_MEMORY_LIMIT, NodeServer

__all__ = ["LocalCache"]


class LocalCache:
    """Starts ``num_nodes`` nodes on free ports and a head on ``host:port``; ``endpoint`` is the
    head's location. Use as a context manager, or call ``close``.

    ``security`` applies to the head and the nodes. Without an admin token in it, the nodes
    get a random one that only this head knows (so the head can push partitions and no one
    else can), and the head's own admin calls are off: load and drop through ``load`` and
    ``head``. ``load_roots`` let admin clients load sources within them over Flight."""

    def __init__(
        self,
        num_nodes: int = 1,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        replicas: int = 1,
        memory_limit: int = DEFAULT_MEMORY_LIMIT,
        max_streams: int = 64,
        query_memory: int = DEFAULT_QUERY_MEMORY,
        security: ServerSecurity | None = None,
        tls_root_certs: bytes | None = None,
        advertise_host: str | None = None,
        repair_interval: float | None = DEFAULT_REPAIR_INTERVAL,
        load_roots: Sequence[str] = (),
    ) -> None:
        security = security or ServerSecurity()
        if num_nodes < 1:
            raise InvalidArgumentError(f"num_nodes: expected at least 1, got {num_nodes}")
        node_security = security
        if security.admin is None:
            node_security = replace(security, admin_token=secrets.token_urlsafe(32))
        self.nodes: list[NodeServer] = []
        try:
            for _ in range(num_nodes):
                self.nodes.append(
                    NodeServer(
                        host,
                        0,
                        memory_limit=memory_limit,
                        max_streams=max_streams,
                        query_memory=query_memory,
                        security=node_security,
                        advertise_host=advertise_host,
                    )
                )
            self.head = HeadServer(
                [node.location for node in self.nodes],
                host,
                port,
                replicas=replicas,
                security=security,
                advertise_host=advertise_host,
                connect=ConnectOptions(token=node_security.admin, tls_root_certs=tls_root_certs),
                repair_interval=repair_interval,
                load_roots=load_roots,
            )
        except BaseException:
            self._close_nodes()
            raise

    @property
    def endpoint(self) -> str:
        return self.head.location

    def load(self, name: str, paths: Sequence[str] | str, **options: object) -> dict[str, object]:
        """Load a source as dataset ``name`` (see ``HeadServer.load``)."""
        return self.head.load(name, paths, **options)  # type: ignore[arg-type]

    def close(self) -> None:
        self.head.shutdown()
        self._close_nodes()

    def _close_nodes(self) -> None:
        for node in self.nodes:
            node.shutdown()

    def __enter__(self) -> LocalCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
