"""A Kubernetes API stand-in over HTTP on loopback, for testing operators without a cluster.

A test-support package of this repository (not published). What it does and does
not cover is listed in the package README.
"""

from importlib import metadata as _metadata

from kube_standin.resources import (
    BUILTIN_TYPES,
    TRAINER_TYPES,
    ResourceType,
    types_from_crd,
)
from kube_standin.server import ApiServer, TokenIdentity
from kube_standin.store import ApiError, Store, WatchEvent

__version__ = _metadata.version("kube-standin")

__all__ = [
    "BUILTIN_TYPES",
    "TRAINER_TYPES",
    "ApiError",
    "ApiServer",
    "ResourceType",
    "Store",
    "TokenIdentity",
    "WatchEvent",
    "__version__",
    "types_from_crd",
]
