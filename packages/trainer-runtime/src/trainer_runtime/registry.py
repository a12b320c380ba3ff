"""The plugins, in the one order every phase runs them.

ML-policy plugins first (PlainML, then the frameworks), then the pod-group plugins, then the
trainer status plugin, the checkpoint plugin (volume, env, restart policies), the claim-source
plugin (an initializer's pvc:// source), the data-cache plugin (its trainer env comes after
every other), and the JobSet plugin last so that it renders what the others changed. The same
order fixes the order of built objects: Secrets and ConfigMaps, PodGroups, the cache's objects,
then the JobSet. A new plugin is one module in ``plugins/`` and one entry here.
"""

from __future__ import annotations

from typing import Final

from trainer_runtime.plugins.checkpoint import Checkpoint
from trainer_runtime.plugins.claim_source import ClaimSource
from trainer_runtime.plugins.coscheduling import Coscheduling
from trainer_runtime.plugins.data_cache import DataCache
from trainer_runtime.plugins.flux import Flux
from trainer_runtime.plugins.jax import JAX
from trainer_runtime.plugins.jobset import JobSet
from trainer_runtime.plugins.mpi import MPI
from trainer_runtime.plugins.plainml import PlainML
from trainer_runtime.plugins.torch import Torch
from trainer_runtime.plugins.trainer_status import TrainerStatus
from trainer_runtime.plugins.volcano import Volcano
from trainer_runtime.plugins.xgboost import XGBoost

__all__ = ["PLUGINS"]

PLUGINS: Final = (
    PlainML(),
    Torch(),
    MPI(),
    JAX(),
    XGBoost(),
    Flux(),
    Coscheduling(),
    Volcano(),
    TrainerStatus(),
    Checkpoint(),
    ClaimSource(),
    DataCache(),
    JobSet(),
)
