"""Extension points of the runtime framework and the loops that run them.

Each extension point is a small Protocol; a plugin implements only the ones it needs and returns
early when the runtime's policy is not its own. The phases run in this order (``admit`` runs the
first, ``build`` the others):

1. ``validate``                  every plugin's field errors are gathered (by ``admit``, once)
2. ``enforce_ml_policy``         node counts, framework env, ports, MPI volumes
3. ``enforce_pod_group_policy``  pod-group labels and annotations for the scheduler
4. ``enforce_pod_spec``          last changes to pod templates (progress-reporting env, volumes)
5. ``pre_build``                 decisions that need the observed objects (e.g. reuse an SSH key)
6. ``build``                     the objects to apply, in plugin order

Within a phase, plugins run in the order of the tuple they are given (see ``registry.PLUGINS``);
nothing depends on dict or import order.

Plugins see the TrainJob as the trainer_api model (``spec.trainer.num_proc_per_node``), so a
misspelled field is a type error; ``RuntimeInfo`` holds the typed policies and the JobSet being
rendered. ``derive_status`` returns what a plugin observed as a typed ``TrainJobStatus`` (the
conditions it sets and, when it knows them, the jobs' counts), as upstream's
``TrainJobStatusPlugin`` does; ``build`` merges them in plugin order.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from trainer_api import FieldError, TrainJob, TrainJobStatus

from trainer_runtime.info import RuntimeInfo

if TYPE_CHECKING:
    from trainer_runtime.plan import Observed

__all__ = [
    "Builds",
    "DerivesStatus",
    "EnforcesMLPolicy",
    "EnforcesPodGroupPolicy",
    "EnforcesPodSpec",
    "Plugin",
    "PreBuilds",
    "Validates",
    "field_errors",
    "plugins_for",
    "run_build",
    "run_enforce",
    "run_status",
]


@runtime_checkable
class Plugin(Protocol):
    """Every plugin has a name, used in messages and in the registry test."""

    name: str


@runtime_checkable
class Validates(Protocol):
    def validate(self, info: RuntimeInfo, job: TrainJob) -> list[FieldError]:
        """FieldErrors for ``job`` against this runtime (empty when valid)."""


@runtime_checkable
class EnforcesMLPolicy(Protocol):
    def enforce_ml_policy(self, info: RuntimeInfo, job: TrainJob) -> None:
        """Apply the ML policy (node counts, env, ports) to ``info``."""


@runtime_checkable
class EnforcesPodGroupPolicy(Protocol):
    def enforce_pod_group_policy(self, info: RuntimeInfo, job: TrainJob) -> None:
        """Apply the pod-group policy (scheduler labels, annotations) to ``info``."""


@runtime_checkable
class EnforcesPodSpec(Protocol):
    def enforce_pod_spec(self, info: RuntimeInfo, job: TrainJob) -> None:
        """Last changes to the pod templates of ``info``."""


@runtime_checkable
class PreBuilds(Protocol):
    def pre_build(self, info: RuntimeInfo, job: TrainJob, observed: Observed) -> None:
        """Decide, from what exists, what the build will need."""


@runtime_checkable
class Builds(Protocol):
    def build(self, info: RuntimeInfo, job: TrainJob, observed: Observed) -> list[dict[str, Any]]:
        """Manifests (camelCase dicts) that must exist for ``job``."""


@runtime_checkable
class DerivesStatus(Protocol):
    def derive_status(
        self, job: TrainJob, observed: Observed, now: datetime
    ) -> TrainJobStatus | None:
        """What the observed objects say of the TrainJob's status: the conditions to set (each
        with when it happened) and, when known, ``jobsStatus``; None when they say nothing."""


def plugins_for(point: Any, plugins: Sequence[object]) -> list[Any]:
    """The plugins implementing ``point`` (a runtime-checkable Protocol), in registry order.

    (``point`` is typed Any: mypy refuses a Protocol where ``type[P]`` is expected. The loops
    below narrow with ``isinstance`` instead, so each call is checked against its Protocol.)
    """
    return [plugin for plugin in plugins if isinstance(plugin, point)]


def field_errors(info: RuntimeInfo, job: TrainJob, plugins: Sequence[object]) -> list[FieldError]:
    """Every plugin's FieldErrors for ``job``, in plugin order."""
    return [
        error
        for plugin in plugins
        if isinstance(plugin, Validates)
        for error in plugin.validate(info, job)
    ]


def run_enforce(info: RuntimeInfo, job: TrainJob, plugins: Sequence[object]) -> None:
    """Run the enforce phases in order (ML policy, pod-group policy, pod spec)."""
    for plugin in plugins:
        if isinstance(plugin, EnforcesMLPolicy):
            plugin.enforce_ml_policy(info, job)
    for plugin in plugins:
        if isinstance(plugin, EnforcesPodGroupPolicy):
            plugin.enforce_pod_group_policy(info, job)
    for plugin in plugins:
        if isinstance(plugin, EnforcesPodSpec):
            plugin.enforce_pod_spec(info, job)


def run_build(
    info: RuntimeInfo, job: TrainJob, observed: Observed, plugins: Sequence[object]
) -> list[dict[str, Any]]:
    """Run pre-build then build; the objects come back in plugin order."""
    for plugin in plugins:
        if isinstance(plugin, PreBuilds):
            plugin.pre_build(info, job, observed)
    return [
        manifest
        for plugin in plugins
        if isinstance(plugin, Builds)
        for manifest in plugin.build(info, job, observed)
    ]


def run_status(
    job: TrainJob, observed: Observed, now: datetime, plugins: Sequence[object]
) -> list[TrainJobStatus]:
    """What each status plugin derives from the observed objects, in plugin order."""
    return [
        derived
        for plugin in plugins
        if isinstance(plugin, DerivesStatus)
        and (derived := plugin.derive_status(job, observed, now)) is not None
    ]
