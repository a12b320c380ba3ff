"""The main job: the Kubeflow Trainer distributed quickstart, on two nodes, through TrainerClient.

A small ShuffleNet-style CNN trained with DistributedDataParallel; every rank trains on its share
of the data (DistributedSampler) and prints its loss lines. Nothing can be downloaded here, so the
default data set is scikit-learn's digits (shipped with the package); ``--dataset fashion-mnist``
keeps the docs' FashionMNIST loader for machines with network access (it installs torchvision).

    python examples/main_job.py [--nodes 2] [--epochs 3] [--dataset digits|fashion-mnist]
"""

from __future__ import annotations

import argparse
import sys
import threading

from trainer_sdk import CustomTrainer, JobFailedError, TrainerClient


def train_shufflenet(
    dataset: str = "digits", epochs: int = 3, batch_size: int = 32, lr: float = 0.01
) -> None:
    """Runs on every rank: DDP training of a ShuffleNet-style CNN."""
    import os
    import time

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch import nn
    from torch.utils.data import DataLoader, DistributedSampler, Subset, TensorDataset

    torch.set_num_threads(1)
    dist.init_process_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)

    def channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
        batch, channels, height, width = x.shape
        x = x.view(batch, groups, channels // groups, height, width).transpose(1, 2)
        return x.reshape(batch, channels, height, width)

    class ShuffleUnit(nn.Module):
        def __init__(self, channels: int, groups: int = 2) -> None:
            super().__init__()
            self.groups = groups
            self.reduce = nn.Conv2d(channels, channels, 1, groups=groups, bias=False)
            self.bn1 = nn.BatchNorm2d(channels)
            self.depthwise = nn.Conv2d(
                channels, channels, 3, padding=1, groups=channels, bias=False
            )
            self.bn2 = nn.BatchNorm2d(channels)
            self.expand = nn.Conv2d(channels, channels, 1, groups=groups, bias=False)
            self.bn3 = nn.BatchNorm2d(channels)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = F.relu(self.bn1(self.reduce(x)))
            out = self.bn2(self.depthwise(channel_shuffle(out, self.groups)))
            out = self.bn3(self.expand(out))
            return F.relu(x + out)

    class ShuffleNet(nn.Module):
        def __init__(self, classes: int = 10) -> None:
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU()
            )
            self.stage1 = nn.Sequential(ShuffleUnit(16), ShuffleUnit(16))
            self.down = nn.Sequential(
                nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU()
            )
            self.stage2 = nn.Sequential(ShuffleUnit(32), ShuffleUnit(32))
            self.head = nn.Linear(32, classes)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.stage2(self.down(self.stage1(self.stem(x))))
            return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))

    if dataset == "fashion-mnist":
        from torchvision import datasets, transforms

        train_set = datasets.FashionMNIST(
            "./data", train=True, download=True, transform=transforms.ToTensor()
        )
        test_set = datasets.FashionMNIST(
            "./data", train=False, download=True, transform=transforms.ToTensor()
        )
    else:
        from sklearn.datasets import load_digits

        digits = load_digits()
        images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
        labels = torch.tensor(digits.target, dtype=torch.long)
        order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))
        split = int(0.8 * len(labels))
        train_set = TensorDataset(images[order[:split]], labels[order[:split]])
        test_set = TensorDataset(images[order[split:]], labels[order[split:]])

    sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(train_set, batch_size=batch_size, sampler=sampler)
    model = nn.parallel.DistributedDataParallel(ShuffleNet())
    optimizer = torch.optim.SGD(model.parameters(), lr=lr * 10, momentum=0.9)
    print(
        f"[rank {rank}/{world}] {os.environ.get('HOSTNAME', '')}: "
        f"{len(sampler)} of {len(train_set)} samples"
    )

    try:
        from trainer_sdk import log_metrics, update_trainjob_status
    except ImportError:  # a cluster image without the SDK: progress and metrics are optional
        log_metrics = update_trainjob_status = None

    started = time.monotonic()
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        model.train()
        for step, (inputs, targets) in enumerate(loader):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(inputs), targets)
            loss.backward()
            optimizer.step()
            if log_metrics is not None:  # every step: the loss curve in `trainer ui`
                log_metrics({"loss": loss.item()}, step=epoch * len(loader) + step)
            if step % 5 == 0:
                print(
                    f"[rank {rank}] epoch {epoch + 1}/{epochs} step {step:3d}/{len(loader)} "
                    f"loss {loss.item():.4f}"
                )
        if rank == 0 and update_trainjob_status is not None:
            done = (epoch + 1) / epochs
            elapsed = time.monotonic() - started
            update_trainjob_status(
                int(100 * done), int(elapsed / done - elapsed), {"loss": round(loss.item(), 4)}
            )

    # Evaluate with BatchNorm statistics of the trained model, the same on every rank: the running
    # averages each rank kept during training trail a model that changed under them (and differ
    # between ranks), which made the accuracy swing from run to run. Recompute them exactly over
    # the training set (each rank its share, then averaged), then evaluate the plain module, so
    # no DDP collective runs per test batch.
    net = model.module
    norms = [layer for layer in net.modules() if isinstance(layer, nn.BatchNorm2d)]
    for layer in norms:
        layer.reset_running_stats()
        layer.momentum = None  # a cumulative average over the batches below
    net.train()
    with torch.no_grad():
        for inputs, _ in loader:
            net(inputs)
        for layer in norms:
            for statistic in (layer.running_mean, layer.running_var):
                dist.all_reduce(statistic)
                statistic /= world
    net.eval()
    correct = torch.zeros(2)
    shard = Subset(test_set, range(rank, len(test_set), world))  # every sample once, no padding
    test_loader = DataLoader(shard, batch_size=128)
    with torch.no_grad():
        for inputs, targets in test_loader:
            correct += torch.tensor([float((net(inputs).argmax(1) == targets).sum()), len(targets)])
    dist.all_reduce(correct)
    if rank == 0:
        print(f"[rank 0] test accuracy {correct[0] / correct[1]:.3f} on {int(correct[1])} samples")
    dist.destroy_process_group()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--dataset", choices=["digits", "fashion-mnist"], default="digits")
    parser.add_argument("--timeout", type=int, default=600)
    args = parser.parse_args()

    client = TrainerClient()
    trainer = CustomTrainer(
        func=train_shufflenet,
        func_args={"dataset": args.dataset, "epochs": args.epochs},
        num_nodes=args.nodes,
        resources_per_node={"cpu": 1},
        packages_to_install=["torchvision"] if args.dataset == "fashion-mnist" else None,
    )
    name = client.train(trainer=trainer)
    print(f"TrainJob {name}: {args.nodes} nodes on the {type(client.backend).__name__}", flush=True)

    steps = [step.name for step in client.get_job(name).steps]
    lock = threading.Lock()

    def follow(step: str) -> None:
        for line in client.get_job_logs(name, step=step, follow=True):
            with lock:
                print(f"{step}: {line}", flush=True)

    threads = [threading.Thread(target=follow, args=(step,)) for step in steps]
    for thread in threads:
        thread.start()
    try:
        job = client.wait_for_job_status(name, timeout=args.timeout, polling_interval=1)
    except JobFailedError as error:
        print(error, file=sys.stderr)
        return 1
    finally:
        for thread in threads:
            thread.join()
    progress = job.trainer_status
    print(
        f"TrainJob {name}: {job.status}"
        + (f" ({progress.progress_percentage}%, {progress.metrics})" if progress else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
