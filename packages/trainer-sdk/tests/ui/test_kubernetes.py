"""The UI over the Kubernetes backend: the real ``kubernetes`` client against the API stand-in."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from trainer_sdk import CustomTrainer, KubernetesBackendConfig, TrainerClient
from trainer_sdk.ui import UiServer

testing = pytest.importorskip("kube_standin", reason="needs kube-standin")
CRDS = Path(__file__).resolve().parents[4] / "packages" / "trainer-api" / "manifests" / "crds"
TRAINJOBS = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs"
SEE_SECONDS = 60


def train() -> None:
    print("training")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """The stand-in with the Trainer CRDs and the torch-distributed runtime installed."""
    import trainer_runtime

    with testing.ApiServer() as running:
        for path in sorted(CRDS.glob("trainer.kubeflow.org_*.yaml")):
            crd = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            for resource_type in testing.types_from_crd(crd):
                running.call(running.store.register, resource_type)
        runtime = trainer_runtime.builtin_runtimes()["torch-distributed"].to_dict()
        path = "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes"
        assert running.request("POST", path, runtime)[0] == 201
        yield running


@pytest.fixture
def jobs(cluster: Any, tmp_path: Path) -> tuple[TrainerClient, list[str]]:
    """A client on the stand-in's default namespace and two TrainJobs created through it."""
    kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig", namespace="default")
    client = TrainerClient(KubernetesBackendConfig(config_file=str(kubeconfig)))
    for name in [job.name for job in client.list_jobs()]:
        client.delete_job(name)
    names = [client.train(trainer=CustomTrainer(func=train, num_nodes=2)) for _ in range(2)]
    return client, names


def report(cluster: Any, name: str, loss: float, at: str) -> None:
    """What the progress endpoint writes: the job's status.trainerStatus."""
    status = {
        "progressPercentage": 50,
        "lastUpdatedTime": at,
        "metrics": [{"name": "loss", "value": str(loss)}],
    }
    answer = cluster.request(
        "PATCH",
        f"{TRAINJOBS}/{name}/status",
        {"status": {"trainerStatus": status}},
        content_type="application/merge-patch+json",
    )
    assert answer[0] == 200, answer


def get(server: UiServer, path: str) -> Any:
    with urllib.request.urlopen(f"{server.url.rstrip('/')}{path}", timeout=30) as response:
        return json.loads(response.read())


def test_the_api_lists_cluster_jobs_and_samples_their_reported_metrics(
    cluster: Any, jobs: tuple[TrainerClient, list[str]], start_ui: Callable[..., UiServer]
) -> None:
    client, names = jobs
    server = start_ui(client, allow_delete=False)
    assert get(server, "/api/info") == {
        "backend": "kubernetes",
        "canStop": False,
        "canDelete": False,
    }
    rows = get(server, "/api/jobs")
    assert sorted(row["name"] for row in rows) == sorted(names)
    assert {(row["status"], row["runtime"], row["nodes"]) for row in rows} == {
        ("Created", "torch-distributed", 2)
    }
    detail = get(server, f"/api/jobs/{names[0]}")
    assert "kind: TrainJob" in detail["trainjobYaml"] and detail["jobsetYaml"] is None

    report(cluster, names[0], 0.5, "2026-01-01T00:00:05Z")
    [line] = get(server, f"/api/jobs/{names[0]}/metrics")["metrics"]["loss"].values()
    assert (line["x"], line["y"]) == ([0], [0.5])
    assert get(server, f"/api/jobs/{names[0]}/metrics")["count"] == 1  # the same report again
    report(cluster, names[0], 0.25, "2026-01-01T00:00:10Z")
    [line] = get(server, f"/api/jobs/{names[0]}/metrics")["metrics"]["loss"].values()
    assert (line["x"], line["y"]) == ([0, 1], [0.5, 0.25])
    [row] = [row for row in get(server, "/api/jobs") if row["name"] == names[0]]
    assert (row["progress"], row["metrics"]) == (50, {"loss": "0.25"})


