"""Fine-tuning engines behind ``BuiltinTrainer``: one adapter module each, listed in ``ENGINES``.

``python -m trainer_sdk.training.engines NAME ARGS...`` runs engine NAME's pod side (under
``torchrun`` in the trainer pods). The registry and the adapters' submit sides import no engine,
no torch and no API models, so the client, the CLI and the local backend read them freely.
"""

from __future__ import annotations

from typing import Final

from trainer_sdk.training.engines import torchtune, trl
from trainer_sdk.training.engines.base import Engine, EngineTrainer

__all__ = ["ENGINES", "Engine", "EngineTrainer", "engine_for_config", "engine_named"]

ENGINES: Final[tuple[Engine, ...]] = (torchtune.ENGINE, trl.ENGINE)
"""Every engine, in the order messages list them; a new engine is one module and one entry."""


def engine_named(name: str) -> Engine | None:
    """The engine whose runtimes carry framework label ``name``, or None."""
    return next((engine for engine in ENGINES if engine.name == name), None)


def engine_for_config(config: object) -> Engine:
    """The engine that takes ``config`` (a ``BuiltinTrainer.config``); ValueError names the
    config types there are."""
    for engine in ENGINES:
        if isinstance(config, engine.config_type):
            return engine
    accepted = " or ".join(engine.config_type.__name__ for engine in ENGINES)
    raise ValueError(f"BuiltinTrainer.config: expected {accepted}, got {type(config).__name__}")
