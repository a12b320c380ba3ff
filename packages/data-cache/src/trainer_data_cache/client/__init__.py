"""The training side: shard planning, resilient streams, tensors, and ``CacheDataset``."""
