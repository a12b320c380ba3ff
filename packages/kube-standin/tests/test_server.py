"""The stand-in's API semantics over HTTP, pinned one behaviour per test."""

from __future__ import annotations

import itertools
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from kube_standin import ApiServer, TokenIdentity
from kubernetes import client, config, watch

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"  # registered by conftest


def widget(name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, **extra}


def test_create_assigns_server_metadata(server: ApiServer) -> None:
    status, created = server.request("POST", WIDGETS, widget("a", spec={"size": 1}))
    assert status == 201
    metadata = created["metadata"]
    assert metadata["namespace"] == "default"
    assert len(metadata["uid"]) == 36
    assert metadata["generation"] == 1
    assert metadata["creationTimestamp"].endswith("Z")
    assert int(metadata["resourceVersion"]) > 0


def test_resource_version_is_global_and_increasing(server: ApiServer) -> None:
    _, first = server.request("POST", WIDGETS, widget("a"))
    _, second = server.request("POST", CONFIGMAPS, {"metadata": {"name": "b"}})
    assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])


def test_generate_name(server: ApiServer) -> None:
    _, created = server.request("POST", WIDGETS, {"metadata": {"generateName": "w-"}})
    assert created["metadata"]["name"].startswith("w-") and len(created["metadata"]["name"]) > 2


@pytest.mark.parametrize(
    ("path", "body", "code"),
    [
        pytest.param(WIDGETS, widget("a"), 409, id="already-exists"),
        pytest.param(
            "/api/v1/namespaces/nowhere/configmaps",
            {"metadata": {"name": "x"}},
            404,
            id="no-namespace",
        ),
        pytest.param(
            WIDGETS, {"metadata": {"name": "x", "namespace": "other"}}, 400, id="namespace-mismatch"
        ),
        pytest.param(WIDGETS, {"metadata": {}}, 422, id="no-name"),
        pytest.param(
            "/apis/example.com/v1/namespaces/default/gadgets",
            {"metadata": {"name": "x"}},
            404,
            id="unknown-resource",
        ),
    ],
)
def test_create_errors(server: ApiServer, path: str, body: dict[str, Any], code: int) -> None:
    server.request("POST", WIDGETS, widget("a"))
    status, answer = server.request("POST", path, body)
    assert (status, answer["kind"], answer["code"]) == (code, "Status", code)


def test_stale_put_is_409(server: ApiServer) -> None:
    _, created = server.request("POST", WIDGETS, widget("a", spec={"size": 1}))
    status, _ = server.request("PUT", f"{WIDGETS}/a", {**created, "spec": {"size": 2}})
    assert status == 200
    status, answer = server.request("PUT", f"{WIDGETS}/a", {**created, "spec": {"size": 3}})
    assert status == 409 and answer["reason"] == "Conflict"


def test_stale_merge_patch_with_resource_version_is_409(server: ApiServer) -> None:
    _, created = server.request("POST", WIDGETS, widget("a"))
    server.request("PATCH", f"{WIDGETS}/a", {"spec": {"x": 1}}, "application/merge-patch+json")
    status, _ = server.request(
        "PATCH",
        f"{WIDGETS}/a",
        {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}},
        "application/merge-patch+json",
    )
    assert status == 409


def test_status_subresource_is_separate(server: ApiServer) -> None:
    _, created = server.request(
        "POST", WIDGETS, widget("a", spec={"size": 1}, status={"phase": "ignored"})
    )
    assert "status" not in created
    _, updated = server.request(
        "PATCH",
        f"{WIDGETS}/a/status",
        {"status": {"phase": "Ready"}, "spec": {"size": 9}},
        "application/merge-patch+json",
    )
    assert updated["status"] == {"phase": "Ready"} and updated["spec"] == {"size": 1}
    assert updated["metadata"]["generation"] == 1
    _, updated = server.request(
        "PATCH",
        f"{WIDGETS}/a",
        {"status": {"phase": "x"}, "spec": {"size": 2}},
        "application/merge-patch+json",
    )
    assert updated["status"] == {"phase": "Ready"} and updated["spec"] == {"size": 2}
    assert updated["metadata"]["generation"] == 2


