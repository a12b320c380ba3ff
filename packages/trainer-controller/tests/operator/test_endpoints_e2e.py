"""The operator's HTTP surfaces on the stand-in: probes, metrics, webhooks, progress endpoint."""

from __future__ import annotations

import base64
import http.client
import json
import socket
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import trainer_api
from kube_standin import TokenIdentity
from trainer_controller.operator import admission
from trainer_controller.operator.webhooks import WEBHOOK_PATHS
from trainer_runtime.plugins.trainer_status import token_audience

pytestmark = pytest.mark.e2e

VALIDATING = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
MUTATING = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
STATUS_URL = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs/{name}/status"


def trainjob(name: str, **trainer: Any) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": trainer},
    }


def call(
    url: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    context: ssl.SSLContext | None = None,
) -> tuple[int, Any]:
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url,
        data=data,
        headers={"Content-Type": "application/json", **(headers or {})},
        method="POST" if data is not None else "GET",
    )
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as response:
            text = response.read()
            return response.status, json.loads(text) if text.startswith(b"{") else text.decode()
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def review(obj: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "operation": "UPDATE" if old else "CREATE",
            "namespace": "default",
            "name": obj["metadata"]["name"],
            "object": obj,
            "oldObject": old,
        },
    }


def webhook_configuration(kind: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": "trainjob.trainer.kubeflow.org",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "clientConfig": {
                    "service": {
                        "name": "trainer-controller",
                        "namespace": "kubeflow-system",
                        "path": "/x",
                    }
                },
            }
        ],
    }


