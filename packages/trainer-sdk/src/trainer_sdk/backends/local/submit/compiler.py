"""A JobSet compiled, once at submit, into the local plan its supervisor executes (pure).

The steps, in order: the pods' ``secretKeyRef`` env resolved from the Plan's Secrets
(``caches.with_secret_values``); the replicated jobs expanded into pods in start order
(``pods.expand_pods``: names, env, mounts, host names, the rendezvous port's slots); pods that
request accelerators this machine lacks put on CPU with the cluster's process count
(``devices``); an MPI JobSet's launcher and workers made to run here (``mpi``); the data cache's
process and endpoint slots (``caches``); and the JobSet's policies. The caller decides what
depends on this machine (private namespaces, GPUs, the job's environment) and passes it in.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from trainer_sdk.backends.local.jobdir import JobDir
from trainer_sdk.backends.local.plan import Dependency, LocalPlan, ReplicatedJob
from trainer_sdk.backends.local.submit import devices, pods
from trainer_sdk.backends.local.supervisor import caches, mpi

__all__ = ["compile_plan"]


def compile_plan(
    jobset: Mapping[str, Any],
    objects: Sequence[Mapping[str, Any]],
    job_dir: JobDir,
    *,
    isolated: bool,
    gpus: int,
    job_env: Collection[str] = (),
    active_deadline_seconds: float | None = None,
) -> LocalPlan:
    """The plan that runs ``jobset`` (with the Plan's other ``objects``) in ``job_dir``: its pods
    in private namespaces when ``isolated``, on CPU where they request more than ``gpus`` (the
    plan says why in ``accelerator_shortfall``); ``job_env`` names the variables every process
    of the job inherits. Raises ``pods.UnsupportedPodError`` for a pod that cannot run here."""
    expanded = pods.expand_pods(
        caches.with_secret_values(jobset, objects),
        str(job_dir.path / "volumes"),
        job_dir.root,
        isolated,
    )
    shortfall = devices.device_shortfall(expanded, gpus)
    if shortfall:
        expanded = devices.on_cpu(expanded)
    expanded, mpi_setup = mpi.localize_mpi_pods(expanded, jobset, objects, job_dir, job_env)
    cache = caches.data_cache(objects)
    if cache is not None:
        expanded = caches.with_endpoint_slots(expanded, jobset)
    metadata = jobset.get("metadata") or {}
    network = jobset.get("spec", {}).get("network") or {}
    operator, targets = pods.success_targets(jobset)
    return LocalPlan(
        jobs=tuple(
            ReplicatedJob(
                name=job["name"],
                pods=tuple(job_pods),
                depends_on=tuple(
                    Dependency(str(dependency["name"]), str(dependency.get("status", "Complete")))
                    for dependency in job.get("dependsOn") or ()
                ),
            )
            for job, job_pods in expanded
        ),
        isolated=isolated,
        subdomain=str(network.get("subdomain") or metadata.get("name", "")),
        namespace=str(metadata.get("namespace") or "default"),
        grace_seconds=pods.termination_grace(jobset, pods.TERMINATION_GRACE_SECONDS),
        max_restarts=pods.failure_budget(jobset),
        success_operator=operator,
        success_targets=tuple(targets),
        active_deadline_seconds=active_deadline_seconds,
        accelerator_shortfall=tuple(shortfall),
        mpi=mpi_setup,
        cache=cache,
    )
