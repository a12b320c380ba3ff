"""The runtime framework that turns a TrainJob into a JobSet, and the Kubernetes operator, webhooks and manifests that run it.

Skeleton: this package has no public API yet; its issue will add it.
"""

__all__: list[str] = []
