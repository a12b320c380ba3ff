"""The cache's Flight servers: the head, the data nodes, and both in one process."""
