"""A Kubernetes API stand-in over HTTP on loopback, for testing operators without a cluster.

Install with the ``testing`` extra (``trainer-controller[testing]``). What it does and does
not cover is listed in the package README.
"""

from trainer_controller.testing.resources import BUILTIN_TYPES, ResourceType, types_from_crd
from trainer_controller.testing.server import ApiServer, TokenIdentity
from trainer_controller.testing.store import ApiError, Store, WatchEvent

__all__ = [
    "BUILTIN_TYPES",
    "ApiError",
    "ApiServer",
    "ResourceType",
    "Store",
    "TokenIdentity",
    "WatchEvent",
    "types_from_crd",
]
