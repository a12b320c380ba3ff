"""The exit-code policy both backends apply, and its rendering into a cluster's pod failure
policy agreeing with it code by code."""

from __future__ import annotations

import pytest
from trainer_runtime import exit_codes
from trainer_runtime.exit_codes import ExitAction
from trainer_runtime.plugins import checkpoint


@pytest.mark.parametrize(
    ("code", "action"),
    [
        pytest.param(0, ExitAction.SUCCEEDED, id="success"),
        pytest.param(1, ExitAction.RESTART, id="python-error"),
        pytest.param(2, ExitAction.RESTART, id="usage-error"),
        pytest.param(126, ExitAction.FAIL, id="not-executable"),
        pytest.param(127, ExitAction.FAIL, id="not-found"),
        pytest.param(128, ExitAction.FAIL, id="could-not-start"),
        pytest.param(137, ExitAction.RESTART, id="sigkill-as-a-container-reports-it"),
        pytest.param(-9, ExitAction.RESTART, id="sigkill-as-a-process-reports-it"),
        pytest.param(143, ExitAction.PREEMPTED, id="saved-and-exited"),
        pytest.param(-15, ExitAction.PREEMPTED, id="killed-by-sigterm"),
        pytest.param(139, ExitAction.RESTART, id="segfault"),
        pytest.param(-11, ExitAction.RESTART, id="segfault-as-a-process-reports-it"),
    ],
)
def test_each_exit_code_has_one_action(code: int, action: ExitAction) -> None:
    assert exit_codes.exit_action(code) is action


@pytest.mark.parametrize("code", range(1, 256))
def test_the_cluster_policy_fails_exactly_the_codes_the_local_executor_fails(code: int) -> None:
    rules = checkpoint.pod_failure_policy()["rules"]
    failed_by_cluster = any(code in rule.get("onExitCodes", {}).get("values", ()) for rule in rules)
    assert failed_by_cluster == (exit_codes.exit_action(code) is ExitAction.FAIL)
