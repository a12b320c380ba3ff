"""Upstream's ``backends.container`` path: its configuration types only (no Docker backend)."""