@pytest.fixture
def secured(cluster, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A replica serving webhooks and the progress endpoint over TLS; a context trusting its CA."""
    cluster.create(
        VALIDATING,
        webhook_configuration("ValidatingWebhookConfiguration", "trainer-controller-validating"),
    )
    cluster.create(
        MUTATING,
        webhook_configuration("MutatingWebhookConfiguration", "trainer-controller-mutating"),
    )
    replica = cluster.replica(webhooks=True)
    ca = tmp_path / "ca.crt"
    ca.write_bytes(replica.operator.certificate.ca_pem)
    return replica, ssl.create_default_context(cafile=str(ca))


def test_probes_and_metrics(cluster) -> None:  # type: ignore[no-untyped-def]
    replica = cluster.replica()
    cluster.create(cluster.trainjobs, trainjob("job"))
    cluster.wait_for(lambda: cluster.get(f"{cluster.jobsets}/job"), what="the JobSet")
    health = replica.operator.listeners["health"].port
    assert call(f"http://127.0.0.1:{health}/healthz") == (200, "ok")
    assert call(f"http://127.0.0.1:{health}/readyz") == (200, "ok")
    metrics = f"http://127.0.0.1:{replica.operator.listeners['metrics'].port}/metrics"

    def counted() -> str | None:
        """The metrics text once the reconcile is counted (just after the JobSet can appear)."""
        status, text = call(metrics)
        assert status == 200
        return text if 'trainer_reconciles_total{result="success"}' in text else None

    text = cluster.wait_for(counted, what="the reconcile counted in the metrics")
    assert "trainer_leader 1.0" in text
    assert 'trainer_api_writes_total{verb="apply"}' in text


def test_certificate_stored_in_secret_and_ca_bundle_patched(cluster, secured) -> None:  # type: ignore[no-untyped-def]
    replica, _ = secured
    secret = cluster.get(
        "/api/v1/namespaces/kubeflow-system/secrets/trainer-controller-webhook-cert"
    )
    assert base64.b64decode(secret["data"]["ca.crt"]) == replica.operator.certificate.ca_pem
    for path, name in (
        (VALIDATING, "trainer-controller-validating"),
        (MUTATING, "trainer-controller-mutating"),
    ):
        hooks = cluster.get(f"{path}/{name}")["webhooks"]
        assert [hook["clientConfig"]["caBundle"] for hook in hooks] == [secret["data"]["ca.crt"]]
    standby = cluster.replica("replica-b", webhooks=True)
    assert (
        standby.operator.certificate == replica.operator.certificate
    )  # one certificate for every replica


@pytest.mark.parametrize("update", [False, True], ids=["create", "update"])
def test_a_trainjob_review_admits_and_defaults_the_job_once(  # type: ignore[no-untyped-def]
    secured, monkeypatch: pytest.MonkeyPatch, update: bool
) -> None:
    replica, context = secured
    admitted: list[str] = []
    defaulted: list[str] = []
    real_admit, real_defaults = admission.admit, trainer_api.apply_defaults

    def admit(job: Any, *args: Any, **kwargs: Any) -> Any:
        admitted.append(job.metadata.name)
        return real_admit(job, *args, **kwargs)

    def apply_defaults(obj: Any) -> Any:
        if isinstance(obj, trainer_api.TrainJob) and obj.metadata.name == "job":
            defaulted.append("job")
        return real_defaults(obj)

    monkeypatch.setattr(admission, "admit", admit)
    monkeypatch.setattr(trainer_api, "apply_defaults", apply_defaults)
    base = f"https://127.0.0.1:{replica.operator.listeners['webhooks'].port}"
    old = trainjob("old") if update else None
    _, answer = call(
        base + WEBHOOK_PATHS["validate-trainjob"], review(trainjob("job"), old), context=context
    )
    assert answer["response"]["allowed"] is True
    assert (admitted, defaulted) == (["job"], ["job"])


def test_webhooks_answer_admission_reviews_over_tls(secured) -> None:  # type: ignore[no-untyped-def]
    replica, context = secured
    base = f"https://127.0.0.1:{replica.operator.listeners['webhooks'].port}"
    status, answer = call(
        base + WEBHOOK_PATHS["validate-trainjob"],
        review(trainjob("good", numNodes=2)),
        context=context,
    )
    assert (status, answer["response"]["uid"], answer["response"]["allowed"]) == (200, "u-1", True)
    _, answer = call(
        base + WEBHOOK_PATHS["validate-trainjob"],
        review(trainjob("bad", numNodes=-1)),
        context=context,
    )
    assert answer["response"]["allowed"] is False
    assert "spec.trainer.numNodes" in answer["response"]["status"]["message"]
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "r"},
        "spec": {"template": {"spec": {}}, "unknownField": 1},
    }
    _, answer = call(
        base + WEBHOOK_PATHS["validate-clustertrainingruntime"], review(runtime), context=context
    )
    assert (
        answer["response"]["allowed"] is False
        and "spec.unknownField" in answer["response"]["status"]["message"]
    )
    job = trainjob("patched")
    job["spec"]["runtimePatches"] = [{"manager": "kueue"}]
    _, answer = call(base + WEBHOOK_PATHS["mutate-trainjob"], review(job), context=context)
    operations = json.loads(base64.b64decode(answer["response"]["patch"]))
    assert [operation["path"] for operation in operations] == ["/spec/runtimePatches/0/time"]


def test_progress_endpoint_status_codes(cluster, secured) -> None:  # type: ignore[no-untyped-def]
    replica, context = secured
    cluster.create(cluster.trainjobs, trainjob("job"))
    server = cluster.server
    server.tokens["good"] = TokenIdentity(
        "system:serviceaccount:default:trainer", audiences=(token_audience("default", "job"),)
    )
    server.tokens["other-job"] = TokenIdentity(
        "system:serviceaccount:default:trainer", audiences=(token_audience("default", "other"),)
    )
    server.tokens["other-namespace"] = TokenIdentity(
        "system:serviceaccount:elsewhere:trainer", audiences=(token_audience("default", "job"),)
    )
    server.tokens["missing-job"] = TokenIdentity(
        "system:serviceaccount:default:trainer", audiences=(token_audience("default", "missing"),)
    )
    base = f"https://127.0.0.1:{replica.operator.listeners['progress'].port}"

    def post(name: str, body: Any, token: str | None) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return call(
            base + STATUS_URL.format(namespace="default", name=name), body, headers, context
        )

    progress = {
        "trainerStatus": {
            "progressPercentage": 40,
            "metrics": [{"name": "loss", "value": "0.5"}],
            "lastUpdatedTime": "2026-01-01T00:00:00Z",
        }
    }
    assert post("job", progress, None)[0] == 403
    assert post("job", progress, "unknown")[0] == 403
    assert post("job", progress, "other-job")[0] == 403
    assert post("job", progress, "other-namespace")[0] == 403
    assert post("missing", progress, "missing-job")[0] == 404
    status, answer = post("job", {"trainerStatus": {"progressPercentage": 400}}, "good")
    assert status == 422 and "trainerStatus.progressPercentage" in answer["message"]
    status, answer = post("job", {"trainerStatus": {"progressPercentage": 4}}, "good")
    assert status == 422 and "lastUpdatedTime is required" in answer["message"]
    status, answer = post("job", {"trainerStatus": {"progres": 4}}, "good")
    assert status == 422 and "trainerStatus.progres" in answer["message"]
    assert post("job", b"{" + b" " * 70_000 + b"}", "good")[0] == 413
    assert post("job", progress, "good") == (200, progress)
    replacement = {
        "trainerStatus": {"progressPercentage": 60, "lastUpdatedTime": "2026-01-01T00:01:00Z"}
    }
    assert post("job", replacement, "good") == (200, replacement)
    assert (
        cluster.get(f"{cluster.trainjobs}/job")["status"]["trainerStatus"]
        == replacement["trainerStatus"]
    )


def test_progress_endpoint_rate_limits_per_job_and_new_tokens(cluster) -> None:  # type: ignore[no-untyped-def]
    replica = cluster.replica(
        progress_qps_per_job=0.001,
        progress_burst_per_job=2,
        progress_review_qps=0.001,
        progress_review_burst=3,
    )
    for name in ("job", "other"):
        cluster.create(cluster.trainjobs, trainjob(name))
        cluster.server.tokens[name] = TokenIdentity(
            "system:serviceaccount:default:trainer", audiences=(token_audience("default", name),)
        )
    base = f"http://127.0.0.1:{replica.operator.listeners['progress'].port}"
    body = {"trainerStatus": {"progressPercentage": 1, "lastUpdatedTime": "2026-01-01T00:00:00Z"}}

    def post(name: str, token: str) -> tuple[int, Any]:
        url = base + STATUS_URL.format(namespace="default", name=name)
        return call(url, body, {"Authorization": f"Bearer {token}"})

    # Two reports of "job" pass; the third is refused until the bucket refills.
    assert [post("job", "job")[0] for _ in range(2)] == [200, 200]
    status, answer = post("job", "job")
    assert status == 429 and "TrainJob default/job reports too often" in answer["message"]
    # Another job has its own bucket; its token is the second and last review of the burst.
    assert post("other", "other")[0] == 200
    # A third new token is reviewed (and rejected); a fourth is refused before any review.
    assert post("other", "forged")[0] == 403
    status, answer = post("other", "forged-again")
    assert status == 429 and "too many new tokens to review" in answer["message"]
    # Accepted tokens skip the review limit; the answer says when to come back.
    request = urllib.request.Request(
        base + STATUS_URL.format(namespace="default", name="job"),
        data=json.dumps(body).encode(),
        headers={"Authorization": "Bearer job", "Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 429
    assert int(refused.value.headers["Retry-After"]) >= 1


def test_creation_failure_is_recorded_as_an_event(cluster_without_jobset_crd) -> None:  # type: ignore[no-untyped-def]
    cluster = cluster_without_jobset_crd
    cluster.replica()
    job = cluster.create(cluster.trainjobs, trainjob("job"))

    def warning() -> dict[str, Any] | None:
        events = cluster.server.request("GET", "/api/v1/namespaces/default/events")[1]["items"]
        return next((event for event in events if event["reason"] == "CreationFailed"), None)

    event = cluster.wait_for(warning, what="a CreationFailed event")
    assert event["type"] == "Warning" and event["involvedObject"]["uid"] == job["metadata"]["uid"]
    assert "JobSet" in event["message"]


def suspended_with_patch(name: str, team: str) -> dict[str, Any]:
    job = trainjob(name)
    job["spec"]["suspend"] = True
    job["spec"]["runtimePatches"] = [
        {
            "manager": "kueue.x-k8s.io/manager",
            "trainingRuntimeSpec": {
                "template": {"metadata": {"labels": {"team": team}}},
            },
        }
    ]
    return job


@pytest.mark.parametrize(
    ("active", "allowed"),
    [
        pytest.param(2, False, id="jobset-still-active-refused"),
        pytest.param(0, True, id="jobset-inactive-allowed"),
    ],
)
def test_runtime_patch_change_reads_the_jobset(
    cluster, secured, active: int, allowed: bool
) -> None:  # type: ignore[no-untyped-def]
    replica, context = secured
    cluster.create(
        cluster.jobsets,
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": "queued", "namespace": "default"},
            "spec": {"suspend": True, "replicatedJobs": []},
        },
    )
    status, body = cluster.server.request(
        "PATCH",
        f"{cluster.jobsets}/queued/status",
        {"status": {"replicatedJobsStatus": [{"name": "node", "active": active, "ready": 0}]}},
        "application/merge-patch+json",
    )
    assert status == 200, body
    base = f"https://127.0.0.1:{replica.operator.listeners['webhooks'].port}"
    _, answer = call(
        base + WEBHOOK_PATHS["validate-trainjob"],
        review(suspended_with_patch("queued", "b"), old=suspended_with_patch("queued", "a")),
        context=context,
    )
    assert answer["response"]["allowed"] is allowed
    if not allowed:
        assert "replicated job 'node' is still active" in answer["response"]["status"]["message"]


def test_deprecated_runtime_is_allowed_with_a_warning(cluster, secured) -> None:  # type: ignore[no-untyped-def]
    replica, context = secured
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "old-torch", "labels": {"trainer.kubeflow.org/support": "deprecated"}},
        "spec": cluster.get(
            "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/torch-distributed"
        )["spec"],
    }
    cluster.create("/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes", runtime)
    job = trainjob("uses-old")
    job["spec"]["runtimeRef"]["name"] = "old-torch"
    base = f"https://127.0.0.1:{replica.operator.listeners['webhooks'].port}"
    _, answer = call(base + WEBHOOK_PATHS["validate-trainjob"], review(job), context=context)
    assert answer["response"]["allowed"] is True
    assert answer["response"]["warnings"] == [
        'Referenced ClusterTrainingRuntime "old-torch" is deprecated and will be removed in a '
        "future release of Kubeflow Trainer. See runtime deprecation policy: "
        "https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html"
        "#runtime-deprecation-policy"
    ]
    _, answer = call(
        base + WEBHOOK_PATHS["validate-trainjob"], review(trainjob("current")), context=context
    )
    assert "warnings" not in answer["response"]


def _deep(depth: int) -> Any:
    value: Any = {}
    for _ in range(depth):
        value = {"x": value}
    return value


RUNTIME_OBJECT = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "r"},
    "spec": {"template": {"spec": {}}},
}


def _with_spec(spec: Any) -> dict[str, Any]:
    return {**trainjob("job"), "spec": spec}


MALFORMED_REVIEWS = [
    pytest.param(b"[1]", id="array"),
    pytest.param(b"null", id="null"),
    pytest.param(b"5", id="number"),
    pytest.param(b"{not json", id="not-json"),
    pytest.param(b'{"a":' * 50_000 + b"1" + b"}" * 50_000, id="deep-json"),
    pytest.param(review(_with_spec("spec")), id="spec-string"),
    pytest.param(review(_with_spec({"runtimeRef": "torch-distributed"})), id="runtimeRef-string"),
    pytest.param(review(_with_spec({"runtimeRef": {"name": "x"}, "y": _deep(500)})), id="deep"),
    pytest.param(review(RUNTIME_OBJECT), id="runtime-to-trainjob-hook"),
    pytest.param(
        {
            **review(trainjob("job")),
            "request": {
                **review(trainjob("job"))["request"],
                "operation": "UPDATE",
                "oldObject": [],
            },
        },
        id="update-old-array",
    ),
]


@pytest.mark.parametrize("body", MALFORMED_REVIEWS)
def test_webhooks_never_allow_a_malformed_review(secured, body: Any) -> None:  # type: ignore[no-untyped-def]
    replica, context = secured
    base = f"https://127.0.0.1:{replica.operator.listeners['webhooks'].port}"
    for hook in ("validate-trainjob", "mutate-trainjob"):
        status, answer = call(base + WEBHOOK_PATHS[hook], body, context=context)
        assert status == 400 or (status == 200 and answer["response"]["allowed"] is False), (
            hook,
            status,
            answer,
        )
        if status == 200:
            assert answer["response"]["status"]["code"] == 400
            assert answer["response"]["uid"] == "u-1"


def test_a_trainjob_is_refused_by_the_runtime_hooks(secured) -> None:  # type: ignore[no-untyped-def]
    replica, context = secured
    base = f"https://127.0.0.1:{replica.operator.listeners['webhooks'].port}"
    for hook in ("validate-trainingruntime", "validate-clustertrainingruntime"):
        status, answer = call(base + WEBHOOK_PATHS[hook], review(trainjob("job")), context=context)
        assert status == 200 and answer["response"]["allowed"] is False, hook
        assert "this webhook admits" in answer["response"]["status"]["message"]


def test_webhook_reviews_over_the_size_limit_are_refused(secured) -> None:  # type: ignore[no-untyped-def]
    replica, context = secured
    url = (
        f"https://127.0.0.1:{replica.operator.listeners['webhooks'].port}"
        + WEBHOOK_PATHS["validate-trainjob"]
    )
    job = trainjob("big")
    job["metadata"]["annotations"] = {"example.com/padding": "x" * (3 * 1024 * 1024 + 512 * 1024)}
    status, answer = call(url, review(job), context=context)
    assert status == 413 and "at most 3145728 bytes" in answer["message"]


def _post_in_pieces(port: int, path: str, token: str, body: bytes, pieces: int) -> tuple[int, Any]:
    """POST ``body`` over plain HTTP as ``pieces`` separate writes; the status and JSON answer."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    size = len(body) // pieces + 1
    with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
        client.sendall(head)
        for start in range(0, len(body), size):
            client.sendall(body[start : start + size])
            time.sleep(0.02)  # spread the writes (the outcome must not depend on it)
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), json.loads(rest.partition(b"\r\n\r\n")[2])


