"""Typed models of the trainer.kubeflow.org/v1alpha1 API and the JobSet API: parsing, validation, defaulting and CRD generation.

Skeleton: this package has no public API yet; its issue will add it.
"""

__all__: list[str] = []
