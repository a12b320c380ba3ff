"""The Kubernetes objects that run a data-cache for one TrainJob, and the trainer's env.

Pure functions over plain dicts, with no dependencies: the controller imports this package to
build a job's cache without importing ``trainer_data_cache`` (whose ``CacheDataset`` imports torch).
``trainer_data_cache`` re-exports the same names.
"""

from importlib import metadata as _metadata

from data_cache_manifests.objects import (
    ADMIN_TOKEN_ENV,
    ADMIN_TOKEN_KEY,
    DATASET_ENV,
    ENDPOINT_ENV,
    HEAD_PORT,
    NODE_PORT,
    TOKEN_ENV,
    TOKEN_KEY,
    ManifestArgumentError,
    cache_endpoint,
    cache_manifests,
    serve_args,
    token_secret_name,
    trainer_env,
)

__version__ = _metadata.version("data-cache-manifests")

__all__ = [
    "ADMIN_TOKEN_ENV",
    "ADMIN_TOKEN_KEY",
    "DATASET_ENV",
    "ENDPOINT_ENV",
    "HEAD_PORT",
    "NODE_PORT",
    "TOKEN_ENV",
    "TOKEN_KEY",
    "ManifestArgumentError",
    "__version__",
    "cache_endpoint",
    "cache_manifests",
    "serve_args",
    "token_secret_name",
    "trainer_env",
]
