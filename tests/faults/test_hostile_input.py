"""Fault injection: hostile input at every entry point ends in one clear refusal, in bounded time.

Classes covered: alias bombs, deep nesting, duplicate keys, undecodable bytes, out-of-range
integers and names the API server refuses, in every reader of user YAML (``trainer_api``,
``trainer-controller render``, ``trainer run -f``); garbage hostfiles for ``mpi-launch``;
malformed and oversized AdmissionReviews, oversized and piecemeal progress bodies, and a flood
of large reviews against the operator running as its own process. Loopback only.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trainer_api
from click.testing import CliRunner
from kube_standin import TokenIdentity
from mpi_runtime.launches import main as mpi_launch
from trainer_controller.cli import cli as controller_cli
from trainer_controller.operator.webhooks import WEBHOOK_PATHS
from trainer_runtime.plugins.trainer_status import token_audience
from trainer_sdk.cli import cli as trainer_cli

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

TRAINJOBS = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs"
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets"
STATUS = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/{name}/status"
HEAD = b"apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: hostile}\n"
SPEC = b"spec: {runtimeRef: {name: torch-distributed}, trainer: {command: ['true']}}\n"


def _alias_bomb(width: int = 12, levels: int = 4) -> bytes:
    """Valid env entries aliased ``width`` times at each of ``levels`` levels."""
    lines = ["  - &l0 {name: A, value: x}"]
    for level in range(1, levels + 1):
        lines.append(f"  - &l{level} [" + ", ".join([f"*l{level - 1}"] * width) + "]")
    return HEAD + SPEC + ("bomb:\n" + "\n".join(lines) + "\n").encode()


def _spec(trainer: bytes = b"command: ['true']", extra: bytes = b"") -> bytes:
    return b"spec: {runtimeRef: {name: torch-distributed}, trainer: {%s}%s}\n" % (trainer, extra)


HOSTILE_YAML = [
    pytest.param(_alias_bomb(), "excessive aliasing", id="alias-bomb"),
    pytest.param(HEAD + SPEC + b"x: " + b"[" * 1000 + b"]" * 1000, "deeper than 100", id="deep"),
    pytest.param(
        HEAD + b"metadata: {name: again}\n" + SPEC, "duplicate key 'metadata'", id="duplicate-key"
    ),
    pytest.param(HEAD.replace(b"hostile", b"\xe9t\xe9") + SPEC, "not UTF-8", id="latin-1"),
    pytest.param(
        HEAD + _spec(b"numNodes: 1000000000000"), "less than or equal to 2147483647", id="int32"
    ),
    pytest.param(
        HEAD + _spec(extra=b", activeDeadlineSeconds: 100000000000000000000"),
        "less than or equal to 9223372036854775807",
        id="int64",
    ),
    pytest.param(
        HEAD.replace(b"{name: hostile}", b"{name: hostile, namespace: Bad_NS}") + SPEC,
        "metadata.namespace: a namespace must be a DNS-1123 label",
        id="namespace",
    ),
    pytest.param(
        HEAD.replace(b"{name: hostile}", b"{name: hostile, labels: {'bad key!': v}}") + SPEC,
        "invalid label key 'bad key!'",
        id="label-key",
    ),
    pytest.param(
        HEAD + _spec(b"env: [{name: '1 bad=name', value: x}]"),
        "spec.trainer.env[0].name",
        id="env-name",
    ),
    pytest.param(
        HEAD + _spec(b'env: [{name: A, value: "x\\0y"}]'), "may not contain NUL", id="env-nul"
    ),
]


def _read_with_trainer_api(path: Path) -> str:
    try:
        for obj in trainer_api.parse_all(path.read_bytes()):
            errors = trainer_api.validate(trainer_api.apply_defaults(obj))
            if errors:
                raise trainer_api.ValidationError(errors)
    except trainer_api.ValidationError as error:
        return str(error)
    raise AssertionError("accepted")


def _cli(command: Any, *args: str) -> Callable[[Path], str]:
    def run(path: Path) -> str:
        result = CliRunner().invoke(command, [*args, str(path)], catch_exceptions=False)
        assert result.exit_code in (1, 2), result.output
        assert "Traceback" not in result.output
        return result.output

    return run


@pytest.mark.parametrize(
    "reader",
    [
        pytest.param(_read_with_trainer_api, id="trainer_api"),
        pytest.param(_cli(controller_cli, "render", "-f"), id="trainer-controller-render"),
        pytest.param(None, id="trainer-run"),
    ],
)
@pytest.mark.parametrize(("content", "expected"), HOSTILE_YAML)
@pytest.mark.timeout(60)
def test_hostile_yaml_is_one_clear_error_in_every_reader(
    tmp_path: Path, reader: Callable[[Path], str] | None, content: bytes, expected: str
) -> None:
    path = tmp_path / "job.yaml"
    path.write_bytes(content)
    if reader is None:  # the local backend, through `trainer run -f`
        reader = _cli(
            trainer_cli, "--backend", "local", "--root", str(tmp_path / "jobs"), "run", "-f"
        )
    started = time.monotonic()
    message = reader(path)
    assert expected in message
    assert time.monotonic() - started < 30, "refusing must not expand or build anything"


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"\x7fELF\x02\x01\x01\x00\x00\x00", id="binary"),
        pytest.param("n\u00f6de slots=2\n".encode(), id="non-ascii-host"),
        pytest.param(b"node slots=" + b"9" * 40 + b"\n", id="huge-slots"),
    ],
)
def test_garbage_hostfile_is_one_clear_error(
    tmp_path: Path, content: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    hostfile = tmp_path / "hostfile"
    hostfile.write_bytes(content)
    code = mpi_launch(
        ["--impl", "openmpi", "--hostfile", str(hostfile), "--wait-timeout", "1", "--", "true"]
    )
    error = capsys.readouterr().err
    assert code == 1 and error.startswith("mpi-launch: error: hostfile"), error


def _call(
    url: str, body: bytes | None, context: Any = None, timeout: float = 60
) -> tuple[int, Any]:
    request = urllib.request.Request(
        url,
        data=body,
        headers={"Content-Type": "application/json"},
        method="POST" if body else "GET",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as answer:
            text = answer.read()
            return answer.status, json.loads(text) if text.startswith(b"{") else text
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def _review(obj: Any, **request: Any) -> bytes:
    fields = {"uid": "u-1", "operation": "CREATE", "namespace": "default", "object": obj}
    envelope = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}
    return json.dumps({**envelope, "request": {**fields, **request}}).encode()


def _trainjob(name: str, spec: Any = None) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}} if spec is None else spec,
    }


MALFORMED_REVIEWS = [
    pytest.param(b"[1]", id="array"),
    pytest.param(b"null", id="null"),
    pytest.param(b"5", id="number"),
    pytest.param(b"[" * 200_000 + b"]" * 200_000, id="deep-json"),
    pytest.param(_review(_trainjob("j", spec="spec")), id="spec-string"),
    pytest.param(_review(_trainjob("j", spec={"runtimeRef": "x"})), id="runtimeRef-string"),
    pytest.param(
        _review({**_trainjob("j"), "kind": "ClusterTrainingRuntime"}), id="runtime-to-job-hook"
    ),
    pytest.param(_review(_trainjob("j"), operation="UPDATE", oldObject=[]), id="update-old-array"),
]


@pytest.mark.parametrize("body", MALFORMED_REVIEWS)
def test_malformed_reviews_are_never_allowed(operator_process: Any, body: bytes) -> None:
    for hook in WEBHOOK_PATHS.values():
        url = f"https://127.0.0.1:{operator_process.webhooks}{hook}"
        status, answer = _call(url, body, operator_process.tls)
        allowed = status == 200 and answer["response"]["allowed"]
        assert status in (200, 400) and not allowed, (hook, status, answer)


def test_oversized_bodies_are_refused(operator_process: Any) -> None:
    job = _trainjob("big")
    job["metadata"]["annotations"] = {"example.com/pad": "x" * (3 * 1024 * 1024 + 512 * 1024)}
    url = f"https://127.0.0.1:{operator_process.webhooks}{WEBHOOK_PATHS['validate-trainjob']}"
    assert _call(url, _review(job), operator_process.tls)[0] == 413
    operator_process.server.tokens["big"] = TokenIdentity(
        "system:serviceaccount:default:trainer", audiences=(token_audience("default", "big"),)
    )
    status, _ = _post_in_pieces(operator_process, "big", b" " * (64 * 1024 + 1), pieces=4)
    assert status == 413


def _post_in_pieces(operator_process: Any, name: str, body: bytes, pieces: int) -> tuple[int, Any]:
    """POST a progress report over TLS as ``pieces`` separate writes."""
    head = (
        f"POST {STATUS.format(name=name)} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {name}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    size = len(body) // pieces + 1
    raw = socket.create_connection(("127.0.0.1", operator_process.progress), timeout=60)
    with operator_process.tls.wrap_socket(raw, server_hostname="127.0.0.1") as client:
        client.sendall(head)
        for start in range(0, len(body), size):
            client.sendall(body[start : start + size])
            time.sleep(0.02)  # spread the writes (the outcome must not depend on it)
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), json.loads(rest.partition(b"\r\n\r\n")[2] or b"null")


def test_progress_reports_sent_in_pieces_are_read_whole(operator_process: Any) -> None:
    server = operator_process.server
    assert server.request("POST", TRAINJOBS, _trainjob("chunked"))[0] == 201
    server.tokens["chunked"] = TokenIdentity(
        "system:serviceaccount:default:trainer", audiences=(token_audience("default", "chunked"),)
    )
    for count in (160, 256):  # 24 KB and 40 KB
        report = {
            "progressPercentage": 10,
            "lastUpdatedTime": "2026-01-01T00:00:00Z",
            "metrics": [{"name": f"m{i:03d}-" + "n" * 56, "value": "9" * 64} for i in range(count)],
        }
        body = json.dumps({"trainerStatus": report}).encode()
        assert _post_in_pieces(operator_process, "chunked", body, pieces=6) == (
            200,
            {"trainerStatus": report},
        )


def _large_review(index: int) -> bytes:
    """A 0.5 MB TrainJob review that takes the validator seconds (it is invalid, as floods are)."""
    env = [{"name": f"VAR_{i}", "value": "x" * 20} for i in range(20)]
    jobs = [
        {"name": f"job-{j:05d}", "template": {"spec": {"template": {"spec": {"containers": [
            {"name": "node", "env": env}]}}}}}
        for j in range(400)
    ]  # fmt: skip
    patch = {"manager": "example.com/flood", "trainingRuntimeSpec": {"template": {"spec": {
        "replicatedJobs": jobs}}}}  # fmt: skip
    spec = {"runtimeRef": {"name": "torch-distributed"}, "runtimePatches": [patch]}
    return _review(_trainjob(f"flood-{index}", spec))


def test_probes_and_reconciles_stay_responsive_under_a_webhook_flood(
    operator_process: Any,
) -> None:
    path = WEBHOOK_PATHS["validate-trainjob"]
    stop, answered = threading.Event(), threading.Event()
    outcomes: list[int] = []
    connections: list[http.client.HTTPSConnection] = []

    def flood(index: int) -> None:
        body = _large_review(index)
        connection = http.client.HTTPSConnection(
            "127.0.0.1", operator_process.webhooks, timeout=120, context=operator_process.tls
        )
        connections.append(connection)
        while not stop.is_set():
            try:
                connection.request("POST", path, body, {"Content-Type": "application/json"})
                response = connection.getresponse()
                response.read()
                outcomes.append(response.status)
            except (OSError, http.client.HTTPException):
                if not stop.is_set():
                    outcomes.append(0)
                connection.close()
            answered.set()

    clients = [threading.Thread(target=flood, args=(index,)) for index in range(4)]
    for client in clients:
        client.start()
    try:
        assert answered.wait(timeout=120), "no flood review was ever answered"
        worst = 0.0
        for _ in range(20):  # the liveness probe's timeout is 1 s
            started = time.monotonic()
            status, text = _call(
                f"http://127.0.0.1:{operator_process.health}/healthz", None, timeout=5
            )
            worst = max(worst, time.monotonic() - started)
            assert (status, text) == (200, b"ok")
        assert worst < 1.0, f"/healthz took {worst:.2f} s under the flood"
        server = operator_process.server
        started = time.monotonic()
        assert server.request("POST", TRAINJOBS, _trainjob("during-flood"))[0] == 201
        deadline = started + 10
        while server.request("GET", f"{JOBSETS}/during-flood")[0] != 200:
            assert time.monotonic() < deadline, "no JobSet within 10 s under the flood"
            time.sleep(0.05)  # polling interval; the deadline bounds the wait
        reconcile = time.monotonic() - started
        assert reconcile < 5.0, f"TrainJob -> JobSet took {reconcile:.2f} s under the flood"
    finally:
        stop.set()
        for connection in connections:  # abandon the reviews in flight
            if connection.sock is not None:
                with contextlib.suppress(OSError):
                    connection.sock.shutdown(socket.SHUT_RDWR)
        for client in clients:
            client.join(timeout=150)
    assert outcomes and set(outcomes) <= {200, 429}, sorted(set(outcomes))