def test_progress_endpoint_reads_bodies_sent_in_pieces(cluster) -> None:  # type: ignore[no-untyped-def]
    replica = cluster.replica(progress_qps_per_job=0)
    cluster.create(cluster.trainjobs, trainjob("job"))
    cluster.server.tokens["job"] = TokenIdentity(
        "system:serviceaccount:default:trainer", audiences=(token_audience("default", "job"),)
    )
    port = replica.operator.listeners["progress"].port
    path = STATUS_URL.format(namespace="default", name="job")
    for count in (160, 200, 256):  # 24 KB to 40 KB
        status = {
            "progressPercentage": 50,
            "lastUpdatedTime": "2026-01-01T00:00:00Z",
            "metrics": [{"name": f"m{i:03d}-" + "n" * 56, "value": "9" * 64} for i in range(count)],
        }
        body = json.dumps({"trainerStatus": status}).encode()
        assert 23_000 <= len(body) <= 41_000
        code, answer = _post_in_pieces(port, path, "job", body, pieces=4)
        assert code == 200, answer
        assert answer == {"trainerStatus": status}
    status_code, answer = _post_in_pieces(port, path, "job", b" " * (64 * 1024 + 1), pieces=3)
    assert status_code == 413


def test_progress_paths_that_cannot_name_a_trainjob_are_404(cluster) -> None:  # type: ignore[no-untyped-def]
    replica = cluster.replica()
    base = f"http://127.0.0.1:{replica.operator.listeners['progress'].port}"
    body = {"trainerStatus": {"progressPercentage": 1, "lastUpdatedTime": "2026-01-01T00:00:00Z"}}
    for namespace, name in (("default", "Bad_Name"), ("Bad_NS", "job"), ("default", "..")):
        url = base + STATUS_URL.format(namespace=namespace, name=name)
        status, _ = call(url, body, {"Authorization": "Bearer t"})
        assert status == 404, (namespace, name)


