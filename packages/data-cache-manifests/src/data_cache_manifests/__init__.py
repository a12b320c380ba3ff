"""The Kubernetes objects that run a data-cache for one TrainJob, and the trainer's env.

Pure functions over plain dicts, with no dependencies: the controller imports this package to
build a job's cache without importing ``trainer_data_cache`` (whose ``CacheDataset`` imports torch).
``trainer_data_cache`` re-exports the same names.
"""

from importlib import metadata as _metadata

from data_cache_manifests.objects import (
    DATASET_ENV,
    ENDPOINT_ENV,
    HEAD_PORT,
    NODE_PORT,
    ManifestArgumentError,
    cache_endpoint,
    cache_manifests,
    serve_args,
    trainer_env,
)

__version__ = _metadata.version("data-cache-manifests")

__all__ = [
    "DATASET_ENV",
    "ENDPOINT_ENV",
    "HEAD_PORT",
    "NODE_PORT",
    "ManifestArgumentError",
    "__version__",
    "cache_endpoint",
    "cache_manifests",
    "serve_args",
    "trainer_env",
]
