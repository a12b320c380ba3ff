"""An Arrow Flight + DataFusion in-memory cache that streams record batches to training ranks.

Skeleton: this package has no public API yet; its issue will add it.
"""

__all__: list[str] = []
