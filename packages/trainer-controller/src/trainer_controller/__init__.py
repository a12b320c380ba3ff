"""The Kubernetes operator for TrainJobs: kopf handlers, admission webhooks, the progress server,
manifests and image.

The operator is a thin driver over ``trainer_runtime.build``: it watches, builds, applies the
Plan and writes status. ``trainer-controller run`` starts it; ``trainer-controller render`` prints
the objects one TrainJob becomes.
"""

from trainer_controller.operator import Operator, OperatorConfig, load_credentials

__all__ = ["Operator", "OperatorConfig", "load_credentials"]
