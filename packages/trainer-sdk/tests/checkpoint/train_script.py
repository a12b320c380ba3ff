"""A small deterministic training run using the checkpoint API, for the resume tests.

Run as one rank of a gloo group (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) or alone. Every
step's batch depends only on the step and the rank; dropout draws from torch's RNG, so a resume
that lost the RNG states diverges. Rank 0 writes the final full parameters to ``--out``; every
rank appends ``step sample`` lines (what it trained on) to ``--seen``.
"""

from __future__ import annotations

import argparse
import os
import signal
import time
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from trainer_sdk import checkpoint


class Position:
    """The data position: the next sample index of this rank (a stateful object)."""

    def __init__(self) -> None:
        self.next = 0

    def state_dict(self) -> dict[str, Any]:
        return {"next": self.next}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.next = int(state["next"])


DEEPSPEED_CONFIG = {
    "train_micro_batch_size_per_gpu": 4,
    "gradient_accumulation_steps": 1,
    "zero_optimization": {"stage": 2},
    "zero_allow_untested_optimizer": True,
}


def model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.2), nn.ReLU(), nn.Linear(16, 1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", default=None, help="default: TRAINER_CHECKPOINT_DIR")
    parser.add_argument("--out", required=True)
    parser.add_argument("--seen", required=True)
    parser.add_argument("--mode", choices=("plain", "ddp", "fsdp", "deepspeed"), default="plain")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--every", type=int, default=4)
    parser.add_argument("--async-save", action="store_true")
    parser.add_argument("--cache", default=None, help="ENDPOINT,DATASET: read batches from it")
    parser.add_argument("--kill-at", type=int, default=-1, help="SIGKILL rank 1 after this step")
    parser.add_argument(
        "--kill-attempt",
        type=int,
        default=None,
        help="only in this attempt (TRAINER_RESTART_ATTEMPT)",
    )
    parser.add_argument("--term-at", type=int, default=-1, help="SIGTERM rank 0 after this step")
    parser.add_argument(
        "--hold-at", type=int, default=-1, help="in attempt 0, wait for SIGTERM after this step"
    )
    args = parser.parse_args()

    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    rank = dist.get_rank() if world > 1 else 0
    net = model()
    if args.mode == "ddp":
        net = nn.parallel.DistributedDataParallel(net)
    elif args.mode == "fsdp":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        fully_shard(net, mesh=init_device_mesh("cpu", (world,)))
    optimizer = torch.optim.AdamW(net.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    engine = None
    if args.mode == "deepspeed":  # ZeRO-2; the engine steps the optimizer and the scheduler
        import sys

        import deepspeed
        import deepspeed.comm.torch

        # Its optional CPU shared-memory allreduce is a C++ extension compiled at the first
        # init (more than 15 minutes on the shared test machine); gloo runs the collectives.
        sys.modules["deepspeed.comm.torch"].build_shm_op = lambda: None
        os.environ.setdefault("LOCAL_RANK", str(rank))  # what torchrun would set on one host

        engine, *_ = deepspeed.initialize(
            model=net, optimizer=optimizer, lr_scheduler=scheduler, config=DEEPSPEED_CONFIG
        )
    position = Position()
    torch.manual_seed(1234 + rank)
    data: Any = position
    if args.cache:
        from trainer_data_cache import CacheDataset

        endpoint, dataset = args.cache.split(",")
        data = CacheDataset(endpoint, dataset, batch_rows=2, rank=rank, world_size=world)

    state: dict[str, Any] = {"engine": engine, "data": data}
    if engine is None:
        state = {"model": net, "optimizer": optimizer, "scheduler": scheduler, "data": data}
    ckpt = checkpoint.Checkpointer(
        state, directory=args.dir, every=args.every, async_save=args.async_save
    )
    start = ckpt.restore()
    batches = iter(data) if args.cache else None
    with open(args.seen.format(rank=rank), "a") as seen:
        for step in range(start, args.steps):
            if batches is not None:  # the cache's rows, where the dataset's state says
                ids = next(batches)["id"].tolist()
                sample = ids[0]
                seen.writelines(f"{step + 1} {row}\n" for row in ids[1:])
            else:
                sample = position.next * world + rank
            generator = torch.Generator().manual_seed(sample)
            x = torch.randn(4, 8, generator=generator)
            y = torch.randn(4, 1, generator=generator)
            if engine is not None:
                engine.backward(nn.functional.mse_loss(engine(x), y))
                engine.step()
            else:
                loss = nn.functional.mse_loss(net(x), y)
                optimizer.zero_grad()
                loss.backward()  # type: ignore[no-untyped-call]
                optimizer.step()
                scheduler.step()
            position.next += 1
            seen.write(f"{step + 1} {sample}\n")
            seen.flush()
            attempt = int(os.environ.get(checkpoint.ATTEMPT_ENV, "0"))
            kill_now = args.kill_attempt is None or attempt == args.kill_attempt
            if step + 1 == args.kill_at and rank == 1 and kill_now:
                os.kill(os.getpid(), signal.SIGKILL)
            if step + 1 == args.term_at and rank == 0:
                os.kill(os.getpid(), signal.SIGTERM)
            if step + 1 == args.hold_at and attempt == 0:  # until suspended (bounded)
                deadline = time.monotonic() + 300
                while not ckpt.stop_requested and time.monotonic() < deadline:
                    time.sleep(0.05)
            ckpt.step(step + 1)
    ckpt.close()
    full = get_model_state_dict(net, options=StateDictOptions(full_state_dict=True))
    if rank == 0:
        params = {n: t.detach() for n, t in full.items() if isinstance(t, torch.Tensor)}
        torch.save(params, args.out)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