def test_no_op_write_keeps_resource_version(server: ApiServer) -> None:
    _, created = server.request("POST", WIDGETS, widget("a", spec={"size": 1}))
    _, patched = server.request(
        "PATCH", f"{WIDGETS}/a", {"spec": {"size": 1}}, "application/merge-patch+json"
    )
    assert patched["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_json_patch(server: ApiServer) -> None:
    server.request("POST", WIDGETS, widget("a", spec={"items": [1]}))
    _, patched = server.request(
        "PATCH",
        f"{WIDGETS}/a",
        [{"op": "add", "path": "/spec/items/-", "value": 2}],
        "application/json-patch+json",
    )
    assert patched["spec"]["items"] == [1, 2]


def test_server_side_apply_creates_then_updates_with_managed_fields(server: ApiServer) -> None:
    body = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "a"},
        "spec": {"a": 1, "b": 2},
    }
    status, created = server.request(
        "PATCH",
        f"{WIDGETS}/a?fieldManager=trainer&force=true",
        body,
        "application/apply-patch+yaml",
    )
    assert status == 201
    assert [entry["manager"] for entry in created["metadata"]["managedFields"]] == ["trainer"]
    body["spec"] = {"a": 1}
    status, updated = server.request(
        "PATCH",
        f"{WIDGETS}/a?fieldManager=trainer&force=true",
        body,
        "application/apply-patch+yaml",
    )
    assert status == 200 and updated["spec"] == {"a": 1}


def test_server_side_apply_conflict_is_409_without_force(server: ApiServer) -> None:
    body = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "a"},
        "spec": {"a": 1},
    }
    server.request("PATCH", f"{WIDGETS}/a?fieldManager=one", body, "application/apply-patch+yaml")
    status, answer = server.request(
        "PATCH",
        f"{WIDGETS}/a?fieldManager=two",
        {**body, "spec": {"a": 2}},
        "application/apply-patch+yaml",
    )
    assert status == 409 and "one" in answer["message"]


def test_apply_needs_field_manager(server: ApiServer) -> None:
    status, answer = server.request(
        "PATCH", f"{WIDGETS}/a", widget("a"), "application/apply-patch+yaml"
    )
    assert status == 400 and "fieldManager" in answer["message"]


@pytest.mark.parametrize(
    ("selector", "names"),
    [
        pytest.param("app=x", ["a", "b"], id="equality"),
        pytest.param("app=x,tier!=db", ["a"], id="two-terms"),
        pytest.param("tier in (db)", ["b"], id="set"),
        pytest.param("!app", ["c"], id="absent"),
    ],
)
def test_list_with_label_selector(server: ApiServer, selector: str, names: list[str]) -> None:
    for name, labels in (("a", {"app": "x"}), ("b", {"app": "x", "tier": "db"}), ("c", {})):
        server.request("POST", WIDGETS, {"metadata": {"name": name, "labels": labels}})
    _, listed = server.request("GET", f"{WIDGETS}?labelSelector={selector.replace(' ', '%20')}")
    assert [item["metadata"]["name"] for item in listed["items"]] == names
    assert listed["kind"] == "WidgetList" and int(listed["metadata"]["resourceVersion"]) > 0


def test_watch_resumes_from_resource_version_and_filters_by_selector(server: ApiServer) -> None:
    server.request("POST", WIDGETS, {"metadata": {"name": "before", "labels": {"app": "x"}}})
    _, listed = server.request("GET", WIDGETS)
    version = listed["metadata"]["resourceVersion"]
    server.request("POST", WIDGETS, {"metadata": {"name": "other", "labels": {"app": "y"}}})
    server.request("POST", WIDGETS, {"metadata": {"name": "after", "labels": {"app": "x"}}})
    server.request("DELETE", f"{WIDGETS}/after")
    events = server.watch(
        f"{WIDGETS}?resourceVersion={version}&labelSelector=app%3Dx&timeoutSeconds=1"
    )
    assert [(event["type"], event["object"]["metadata"]["name"]) for event in events] == [
        ("ADDED", "after"),
        ("DELETED", "after"),
    ]


