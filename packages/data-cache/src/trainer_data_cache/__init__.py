"""An Arrow Flight + DataFusion in-memory cache that streams record batches to training ranks.

Serve data with ``LocalCache`` (or ``data-cache serve PATH``) and read it in training with
``CacheDataset``; every rank and DataLoader worker gets its own disjoint, complete share.
"""

from importlib import metadata as _metadata

from data_cache_manifests import (
    ADMIN_TOKEN_ENV,
    ADMIN_TOKEN_KEY,
    DATASET_ENV,
    ENDPOINT_ENV,
    TOKEN_ENV,
    TOKEN_KEY,
    ManifestArgumentError,
    cache_endpoint,
    cache_manifests,
    serve_args,
    token_secret_name,
    trainer_env,
)

from trainer_data_cache.client.dataset import CacheDataset
from trainer_data_cache.client.sharding import Consumer, plan_batches
from trainer_data_cache.client.streams import RetryPolicy
from trainer_data_cache.connection import ConnectOptions
from trainer_data_cache.errors import (
    AccessDeniedError,
    CacheError,
    DatasetNotFoundError,
    InvalidArgumentError,
    InvalidFilterError,
    InvalidStateError,
    MemoryBudgetExceededError,
    NullValueError,
    SchemaMismatchError,
    SourceError,
    StaleTicketError,
    StreamFailedError,
    UnknownColumnError,
    UnsafeForkError,
    UnsupportedCallError,
)
from trainer_data_cache.server.base import ServerSecurity
from trainer_data_cache.server.head import HeadServer
from trainer_data_cache.server.local import LocalCache
from trainer_data_cache.server.node import NodeServer

__version__ = _metadata.version("trainer-data-cache")

__all__ = [
    "ADMIN_TOKEN_ENV",
    "ADMIN_TOKEN_KEY",
    "DATASET_ENV",
    "ENDPOINT_ENV",
    "TOKEN_ENV",
    "TOKEN_KEY",
    "AccessDeniedError",
    "CacheDataset",
    "CacheError",
    "ConnectOptions",
    "Consumer",
    "DatasetNotFoundError",
    "HeadServer",
    "InvalidArgumentError",
    "InvalidFilterError",
    "InvalidStateError",
    "LocalCache",
    "ManifestArgumentError",
    "MemoryBudgetExceededError",
    "NodeServer",
    "NullValueError",
    "RetryPolicy",
    "SchemaMismatchError",
    "ServerSecurity",
    "SourceError",
    "StaleTicketError",
    "StreamFailedError",
    "UnknownColumnError",
    "UnsafeForkError",
    "UnsupportedCallError",
    "__version__",
    "cache_endpoint",
    "cache_manifests",
    "plan_batches",
    "serve_args",
    "token_secret_name",
    "trainer_env",
]
