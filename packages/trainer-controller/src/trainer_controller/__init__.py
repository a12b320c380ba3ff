"""The Kubernetes operator for TrainJobs: a level-triggered controller, admission webhooks, the
progress server, manifests and image.

The operator is a thin driver over ``trainer_runtime.build``: it watches, builds, applies the
Plan and writes status. ``trainer-controller run`` starts it; ``trainer-controller render`` prints
the objects one TrainJob becomes.
"""

from importlib import metadata as _metadata

from trainer_controller.operator import Operator, OperatorConfig, load_credentials

__version__ = _metadata.version("trainer-controller")

__all__ = [
    "Operator",
    "OperatorConfig",
    "__version__",
    "load_credentials",
]
