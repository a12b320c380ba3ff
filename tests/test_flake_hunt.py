"""The flake hunter reads every test's outcome from pytest's JUnit report."""

from __future__ import annotations

from pathlib import Path

from flake_hunt import outcomes

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.e2e.test_a" name="test_passes"/>
<testcase classname="tests.e2e.test_a" name="test_fails"><failure message="x"/></testcase>
<testcase classname="tests.e2e.test_b" name="test_errors[p]"><error message="y"/></testcase>
<testcase classname="tests.e2e.test_b" name="test_skipped"><skipped message="z"/></testcase>
</testsuite></testsuites>
"""


def test_outcomes_per_test(tmp_path: Path) -> None:
    report = tmp_path / "report.xml"
    report.write_text(REPORT)
    assert outcomes(report) == {
        "tests.e2e.test_a::test_passes": True,
        "tests.e2e.test_a::test_fails": False,
        "tests.e2e.test_b::test_errors[p]": False,
        "tests.e2e.test_b::test_skipped": True,
    }
