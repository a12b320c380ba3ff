"""The progress endpoint's memory of accepted tokens."""

from __future__ import annotations

from trainer_controller.operator.progress import AcceptedTokens


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_accepted_token_is_remembered_for_its_job_until_the_ttl() -> None:
    clock = FakeClock()
    accepted = AcceptedTokens(ttl=60, clock=clock)
    accepted.add("token", "ns", "job")
    assert ("token", "ns", "job") in accepted
    assert ("token", "ns", "other-job") not in accepted
    assert ("other-token", "ns", "job") not in accepted
    clock.now = 60.0
    assert ("token", "ns", "job") not in accepted


def test_capacity_drops_the_oldest() -> None:
    accepted = AcceptedTokens(capacity=2, clock=FakeClock())
    for token in ("a", "b", "c"):
        accepted.add(token, "ns", "job")
    assert [(token, "ns", "job") in accepted for token in ("a", "b", "c")] == [False, True, True]
