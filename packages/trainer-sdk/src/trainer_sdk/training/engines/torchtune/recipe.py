"""The torchtune engine's recipe: full, LoRA and QLoRA fine-tuning, in one process or sharded
with FSDP2 over several, on CUDA or on the CPU.

    tune run [--rdzv_endpoint=HOST:PORT] trainer_sdk/training/engines/torchtune/recipe.py \\
        --config llama3_2/1B_lora [key=value ...]

It reads torchtune's configs (the keys in ``RECIPE_KEYS``) and is written against torchtune
``TORCHTUNE_VERSION``'s public components: model builders, checkpointer, tokenizers, datasets,
losses, FSDP helpers. What it adds to torchtune's own recipes: the model's dimensions come from
the checkpoint's ``config.json`` (``families``); no call needs CUDA; each step reports loss,
learning rate and tokens/s to the TrainJob; the training state goes to the job's checkpoint
volume (else ``<output_dir>/checkpoints``) every ``save_every_n_steps`` steps (default: each
epoch) and on SIGTERM, and a restarted run continues from the latest one at its step, with the
same data, to the same result; ``max_steps`` caps the steps over all epochs.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torchtune
from omegaconf import DictConfig, ListConfig, OmegaConf
from torch import nn
from torch.utils.data import ConcatDataset, DataLoader
from torchdata.stateful_dataloader.sampler import StatefulDistributedSampler
from torchtune import config, modules, training, utils
from torchtune._recipe_registry import get_all_recipes
from torchtune.config._utils import _get_component_from_path
from torchtune.data import padded_collate_packed
from torchtune.modules import TransformerDecoder
from torchtune.modules.peft import get_adapter_params, set_trainable_params

from trainer_sdk import checkpoint
from trainer_sdk.training.engines.reporting import StepReporter
from trainer_sdk.training.engines.torchtune import (
    RECIPE_KEYS,
    UNSUPPORTED_SETTINGS,
    families,
    outputs,
    placement,
)

__all__ = ["FineTune", "recipe_main"]

log = logging.getLogger(__name__)


def config_path(name: str) -> Path:
    """The file of ``--config NAME``: NAME itself, or the torchtune config of that name (what
    ``tune run`` passes on; the local backend's ``tune`` passes the name)."""
    if Path(name).is_file():
        return Path(name)
    configs = Path(str(torchtune.__file__)).parent.parent / "recipes" / "configs"
    for recipe in get_all_recipes():
        for known in recipe.configs:
            if known.name == name:
                return configs / str(known.file_path)
    raise ValueError(f"--config {name!r}: neither a file nor a torchtune config")


def with_config_path(argv: list[str]) -> list[str]:
    """``argv`` with its ``--config`` value a file's path."""
    if "--config" not in argv or argv.index("--config") + 1 == len(argv):
        return argv
    index = argv.index("--config") + 1
    return [*argv[:index], str(config_path(argv[index])), *argv[index + 1 :]]


def check_config(cfg: DictConfig) -> None:
    """ValueError naming the first key the recipe does not read, or a setting it refuses."""
    unknown = sorted(set(cfg) - RECIPE_KEYS)
    if unknown:
        raise ValueError(f"config: unknown keys {unknown}; the recipe reads {sorted(RECIPE_KEYS)}")
    for key, why in UNSUPPORTED_SETTINGS.items():
        if OmegaConf.select(cfg, key):
            raise ValueError(f"{key}: {why}")


class _Trainable(nn.Module):
    """A model's trainable parameters (its adapters) under names of their own: what a LoRA
    checkpoint holds, without the frozen (maybe quantized) base."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        for name, parameter in model.named_parameters():
            if parameter.requires_grad:
                self.register_parameter(name.replace(".", "__"), parameter)


class FineTune:
    """One run of the recipe: ``train()``, then ``save()``; ``close()`` in any case."""

    def __init__(self, cfg: DictConfig) -> None:
        check_config(cfg)
        self.cfg = cfg
        self.placement = placement.place(str(cfg.get("device", "cuda")))
        self.dtype = training.get_dtype(cfg.get("dtype"), device=self.placement.device)
        training.set_seed(seed=cfg.get("seed"), debug_mode=cfg.get("cudnn_deterministic_mode"))
        self.family = families.family_of(str(cfg.model._component_))
        checkpoint_dir = str(cfg.checkpointer.checkpoint_dir)
        self.lora = families.lora_settings(OmegaConf.to_container(cfg.model, resolve=True))
        self.checkpointer = config.instantiate(
            cfg.checkpointer,
            checkpoint_files=families.weight_files(checkpoint_dir),
            model_type=self.family.model_type,
            output_dir=str(Path(str(cfg.output_dir)) / outputs.STAGING),
        )
        self.tokenizer = self._tokenizer(checkpoint_dir)
        self.model = self._model(families.read_config(checkpoint_dir))
        self.loss_fn = config.instantiate(cfg.loss)
        if cfg.get("compile", False):
            self.loss_fn = training.compile_loss(self.loss_fn, verbose=self.placement.is_rank_zero)
        if hasattr(self.loss_fn, "num_output_chunks"):
            self.model.set_num_output_chunks(self.loss_fn.num_output_chunks)
        trainable = [parameter for parameter in self.model.parameters() if parameter.requires_grad]
        self.optimizer = config.instantiate(cfg.optimizer, trainable)
        self.sampler, self.loader = self._data()
        self.accumulation = int(cfg.get("gradient_accumulation_steps", 1))
        self.steps_per_epoch = len(self.loader) // self.accumulation
        if cfg.get("max_steps_per_epoch"):
            self.steps_per_epoch = min(self.steps_per_epoch, int(cfg.max_steps_per_epoch))
        if self.steps_per_epoch < 1:
            raise ValueError(
                f"dataset: {len(self.loader)} batches of batch_size {cfg.batch_size} per rank "
                f"make no step of gradient_accumulation_steps {self.accumulation}"
            )
        self.total_steps = int(cfg.epochs) * self.steps_per_epoch
        if cfg.get("max_steps"):
            self.total_steps = min(self.total_steps, int(cfg.max_steps))
        self.lr_scheduler = (
            config.instantiate(
                cfg.lr_scheduler, self.optimizer, num_training_steps=self.total_steps
            )
            if cfg.get("lr_scheduler")
            else None
        )
        self.metric_logger = (
            config.instantiate(cfg.metric_logger)
            if cfg.get("metric_logger") and self.placement.is_rank_zero
            else None
        )
        self.checkpoints = self._checkpoints()

    # -- setup --------------------------------------------------------------------------------

    def _tokenizer(self, checkpoint_dir: str) -> Any:
        special = families.checkpoint_special_tokens(self.family, checkpoint_dir)
        if special is None or self.cfg.tokenizer.get("special_tokens_path"):
            return config.instantiate(self.cfg.tokenizer)
        # torchtune's tokenizer builders read special tokens from a file only.
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "special_tokens.json"
            added = [{"content": name, "id": token_id} for name, token_id in special.items()]
            path.write_text(json.dumps({"added_tokens": added}))
            return config.instantiate(self.cfg.tokenizer, special_tokens_path=str(path))

    def _model(self, hf_config: Mapping[str, Any]) -> TransformerDecoder:
        weights = self.checkpointer.load_checkpoint()[training.MODEL_KEY]

        def build() -> nn.Module:
            return families.build_model(self.family, hf_config, self.lora)

        def prepare(model: nn.Module) -> None:
            if self.lora is not None:
                set_trainable_params(model, get_adapter_params(model))
            if self.cfg.get("enable_activation_checkpointing", False):
                training.set_activation_checkpointing(
                    model, auto_wrap_policy={modules.TransformerSelfAttentionLayer}
                )
            if self.cfg.get("compile", False):
                training.compile_model(model, verbose=self.placement.is_rank_zero)

        model, missing = placement.load_weights(
            build, weights, self.placement, self.dtype, prepare, self.cfg
        )
        adapters = set(get_adapter_params(model)) if self.lora is not None else set()
        if set(missing) - adapters:
            raise ValueError(f"checkpoint: no weights for {sorted(set(missing) - adapters)}")
        log.info(
            "model: the %s family with config.json's dimensions, %d parameters (%d trained), "
            "on %s in %s, %d process(es)",
            self.family.name,
            sum(parameter.numel() for parameter in model.parameters()),
            sum(parameter.numel() for parameter in model.parameters() if parameter.requires_grad),
            self.placement.device,
            self.dtype,
            self.placement.world_size,
        )
        return model

    def _data(self) -> tuple[StatefulDistributedSampler, DataLoader[Any]]:
        cfg = self.cfg
        if isinstance(cfg.dataset, ListConfig):
            dataset: Any = ConcatDataset(
                [config.instantiate(part, self.tokenizer) for part in cfg.dataset]
            )
        else:
            dataset = config.instantiate(cfg.dataset, self.tokenizer)
        sampler = StatefulDistributedSampler(
            dataset,
            num_replicas=self.placement.world_size,
            rank=self.placement.rank,
            shuffle=bool(cfg.get("shuffle", True)),
        )
        if getattr(dataset, "packed", False):
            collate: Any = padded_collate_packed
        else:
            collate = partial(
                _get_component_from_path(
                    cfg.get("collate_fn", "torchtune.data.padded_collate_sft")
                ),
                padding_idx=self.tokenizer.pad_id,
                ignore_idx=self.loss_fn.ignore_index,
            )
        loader = DataLoader(
            dataset,
            batch_size=int(cfg.batch_size),
            sampler=sampler,
            collate_fn=collate,
            drop_last=True,
            # Starting an epoch draws a seed from this generator, not from the global one, whose
            # state (dropout's) a resumed run restores as it was at the checkpoint's step.
            generator=torch.Generator(),
        )
        return sampler, loader

    def _checkpoints(self) -> Any:
        """The platform's checkpointer: on the job's checkpoint volume, else in the output."""
        directory = os.environ.get(checkpoint.CHECKPOINT_DIR_ENV) or (
            Path(str(self.cfg.output_dir)) / "checkpoints"
        )
        state: dict[str, Any] = {
            "model": self.model if self.lora is None else _Trainable(self.model),
            "optimizer": self.optimizer,
        }
        if self.lr_scheduler is not None:
            state["lr_scheduler"] = self.lr_scheduler
        every = int(self.cfg.get("save_every_n_steps") or self.steps_per_epoch)
        return checkpoint.Checkpointer(state, directory=directory, every=every, keep_last=2)

    # -- training -----------------------------------------------------------------------------

    def _batches(self, step: int) -> Iterator[dict[str, torch.Tensor]]:
        """The micro-batches from optimizer step ``step`` to the end of its epoch."""
        epoch, done = divmod(step, self.steps_per_epoch)
        self.sampler.set_epoch(epoch)
        consumed = done * self.accumulation * int(self.cfg.batch_size)
        self.sampler.load_state_dict({"yielded": consumed})
        return iter(self.loader)

    def _step(self, batches: Iterator[dict[str, torch.Tensor]]) -> tuple[float, int, float]:
        """One optimizer step over ``accumulation`` micro-batches: the loss per token over every
        rank, how many tokens every rank computed it on, and the learning rate it used."""
        ignore = self.loss_fn.ignore_index
        loss_sum = torch.zeros((), device=self.placement.device)
        tokens = torch.zeros((), device=self.placement.device, dtype=torch.long)
        for _ in range(self.accumulation):
            batch = next(batches)
            utils.batch_to_device(batch, self.placement.device)
            labels = batch.pop("labels")
            # Each position predicts the next token; the last predicts nothing.
            labels = torch.cat([labels[..., 1:], torch.full_like(labels[..., :1], ignore)], -1)
            counted = (labels != ignore).sum()
            logits = self.model(**batch)
            if not isinstance(logits, list):
                logits, labels = logits.reshape(-1, logits.size(-1)), labels.reshape(-1)
            loss = self.loss_fn(logits, labels) * counted
            del logits
            loss.backward()
            loss_sum += loss.detach()
            tokens += counted
        if self.placement.sharded:
            dist.all_reduce(loss_sum)
            dist.all_reduce(tokens)
        # FSDP averages gradients over ranks: undo that, then divide by every rank's tokens.
        training.scale_grads(self.model, torch.tensor(self.placement.world_size / tokens.item()))
        if self.cfg.get("clip_grad_norm") is not None:
            nn.utils.clip_grad_norm_(self.model.parameters(), float(self.cfg.clip_grad_norm))
        learning_rate = float(self.optimizer.param_groups[0]["lr"])
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if self.lr_scheduler is not None:
            self.lr_scheduler.step()
        return loss_sum.item() / tokens.item(), int(tokens.item()), learning_rate

    def train(self) -> None:
        """Train from the latest checkpoint (step 0 without one) to the last step."""
        step = self.checkpoints.restore()
        self.model.train()
        reporter = StepReporter(self.total_steps)
        reporter.start(step)
        every = int(self.cfg.get("log_every_n_steps", 1))
        while step < self.total_steps:
            batches = self._batches(step)
            for _ in range(step % self.steps_per_epoch, self.steps_per_epoch):
                started = time.perf_counter()
                loss, tokens, learning_rate = self._step(batches)
                seconds = time.perf_counter() - started
                step += 1
                if self.placement.is_rank_zero and (step % every == 0 or step == self.total_steps):
                    values = {
                        "loss": loss,
                        "learning_rate": learning_rate,
                        "tokens_per_second": tokens / seconds,
                    }
                    if self.placement.device.type == "cuda" and self.cfg.get(
                        "log_peak_memory_stats", False
                    ):
                        values.update(training.get_memory_stats(device=self.placement.device))
                    reporter.report(step, values, total_tokens=None)
                    if self.metric_logger is not None:
                        self.metric_logger.log_dict(values, step=step)
                    log.info("step %d/%d: loss %.4f", step, self.total_steps, loss)
                self.checkpoints.step(step)
                if step == self.total_steps:
                    return

    def save(self) -> None:
        """Write the fine-tuned model as Hugging Face directories (rank 0). Collective."""
        state = placement.full_state_dict(self.model, self.placement)
        if self.placement.is_rank_zero:
            written = outputs.write_model(
                self.checkpointer,
                state,
                self.lora,
                Path(str(self.cfg.output_dir)),
                adapters_only=bool(self.cfg.get("save_adapter_weights_only", False)),
            )
            log.info("fine-tuned model written to %s", ", ".join(map(str, written)))
        if self.placement.sharded:
            dist.barrier()

    def close(self) -> None:
        """Wait for a checkpoint in flight and release the process group."""
        self.checkpoints.close()
        if self.metric_logger is not None:
            self.metric_logger.close()
        if self.placement.sharded:
            dist.destroy_process_group()


@config.parse  # type: ignore[untyped-decorator]
def recipe_main(cfg: DictConfig) -> None:
    """``tune run``'s entry: train, write the model, release the process group."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    # torchtune's logger prints through a handler of its own: not through the root's too.
    utils.get_logger().propagate = False
    run = FineTune(cfg)
    try:
        run.train()
        run.save()
    finally:
        run.close()


if __name__ == "__main__":
    sys.argv = with_config_path(sys.argv)
    recipe_main()
