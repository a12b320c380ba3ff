from pathlib import Path

import pytest
from mpi_runtime import (
    MAX_SLOTS,
    HostSlots,
    InvalidArgumentError,
    hostfile,
    parse_hostfile,
    rank_hosts,
    read_hostfile,
)

HOSTS = ["job-launcher-0-0.job", "job-node-0-0.job", "job-node-0-1.job"]


@pytest.mark.parametrize(
    ("impl", "expected"),
    [
        pytest.param(
            "OpenMPI",
            "job-launcher-0-0.job slots=2\njob-node-0-0.job slots=2\njob-node-0-1.job slots=2\n",
            id="openmpi-slots",
        ),
        pytest.param(
            "Intel", "job-launcher-0-0.job:2\njob-node-0-0.job:2\njob-node-0-1.job:2\n", id="intel"
        ),
        pytest.param(
            "mpich", "job-launcher-0-0.job:2\njob-node-0-0.job:2\njob-node-0-1.job:2\n", id="mpich"
        ),
    ],
)
def test_hostfile_format_per_implementation(impl: str, expected: str) -> None:
    assert hostfile(HOSTS, 2, impl) == expected


@pytest.mark.parametrize("impl", ["OpenMPI", "Intel", "MPICH"])
def test_rank_zero_runs_on_first_host_and_ranks_fill_hosts_in_order(impl: str) -> None:
    text = hostfile(HOSTS, 2, impl)
    assert parse_hostfile(text) == [HostSlots(host, 2) for host in HOSTS]
    assert rank_hosts(parse_hostfile(text)) == [
        HOSTS[0], HOSTS[0], HOSTS[1], HOSTS[1], HOSTS[2], HOSTS[2],
    ]  # fmt: skip


def test_hostfile_keeps_caller_order_rather_than_sorting() -> None:
    assert hostfile(["b", "a"], 1, "OpenMPI") == "b slots=1\na slots=1\n"


@pytest.mark.parametrize(
    ("hosts", "slots", "argument"),
    [
        pytest.param([], 1, "hosts", id="no-hosts"),
        pytest.param("node-0", 1, "hosts", id="string-not-sequence"),
        pytest.param(["a", ""], 1, r"hosts\[1\]", id="empty-host"),
        pytest.param(["a b"], 1, r"hosts\[0\]", id="space-in-host"),
        pytest.param(["a:2"], 1, r"hosts\[0\]", id="colon-in-host"),
        pytest.param(["a", "a"], 1, r"hosts\[1\]", id="duplicate-host"),
        pytest.param(["a"], 0, "slots", id="zero-slots"),
        pytest.param(["a"], True, "slots", id="bool-slots"),
        pytest.param(["a"], "2", "slots", id="string-slots"),
    ],
)
def test_hostfile_rejects_bad_input_naming_the_argument(
    hosts: object, slots: object, argument: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=rf"^{argument}: "):
        hostfile(hosts, slots, "OpenMPI")  # type: ignore[arg-type]


def test_parse_hostfile_reads_comments_defaults_and_both_formats() -> None:
    text = "# generated\n\nnode-a slots=4 max_slots=8\nnode-b:3\nnode-c  # one slot\n"
    assert parse_hostfile(text) == [
        HostSlots("node-a", 4),
        HostSlots("node-b", 3),
        HostSlots("node-c", 1),
    ]


@pytest.mark.parametrize(
    "line",
    [
        "node slots=0",
        "node:x",
        ":2",
        "node slots=",
        "node slots=\u00b2",  # a digit to str.isdigit, not to int()
        "node slots=99999999999999999999",
        f"node slots={MAX_SLOTS + 1}",
        "n\x00de slots=1",
        "n\u00f6de slots=1",
        "\ufffd\ufffd slots=1",
    ],
)
def test_parse_hostfile_names_the_bad_line(line: str) -> None:
    with pytest.raises(InvalidArgumentError, match=r"^hostfile line 2: "):
        parse_hostfile(f"ok slots=1\n{line}\n")


def test_read_hostfile_refuses_garbage_bytes_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "hostfile"
    path.write_bytes(b"node-a slots=2\n\xff\xfe\x00garbage\n")
    with pytest.raises(
        InvalidArgumentError, match=r"^hostfile: .*hostfile is not UTF-8 text: byte 0xff"
    ):
        read_hostfile(path)
    path.write_text("node-a slots=2\n")
    assert parse_hostfile(read_hostfile(path)) == [HostSlots("node-a", 2)]
