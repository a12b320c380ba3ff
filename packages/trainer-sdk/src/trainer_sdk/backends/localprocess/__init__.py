"""Upstream's ``backends.localprocess`` path: our local backend under upstream's names."""