def _post_from(
    source: str, port: int, path: str, authorization: bytes, body: Any
) -> tuple[int, Any]:
    """POST from the loopback address ``source`` with a raw Authorization header value."""
    connection = http.client.HTTPConnection(
        "127.0.0.1", port, timeout=30, source_address=(source, 0)
    )
    try:
        connection.putrequest("POST", path)
        connection.putheader("Authorization", authorization)
        data = json.dumps(body).encode()
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(len(data)))
        connection.endheaders(data)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        connection.close()


def test_bogus_tokens_for_one_job_spend_their_sources_budget_not_anothers(cluster) -> None:  # type: ignore[no-untyped-def]
    replica = cluster.replica(
        progress_qps_per_job=0,
        progress_review_qps=0.001,
        progress_review_burst=40,
        progress_review_qps_per_source=0.001,
        progress_review_burst_per_source=3,
        progress_review_qps_per_job_source=0.001,
        progress_review_burst_per_job_source=2,
    )
    for name in ("job", "victim"):
        cluster.create(cluster.trainjobs, trainjob(name))
    cluster.server.tokens["good"] = TokenIdentity(
        "system:serviceaccount:default:trainer", audiences=(token_audience("default", "victim"),)
    )
    port = replica.operator.listeners["progress"].port
    body = {"trainerStatus": {"progressPercentage": 1, "lastUpdatedTime": "2026-01-01T00:00:00Z"}}

    def post(source: str, name: str, token: str) -> tuple[int, Any]:
        path = STATUS_URL.format(namespace="default", name=name)
        return _post_from(source, port, path, f"Bearer {token}".encode(), body)

    attacker = "127.0.0.2"
    answers = [post(attacker, "job", f"forged-{i}") for i in range(20)]
    assert [code for code, _ in answers[:2]] == [403, 403]
    assert {code for code, _ in answers[2:]} == {429}
    assert f"for default/job from {attacker}" in answers[2][1]["message"]
    # Another target from the same source: that source's budget (3) has one review left.
    assert post(attacker, "victim", "forged-x")[0] == 403
    code, answer = post(attacker, "victim", "forged-y")
    assert code == 429 and f"from {attacker}" in answer["message"]
    # The victim's first report, from its own address, is reviewed and taken.
    assert post("127.0.0.3", "victim", "good") == (200, body)


@pytest.mark.parametrize(
    "authorization",
    [
        pytest.param(b"Bearer \xe9", id="latin-1-byte"),
        pytest.param("Bearer é".encode(), id="utf-8"),
    ],
)
def test_a_non_ascii_credential_gets_401_and_the_server_keeps_answering(  # type: ignore[no-untyped-def]
    cluster, authorization: bytes
) -> None:
    replica = cluster.replica()
    cluster.create(cluster.trainjobs, trainjob("job"))
    port = replica.operator.listeners["progress"].port
    path = STATUS_URL.format(namespace="default", name="job")
    body = {"trainerStatus": {"progressPercentage": 1, "lastUpdatedTime": "2026-01-01T00:00:00Z"}}
    code, answer = _post_from("127.0.0.1", port, path, authorization, body)
    assert code == 401 and "printable ASCII" in answer["message"]
    assert _post_from("127.0.0.1", port, path, b"Bearer unknown", body)[0] == 403
