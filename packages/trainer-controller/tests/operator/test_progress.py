"""The progress endpoint's memory of accepted tokens."""

from __future__ import annotations

from trainer_controller.operator.progress import AcceptedTokens


def test_accepted_token_is_remembered_for_its_job_until_the_ttl(clock) -> None:  # type: ignore[no-untyped-def]
    accepted = AcceptedTokens(ttl=60, clock=clock)
    accepted.add("token", "ns", "job")
    assert ("token", "ns", "job") in accepted
    assert ("token", "ns", "other-job") not in accepted
    assert ("other-token", "ns", "job") not in accepted
    clock.now += 60.0
    assert ("token", "ns", "job") not in accepted


def test_capacity_drops_the_oldest(clock) -> None:  # type: ignore[no-untyped-def]
    accepted = AcceptedTokens(capacity=2, clock=clock)
    for token in ("a", "b", "c"):
        accepted.add(token, "ns", "job")
    assert [(token, "ns", "job") in accepted for token in ("a", "b", "c")] == [False, True, True]
