"""Checkpoint plugin: the checkpoint volume, mount and env, and the restart policies as built,
with the preemption and user-error paths through them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from runtime_cases import (
    by_kind,
    container_of,
    env_of,
    jobset_schema_errors,
    jobset_validator,
    make_job,
    make_runtime,
    render_of,
    replicated_job,
    runtime_doc,
)
from trainer_runtime.errors import InvalidTrainJobError
from trainer_runtime.plugins import checkpoint

CLAIM = {checkpoint.VOLUME_ANNOTATION: "shared-ckpt"}


def annotated(annotations: dict[str, str], **trainer: Any) -> dict[str, Any]:
    job: dict[str, Any] = make_job(**trainer)
    job["metadata"]["annotations"] = annotations
    return job


def jobset_of(job: dict[str, Any], runtime: dict[str, Any] | None = None) -> dict[str, Any]:
    jobset: dict[str, Any] = by_kind(
        render_of(job, runtime or runtime_doc("torch-distributed")), "JobSet"
    )[0]
    return jobset


def job_spec(jobset: dict[str, Any], name: str) -> dict[str, Any]:
    job = next(j for j in jobset["spec"]["replicatedJobs"] if j["name"] == name)
    spec: dict[str, Any] = job["template"]["spec"]
    return spec


def test_without_annotation_or_restarts_nothing_changes() -> None:
    jobset = jobset_of(make_job())
    assert "failurePolicy" not in jobset["spec"]
    spec = job_spec(jobset, "node")
    assert "podFailurePolicy" not in spec
    assert "restartPolicy" not in spec["template"]["spec"]
    assert "volumes" not in spec["template"]["spec"]
    assert checkpoint.CHECKPOINT_DIR_ENV not in env_of(container_of(jobset, "node"))


def test_the_annotation_mounts_the_claim_and_sets_the_env() -> None:
    jobset = jobset_of(annotated(CLAIM))
    pod = job_spec(jobset, "node")["template"]["spec"]
    assert pod["volumes"] == [
        {"name": "checkpoints", "persistentVolumeClaim": {"claimName": "shared-ckpt"}}
    ]
    node = container_of(jobset, "node")
    assert node["volumeMounts"] == [{"name": "checkpoints", "mountPath": "/checkpoints"}]
    env = env_of(node)
    assert env[checkpoint.CHECKPOINT_DIR_ENV] == "/checkpoints/alpha"
    assert env[checkpoint.ATTEMPT_ENV] == {
        "fieldRef": {"fieldPath": "metadata.labels['jobset.sigs.k8s.io/restart-attempt']"}
    }


def test_a_mount_path_annotation_moves_the_mount() -> None:
    jobset = jobset_of(annotated({**CLAIM, checkpoint.MOUNT_PATH_ANNOTATION: "/mnt/ckpt/"}))
    node = container_of(jobset, "node")
    assert node["volumeMounts"] == [{"name": "checkpoints", "mountPath": "/mnt/ckpt/"}]
    assert env_of(node)[checkpoint.CHECKPOINT_DIR_ENV] == "/mnt/ckpt/alpha"


def test_the_runtime_template_may_carry_the_annotation() -> None:
    runtime = runtime_doc("torch-distributed")
    runtime["spec"]["template"]["metadata"] = {"annotations": CLAIM}
    jobset = jobset_of(make_job(), runtime)
    assert env_of(container_of(jobset, "node"))[checkpoint.CHECKPOINT_DIR_ENV] == (
        "/checkpoints/alpha"
    )


def test_a_checkpointing_job_gets_the_restart_policies() -> None:
    jobset = jobset_of(annotated(CLAIM))
    assert jobset["spec"]["failurePolicy"] == {"rules": checkpoint.restart_rules()}
    spec = job_spec(jobset, "node")
    assert spec["podFailurePolicy"] == checkpoint.pod_failure_policy()
    assert spec["template"]["spec"]["restartPolicy"] == "Never"


@pytest.mark.skipif(jobset_validator() is None, reason="no upstream JobSet CRD to validate with")
def test_the_built_jobset_is_valid_against_the_jobset_crd() -> None:
    assert jobset_schema_errors(jobset_of(annotated(CLAIM))) == []


def test_a_runtime_with_max_restarts_keeps_its_budget_and_gets_the_rules() -> None:
    runtime = runtime_doc("torch-distributed")
    runtime["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": 3}
    jobset = jobset_of(make_job(), runtime)
    assert jobset["spec"]["failurePolicy"] == {
        "maxRestarts": 3,
        "restartStrategy": "Recreate",  # the API default, filled in when the job is admitted
        "rules": checkpoint.restart_rules(),
    }
    assert job_spec(jobset, "node")["podFailurePolicy"] == checkpoint.pod_failure_policy()


def test_a_runtimes_own_rules_and_policies_are_left_alone() -> None:
    own_rules = [{"name": "mine", "action": "FailJobSet"}]
    own_policy = {"rules": [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}}]}
    runtime = make_runtime(
        {"numNodes": 1, "torch": {}},
        [
            replicated_job("node", "trainer"),
            replicated_job("on-failure", restartPolicy="OnFailure"),
        ],
    )
    runtime["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": 1, "rules": own_rules}
    jobset = jobset_of(make_job(runtime="custom"), runtime)
    assert jobset["spec"]["failurePolicy"]["rules"] == own_rules

    runtime["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": 1}
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "podFailurePolicy"
    ] = own_policy
    jobset = jobset_of(make_job(runtime="custom"), runtime)
    assert job_spec(jobset, "node")["podFailurePolicy"] == own_policy
    on_failure = job_spec(jobset, "on-failure")
    assert "podFailurePolicy" not in on_failure
    assert on_failure["template"]["spec"]["restartPolicy"] == "OnFailure"


@pytest.mark.parametrize(
    ("annotations", "env", "path", "message"),
    [
        (
            {checkpoint.VOLUME_ANNOTATION: "Bad_Claim"},
            [],
            "metadata.annotations[trainer.kubeflow.org/checkpoint-volume]",
            "expected a PersistentVolumeClaim name",
        ),
        (
            {**CLAIM, checkpoint.MOUNT_PATH_ANNOTATION: "relative/dir"},
            [],
            "metadata.annotations[trainer.kubeflow.org/checkpoint-mount-path]",
            "expected an absolute path",
        ),
        (
            CLAIM,
            [{"name": "TRAINER_CHECKPOINT_DIR", "value": "/elsewhere"}],
            "spec.trainer.env[0].name",
            "TRAINER_CHECKPOINT_DIR is reserved for the checkpoint runtime",
        ),
    ],
)
def test_bad_annotations_name_the_field(
    annotations: dict[str, str], env: list[dict[str, str]], path: str, message: str
) -> None:
    job = annotated(annotations, env=env) if env else annotated(annotations)
    with pytest.raises(InvalidTrainJobError) as caught:
        render_of(job, runtime_doc("torch-distributed"))
    assert any(e.field == path and message in e.message for e in caught.value.errors), (
        caught.value.errors
    )


def test_a_volume_named_like_the_checkpoint_volume_is_an_error() -> None:
    runtime = make_runtime(
        {"numNodes": 1, "torch": {}},
        [replicated_job("node", "trainer", volumes=[{"name": "checkpoints", "emptyDir": {}}])],
    )
    with pytest.raises(InvalidTrainJobError, match="already have a volume named 'checkpoints'"):
        render_of(annotated(CLAIM, **{}) | {"spec": {"runtimeRef": {"name": "custom"}}}, runtime)


# The paths through the policies as built: Kubernetes' Job controller takes the first
# podFailurePolicy rule that matches a failed pod (FailJob ends the Job with reason
# PodFailurePolicy and a message naming the match; no match counts the pod against
# backoffLimit), then JobSet takes the first failurePolicy rule whose reasons and message
# patterns match the failed Job (none: RestartJobSet, counted against maxRestarts).


def job_failure(
    spec: dict[str, Any], exit_code: int, conditions: tuple[str, ...]
) -> tuple[str, str]:
    for index, rule in enumerate(spec["podFailurePolicy"]["rules"]):
        on_conditions = {c["type"] for c in rule.get("onPodConditions", ())}
        if on_conditions & set(conditions):
            message = f"Pod default/p has condition DisruptionTarget matching FailJob rule {index}"
            return "PodFailurePolicy", message
        on_codes = rule.get("onExitCodes")
        if on_codes and exit_code in on_codes["values"]:
            message = (
                f"Container node for pod default/p failed with exit code {exit_code} "
                f"matching FailJob rule at index {index}"
            )
            return "PodFailurePolicy", message
    return "BackoffLimitExceeded", "Job has reached the specified backoff limit"


def jobset_action(jobset: dict[str, Any], reason: str, message: str) -> str:
    for rule in jobset["spec"]["failurePolicy"]["rules"]:
        reasons = rule.get("onJobFailureReasons") or [reason]
        patterns = rule.get("onJobFailureMessagePatterns") or [".*"]
        if reason in reasons and any(re.search(p, message) for p in patterns):
            return str(rule["action"])
    return "RestartJobSet"


@pytest.mark.parametrize(
    ("exit_code", "conditions", "action"),
    [
        pytest.param(
            143, ("DisruptionTarget",), "RestartJobSetAndIgnoreMaxRestarts", id="preempted"
        ),
        pytest.param(
            137, ("DisruptionTarget",), "RestartJobSetAndIgnoreMaxRestarts", id="evicted-killed"
        ),
        pytest.param(1, (), "RestartJobSet", id="python-error-or-torchrun-rank-failure"),
        pytest.param(127, (), "FailJobSet", id="command-not-found"),
        pytest.param(126, (), "FailJobSet", id="command-not-executable"),
        pytest.param(128, (), "FailJobSet", id="container-could-not-start"),
        pytest.param(137, (), "RestartJobSet", id="oom-killed"),
        pytest.param(139, (), "RestartJobSet", id="crashed"),
    ],
)
def test_preemption_restarts_for_free_and_a_command_error_fails_fast(
    exit_code: int, conditions: tuple[str, ...], action: str
) -> None:
    jobset = jobset_of(annotated(CLAIM))
    reason, message = job_failure(job_spec(jobset, "node"), exit_code, conditions)
    assert jobset_action(jobset, reason, message) == action
