"""What an engine adapter implements: the ``Engine`` protocol.

An adapter is one module with two sides. The submit side is pure (nothing beyond the standard
library and ``trainer_sdk`` at import time): the client reads the engine's name, config type,
module and install command, and turns a ``BuiltinTrainer`` config into the TrainJob's trainer
command and args, refusing bad settings. The pod side, ``run``, imports the engine (``trl``,
``torchtune``) inside the function, in the trainer pod: the client never imports an engine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from trainer_sdk import types

__all__ = ["Engine", "EngineTrainer"]


@dataclass(frozen=True)
class EngineTrainer:
    """What an engine puts into the TrainJob's ``spec.trainer`` besides nodes and resources."""

    command: list[str] | None
    """The trainer command; None keeps the runtime's."""
    args: list[str]


class Engine(Protocol):
    """A fine-tuning engine behind ``BuiltinTrainer``: one adapter module, one runtime family
    (runtimes labelled ``trainer.kubeflow.org/framework: <name>``), one trainer image."""

    name: str
    """The framework label of its runtimes and its key in ``ENGINES``."""
    config_type: type[Any]
    """The ``BuiltinTrainer.config`` type it takes (``TorchTuneConfig``, ``TRLConfig``)."""
    module: str
    """The module its pods import; the local backend checks it before a job starts."""
    install: str
    """How a user installs the engine (``pip install "trainer-sdk[trl]"``)."""
    commands: Mapping[str, str]
    """Executables its runtimes run (``tune``) -> the module that implements each, run by the
    job's Python as ``python -m MODULE`` (the local backend puts a shim on the pods' PATH)."""

    def trainer(self, config: Any, initializer: types.Initializer | None) -> EngineTrainer:
        """Submit side, pure: the TrainJob's trainer command and args for ``config``; raises
        ``InvalidTrainJobError`` with one error per bad setting, at ``config.<field>``."""
        ...

    def run(self, args: Sequence[str]) -> int:
        """Pod side, in every rank: fine-tune as ``args`` (the TrainJob's, after the runtime's)
        say and write the model to the output directory; returns the exit status."""
        ...
