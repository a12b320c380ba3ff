"""What the cache's tests share: the admin token their servers take partitions with.

Importable from every test module (``conftest.py`` puts this directory on ``sys.path``).
"""

from __future__ import annotations

from typing import Final

from trainer_data_cache import ConnectOptions, ServerSecurity

ADMIN_TOKEN: Final = "admin-token-for-tests"
"""The admin token of the tests' servers (``DATA_CACHE_ADMIN_TOKEN`` of their child processes)."""
ADMIN: Final = ServerSecurity(admin_token=ADMIN_TOKEN)
"""Security of a server that takes admin calls with ``ADMIN_TOKEN`` and serves reads to anyone."""
AS_ADMIN: Final = ConnectOptions(token=ADMIN_TOKEN)
"""A client's credentials for admin calls (``AS_ADMIN.call_options()``)."""
