"""Reading the user's exception and rank out of a failed step's log."""

from __future__ import annotations

import pytest
from trainer_sdk.status.failures import FailureSummary, summarize

# What torchrun 2.x printed for a two-rank job whose rank 1 raised (paths shortened).
TORCHRUN = """\
*****************************************
Setting OMP_NUM_THREADS environment variable for each process to be 1 in default
*****************************************
[rank1]: Traceback (most recent call last):
[rank1]:   File "/tmp/tr/f.py", line 10, in <module>
[rank1]:     train()
[rank1]:   File "/tmp/tr/f.py", line 4, in helper
[rank1]:     raise ValueError(f"bad learning rate {x}")
[rank1]: ValueError: bad learning rate 0.1
[rank0]: Traceback (most recent call last):
[rank0]:   File "/tmp/tr/f.py", line 9, in train
[rank0]:     dist.barrier()
[rank0]:     work.wait()
[rank0]: RuntimeError: [pair.cc:553] Connection closed by peer [127.0.0.1]:33497.
W1201 11:37:53.483000 23881 torch/distributed/elastic/multiprocessing/api.py:1028] Sending SIGTERM
E1201 11:37:53.520000 23881 torch/distributed/elastic/multiprocessing/api.py:1002] failed
Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "torch/distributed/launcher/api.py", line 383, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
/tmp/tr/f.py FAILED
------------------------------------------------------------
Failures:
[1]:
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 24192)  (SIGTERM)
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 24193)
============================================================"""

PLAIN = """\
loading data
Traceback (most recent call last):
  File "/home/u/train.py", line 3, in <module>
    open("missing.csv")
FileNotFoundError: [Errno 2] No such file or directory: 'missing.csv'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/home/u/train.py", line 5, in <module>
    raise RuntimeError("no data")
RuntimeError: no data"""


@pytest.mark.parametrize(
    ("log", "exception", "rank"),
    [
        pytest.param(TORCHRUN, "ValueError: bad learning rate 0.1", 1, id="torchrun-root-cause"),
        pytest.param(
            TORCHRUN.replace("rank      : 1 (local_rank: 1)", "rank      : 0 (local_rank: 0)"),
            "RuntimeError: [pair.cc:553] Connection closed by peer [127.0.0.1]:33497.",
            0,
            id="torchrun-root-cause-decides",
        ),
        pytest.param(
            TORCHRUN.split("W1201")[0],
            "ValueError: bad learning rate 0.1",
            1,
            id="no-banner-first-rank-to-fail",
        ),
        pytest.param(PLAIN, "RuntimeError: no data", None, id="plain-python-last-exception"),
        pytest.param(
            "\n".join(TORCHRUN.splitlines()[9:]).replace("[rank0]: ", ""),
            "RuntimeError: [pair.cc:553] Connection closed by peer [127.0.0.1]:33497.",
            1,
            id="no-prefixes-skips-torchruns-own",
        ),
    ],
)
def test_the_users_exception_and_rank(log: str, exception: str, rank: int | None) -> None:
    summary = summarize(log.splitlines())
    assert summary is not None
    assert (summary.exception, summary.rank) == (exception, rank)
    assert summary.traceback[0] == "Traceback (most recent call last):"
    assert summary.traceback[-1] == exception
    assert not any("ChildFailedError" in line for line in summary.traceback)


def test_the_traceback_is_the_raising_ranks_without_prefixes() -> None:
    summary = summarize(TORCHRUN.splitlines())
    assert summary == FailureSummary(
        "ValueError: bad learning rate 0.1",
        1,
        (
            "Traceback (most recent call last):",
            '  File "/tmp/tr/f.py", line 10, in <module>',
            "    train()",
            '  File "/tmp/tr/f.py", line 4, in helper',
            '    raise ValueError(f"bad learning rate {x}")',
            "ValueError: bad learning rate 0.1",
        ),
    )


@pytest.mark.parametrize(
    "log",
    [
        pytest.param("", id="empty"),
        pytest.param("bad input\nexit 3", id="no-traceback"),
        pytest.param(TORCHRUN.split("E1201")[1], id="only-torchruns-own"),
    ],
)
def test_no_users_traceback_gives_none(log: str) -> None:
    assert summarize(log.splitlines()) is None