def test_watch_without_resource_version_starts_with_the_current_objects(server: ApiServer) -> None:
    server.request("POST", WIDGETS, widget("a"))
    events = list(server.watch(f"{WIDGETS}?timeoutSeconds=1"))
    assert [(event["type"], event["object"]["metadata"]["name"]) for event in events] == [
        ("ADDED", "a")
    ]


def test_watch_from_compacted_history_is_410() -> None:
    with ApiServer(watch_history=2) as server:
        for index in range(4):
            server.request("POST", CONFIGMAPS, {"metadata": {"name": f"c{index}"}})
        events = list(server.watch(f"{CONFIGMAPS}?resourceVersion=1&timeoutSeconds=1"))
    assert [(event["type"], event["object"]["code"]) for event in events] == [("ERROR", 410)]


def test_watch_streams_live_events_until_dropped(server: ApiServer) -> None:
    seen: list[str] = []
    first = threading.Event()

    def consume() -> None:
        for event in server.watch(f"{WIDGETS}?resourceVersion={server.store.resource_version}"):
            seen.append(event["object"]["metadata"]["name"])
            first.set()

    reader = threading.Thread(target=consume)
    reader.start()
    deadline = itertools.count()
    while (
        not first.is_set() and next(deadline) < 200
    ):  # the watch may connect after the first create
        server.request("POST", WIDGETS, {"metadata": {"generateName": "live-"}})
        first.wait(0.05)
    server.drop_watches()
    reader.join(timeout=10)
    assert not reader.is_alive() and seen and seen[0].startswith("live-")


def test_cascading_deletion_follows_owner_references(server: ApiServer) -> None:
    _, owner = server.request("POST", WIDGETS, widget("owner"))
    reference = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
    }
    _, child = server.request(
        "POST", CONFIGMAPS, {"metadata": {"name": "child", "ownerReferences": [reference]}}
    )
    child_reference = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "child",
        "uid": child["metadata"]["uid"],
    }
    server.request(
        "POST",
        CONFIGMAPS,
        {"metadata": {"name": "grandchild", "ownerReferences": [child_reference]}},
    )
    server.request("POST", CONFIGMAPS, {"metadata": {"name": "bystander"}})
    status, _ = server.request("DELETE", f"{WIDGETS}/owner")
    assert status == 200
    _, listed = server.request("GET", CONFIGMAPS)
    assert [item["metadata"]["name"] for item in listed["items"]] == ["bystander"]


def test_orphan_deletion_keeps_dependents_without_the_reference(server: ApiServer) -> None:
    _, owner = server.request("POST", WIDGETS, widget("owner"))
    reference = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
    }
    server.request(
        "POST", CONFIGMAPS, {"metadata": {"name": "child", "ownerReferences": [reference]}}
    )
    server.request("DELETE", f"{WIDGETS}/owner?propagationPolicy=Orphan")
    status, child = server.request("GET", f"{CONFIGMAPS}/child")
    assert status == 200 and "ownerReferences" not in child["metadata"]


def test_finalizers_hold_deletion_until_removed(server: ApiServer) -> None:
    server.request("POST", WIDGETS, {"metadata": {"name": "a", "finalizers": ["x/y"]}})
    _, marked = server.request("DELETE", f"{WIDGETS}/a")
    assert marked["metadata"]["deletionTimestamp"]
    server.request(
        "PATCH", f"{WIDGETS}/a", {"metadata": {"finalizers": None}}, "application/merge-patch+json"
    )
    status, _ = server.request("GET", f"{WIDGETS}/a")
    assert status == 404


