"""Triton implementations of ATen operators registered into PyTorch's dispatcher.

Skeleton: this package has no public API yet; its issue will add it.
"""

__all__: list[str] = []
