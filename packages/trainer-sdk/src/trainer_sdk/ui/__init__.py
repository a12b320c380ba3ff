"""``trainer ui``: a web app over ``TrainerClient`` (job list, job pages with live logs and metric
charts, runtimes), served by aiohttp; see ``server.py`` for its routes and
``access.py`` for who may use it."""

from trainer_sdk.ui.access import Access, is_loopback, new_token
from trainer_sdk.ui.server import UiServer

__all__ = ["Access", "UiServer", "is_loopback", "new_token"]
