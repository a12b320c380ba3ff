"""get_tpu_num_nodes: hosts of a multi-slice TPU job, as upstream computes them."""

from __future__ import annotations

import pytest
from trainer_sdk.backends.kubernetes.utils import get_tpu_num_nodes


@pytest.mark.parametrize(
    ("num_slices", "topology", "chips_per_host", "nodes"),
    [
        pytest.param(1, "2x2", 4, 1, id="one-host-slice"),
        pytest.param(2, "2x4", 4, 4, id="two-hosts-per-slice"),
        pytest.param(3, "2x2x4", 4, 12, id="three-dimensions"),
        pytest.param(2, "4x4", 8, 4, id="eight-chip-hosts"),
        pytest.param(2, "1x1", 4, 2, id="sub-host-slice-takes-one-host"),
        pytest.param(1, "2X4", 4, 2, id="upper-case-x"),
    ],
)
def test_nodes_of_a_tpu_job(
    num_slices: int, topology: str, chips_per_host: int, nodes: int
) -> None:
    assert get_tpu_num_nodes(num_slices, topology, chips_per_host) == nodes


@pytest.mark.parametrize(
    ("num_slices", "topology", "chips_per_host", "message"),
    [
        pytest.param(0, "2x2", 4, "num_slices: must be positive", id="no-slices"),
        pytest.param(1, "2x2", 0, "chips_per_host: must be positive", id="no-chips"),
        pytest.param(1, "", 4, "topology: a TPU topology", id="empty-topology"),
        pytest.param(1, "2xa", 4, "expected 'AxB' or 'AxBxC'", id="not-numbers"),
        pytest.param(1, "2x2x2x2", 4, "2 or 3 dimensions", id="four-dimensions"),
        pytest.param(1, "0x2", 4, "must be positive", id="zero-dimension"),
        pytest.param(1, "2x3", 4, "not a multiple of chips_per_host", id="partial-host"),
    ],
)
def test_bad_arguments_name_themselves(
    num_slices: int, topology: str, chips_per_host: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        get_tpu_num_nodes(num_slices, topology, chips_per_host)