def test_the_sampled_curve_survives_a_restart_of_the_ui(
    cluster: Any,
    jobs: tuple[TrainerClient, list[str]],
    start_ui: Callable[..., UiServer],
    tmp_path: Path,
) -> None:
    client, names = jobs
    history = tmp_path / "state" / "ui-history.sqlite3"
    first = start_ui(client, history=history)
    now = int(time.time())  # recent reports: older ones would be past the retention
    report(cluster, names[0], 0.5, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 10)))
    get(first, f"/api/jobs/{names[0]}/metrics")
    report(cluster, names[0], 0.25, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 5)))
    get(first, f"/api/jobs/{names[0]}/metrics")
    first.shutdown()
    first.server_close()
    again = start_ui(client, history=history)
    [line] = get(again, f"/api/jobs/{names[0]}/metrics")["metrics"]["loss"].values()
    assert (line["x"], line["y"]) == ([0, 1], [0.5, 0.25])
    without = start_ui(client)  # no file: the history starts with what it sees now
    [line] = get(without, f"/api/jobs/{names[0]}/metrics")["metrics"]["loss"].values()
    assert line["y"] == [0.25]


def click(browser: Any, locator: tuple[str, str]) -> None:
    """Click what ``locator`` finds, again if the list re-rendered it meanwhile (it polls)."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    def clicked(driver: Any) -> bool:
        driver.find_element(*locator).click()
        return True

    WebDriverWait(browser, SEE_SECONDS, ignored_exceptions=(StaleElementReferenceException,)).until(
        clicked
    )


@pytest.mark.e2e
def test_the_job_list_renders_against_the_api_stand_in(
    cluster: Any,
    jobs: tuple[TrainerClient, list[str]],
    start_ui: Callable[..., UiServer],
    browser: Any,
    tmp_path: Path,
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import Select, WebDriverWait

    client, names = jobs
    server = start_ui(client, allow_delete=False)
    for index, name in enumerate(names):
        report(cluster, name, 1.0 + index, "2026-01-01T00:00:05Z")
    browser.get(server.url)
    for name in names:
        cell = (By.CSS_SELECTOR, f'tr[data-job="{name}"] td.status .badge')
        WebDriverWait(browser, SEE_SECONDS).until(
            seen.text_to_be_present_in_element(cell, "Created")
        )
    assert browser.find_element(By.ID, "backend").text == "kubernetes backend"
    rows = (By.CSS_SELECTOR, "#jobs tr[data-job]")
    Select(browser.find_element(By.ID, "filter-status")).select_by_value("Running")
    WebDriverWait(browser, SEE_SECONDS).until(lambda driver: not driver.find_elements(*rows))
    Select(browser.find_element(By.ID, "filter-status")).select_by_value("Created")
    browser.find_element(By.ID, "job-search").send_keys("torch-distributed")
    WebDriverWait(browser, SEE_SECONDS).until(lambda driver: len(driver.find_elements(*rows)) == 2)
    browser.save_screenshot(str(tmp_path / "cluster-job-list.png"))
    click(browser, (By.LINK_TEXT, names[0]))
    WebDriverWait(browser, SEE_SECONDS).until(
        seen.text_to_be_present_in_element((By.ID, "job-status"), "Created")
    )
    assert not browser.find_elements(By.ID, "delete")  # read-only: no delete button
    chart = (By.CSS_SELECTOR, '.chart[data-metric="loss"]')
    WebDriverWait(browser, SEE_SECONDS).until(
        seen.text_to_be_present_in_element_attribute(chart, "data-points", "1")
    )
    browser.find_element(By.LINK_TEXT, "← Jobs").click()
    for name in names:
        click(browser, (By.CSS_SELECTOR, f'input.select[data-job="{name}"]'))
    click(browser, (By.ID, "compare-selected"))
    overlaid = (By.CSS_SELECTOR, '.chart[data-metric="loss"] .u-legend .u-series')
    WebDriverWait(browser, SEE_SECONDS).until(
        lambda driver: len(driver.find_elements(*overlaid)) == 3  # x, one job, the other
    )
    assert f"{names[1]} rank 0" in browser.find_element(*chart).get_attribute("textContent")


@pytest.mark.e2e
def test_the_runtimes_page_shows_what_each_runtime_builds(
    jobs: tuple[TrainerClient, list[str]], start_ui: Callable[..., UiServer], browser: Any
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    server = start_ui(jobs[0], allow_delete=False)
    browser.get(f"{server.url}#/runtimes")
    section = (By.CSS_SELECTOR, '.runtime[data-runtime="torch-distributed"]')
    WebDriverWait(browser, SEE_SECONDS).until(
        seen.text_to_be_present_in_element(section, "Framework torch")
    )
    assert "node" in browser.find_element(*section).find_element(By.TAG_NAME, "table").text