def test_discovery_lists_crd_resources_with_status(server: ApiServer) -> None:
    _, groups = server.request("GET", "/apis")
    assert "example.com" in [group["name"] for group in groups["groups"]]
    _, listed = server.request("GET", "/apis/example.com/v1")
    assert [resource["name"] for resource in listed["resources"]] == ["widgets", "widgets/status"]


def test_token_review_checks_audiences(server: ApiServer) -> None:
    server.tokens["t"] = TokenIdentity("system:serviceaccount:default:x", audiences=("aud",))
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview"}
    _, good = server.request(
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        {**review, "spec": {"token": "t", "audiences": ["aud"]}},
    )
    _, wrong = server.request(
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        {**review, "spec": {"token": "t", "audiences": ["other"]}},
    )
    _, unknown = server.request(
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        {**review, "spec": {"token": "u", "audiences": ["aud"]}},
    )
    assert good["status"]["authenticated"] is True
    assert good["status"]["user"]["username"] == "system:serviceaccount:default:x"
    assert (wrong["status"]["authenticated"], unknown["status"]["authenticated"]) == (False, False)


def test_kubernetes_client_works(server: ApiServer, tmp_path: Path) -> None:
    api = config.new_client_from_config(str(server.write_kubeconfig(tmp_path / "kubeconfig")))
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map(
        "default", {"metadata": {"name": "a", "labels": {"k": "v"}}, "data": {"x": "1"}}
    )
    listed = core.list_namespaced_config_map("default", label_selector="k=v")
    assert [item.metadata.name for item in listed.items] == ["a"]
    custom = client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object(
        "example.com", "v1", "default", "widgets", widget("w", spec={"n": 1})
    )
    custom.patch_namespaced_custom_object_status(
        "example.com", "v1", "default", "widgets", "w", {"status": {"ok": True}}
    )
    assert custom.get_namespaced_custom_object("example.com", "v1", "default", "widgets", "w")[
        "status"
    ] == {"ok": True}
    events = watch.Watch().stream(
        core.list_namespaced_config_map,
        "default",
        timeout_seconds=1,
        resource_version=listed.metadata.resource_version,
    )
    core.delete_namespaced_config_map("a", "default")
    assert [(event["type"], event["object"].metadata.name) for event in events] == [
        ("DELETED", "a")
    ]


def test_kubectl_works(server: ApiServer, tmp_path: Path) -> None:
    kubeconfig = str(server.write_kubeconfig(tmp_path / "kubeconfig"))

    def kubectl(*args: str, stdin: str = "") -> str:
        result = subprocess.run(
            ["kubectl", "--kubeconfig", kubeconfig, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    manifest = (
        "apiVersion: example.com/v1\nkind: Widget\n"
        "metadata: {name: w, labels: {a: b}}\nspec: {n: 1}\n"
    )
    assert "serverside-applied" in kubectl(
        "apply", "--server-side", "--validate=false", "-f", "-", stdin=manifest
    )
    assert kubectl("get", "widgets", "-l", "a=b", "-o", "name").split() == ["widget.example.com/w"]
    kubectl(
        "patch",
        "widget",
        "w",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"done":true}}',
    )
    assert kubectl("get", "wd", "w", "-o", "jsonpath={.status.done}") == "true"
    assert 'widget.example.com "w" deleted' in kubectl("delete", "widget", "w")


def test_secret_string_data_is_stored_as_base64_data(server: ApiServer) -> None:
    _, created = server.request(
        "POST",
        "/api/v1/namespaces/default/secrets",
        {"metadata": {"name": "s"}, "stringData": {"k": "v"}, "data": {"a": "YQ=="}},
    )
    assert created["data"] == {"a": "YQ==", "k": "dg=="} and "stringData" not in created


def test_count_sees_every_namespace(server: ApiServer) -> None:
    server.request("POST", "/api/v1/namespaces", {"metadata": {"name": "other"}})
    for namespace in ("default", "other"):
        path = f"/api/v1/namespaces/{namespace}/configmaps"
        server.request("POST", path, {"metadata": {"name": "c"}})
    assert server.call(server.store.count, server.store.type_of("", "v1", "configmaps")) == 2
