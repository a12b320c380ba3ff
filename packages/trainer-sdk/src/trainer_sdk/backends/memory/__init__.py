"""The in-memory backend for tests (``InMemoryBackend``, driven through ``MemoryJob``)."""

from trainer_sdk.backends.memory.backend import InMemoryBackend, MemoryJob

__all__ = ["InMemoryBackend", "MemoryJob"]
