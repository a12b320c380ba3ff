"""Public data types, call-compatible with ``kubeflow.trainer.types`` (Kubeflow Trainer SDK)."""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Any
from urllib.parse import urlparse

from trainer_sdk import constants
from trainer_sdk.manifests import storage

__all__ = [
    "DPO",
    "GRPO",
    "KTO",
    "ORPO",
    "QAT",
    "TORCH_TUNE",
    "BaseInitializer",
    "BuiltinTrainer",
    "ChatDataset",
    "CheckpointStatus",
    "CustomTrainer",
    "CustomTrainerContainer",
    "DataCacheInitializer",
    "DataFormat",
    "DataType",
    "Distillation",
    "EngineSettings",
    "Event",
    "ExactMatchReward",
    "FunctionReward",
    "HuggingFaceDatasetInitializer",
    "HuggingFaceModelInitializer",
    "Initializer",
    "LengthReward",
    "LoraConfig",
    "Loss",
    "PreferenceDataset",
    "PromptDataset",
    "RegexReward",
    "Runtime",
    "RuntimeKind",
    "RuntimeTrainer",
    "S3DatasetInitializer",
    "S3ModelInitializer",
    "Step",
    "TRLConfig",
    "TorchTuneConfig",
    "TorchTuneInstructDataset",
    "TrainJob",
    "TrainJobTemplate",
    "TrainerStatus",
    "TrainerType",
]


@dataclass
class CustomTrainer:
    """A self-contained training function, run on every node of the runtime.

    ``func_args`` are passed to ``func`` as keyword arguments on every backend.
    ``image`` is recorded in the TrainJob; the local backend ignores it (with a note in the logs).
    """

    func: Callable[..., Any]
    func_args: dict[str, Any] | None = None
    image: str | None = None
    packages_to_install: list[str] | None = None
    pip_index_urls: list[str] = field(
        default_factory=lambda: list(constants.DEFAULT_PIP_INDEX_URLS)
    )
    num_nodes: int | None = None
    resources_per_node: dict[str, Any] | None = None
    env: dict[str, str] | None = None


@dataclass
class CustomTrainerContainer:
    """A container image that holds the whole training process."""

    image: str
    num_nodes: int | None = None
    resources_per_node: dict[str, Any] | None = None
    env: dict[str, str] | None = None


class Loss(Enum):
    """Loss function of the TorchTune trainer."""

    CEWithChunkedOutputLoss = "torchtune.modules.loss.CEWithChunkedOutputLoss"


class DataType(Enum):
    """Parameter data type of the TorchTune trainer."""

    BF16 = "bf16"
    FP32 = "fp32"


class DataFormat(Enum):
    """Data file format of the TorchTune instruct data set."""

    JSON = "json"
    CSV = "csv"
    PARQUET = "parquet"
    ARROW = "arrow"
    TEXT = "text"
    XML = "xml"


@dataclass
class _DatasetPreprocessing:
    """How a data set's files are read and its records turned into training examples."""

    source: DataFormat | None = None
    split: str | None = None
    train_on_input: bool | None = None
    new_system_prompt: str | None = None
    column_map: dict[str, str] | None = None


@dataclass
class TorchTuneInstructDataset(_DatasetPreprocessing):
    """Preprocessing of an instruct data set (upstream's name; the TRL engine takes it too):
    ``input`` and ``output`` columns, mapped with ``column_map``."""


@dataclass
class LoraConfig:
    """LoRA / QLoRA / DoRA settings of the TorchTune trainer."""

    apply_lora_to_mlp: bool | None = None
    apply_lora_to_output: bool | None = None
    lora_attn_modules: list[str] = field(
        default_factory=lambda: ["q_proj", "v_proj", "output_proj"]
    )
    lora_rank: int | None = None
    lora_alpha: int | None = None
    lora_dropout: float | None = None
    quantize_base: bool | None = None
    use_dora: bool | None = None


@dataclass
class ChatDataset(_DatasetPreprocessing):
    """Preprocessing of a chat data set: a column of conversations, each a list of messages
    (``{"role": ..., "content": ...}``), rendered with the model's chat template.

    ``column_map`` maps ``messages`` (and, for ShareGPT-style records, ``role``/``content``) to
    the data set's names, e.g. ``{"messages": "conversations", "role": "from",
    "content": "value"}``; ``train_on_input`` trains on the user's turns too (default: only on
    the assistant's)."""


@dataclass
class EngineSettings:
    """The settings every fine-tuning engine's config has, under the same names, beyond
    upstream's ``TorchTuneConfig`` fields (unset: the engine's or the runtime's default).

    ``device``: ``"cpu"`` or ``"cuda"`` (unset: the node's accelerator if it has one).
    ``save_steps``: steps between the engine's checkpoints. ``overrides``: any other setting the
    engine accepts, by its own name (TRL: a ``SFTConfig``/``ModelConfig`` argument such as
    ``{"warmup_ratio": 0.1}``; torchtune: a config key such as ``{"optimizer.weight_decay":
    0.01}``), checked at submit where the engine's names are known."""

    learning_rate: float | None = None
    max_steps: int | None = None
    gradient_accumulation_steps: int | None = None
    max_seq_len: int | None = None
    device: str | None = None
    save_steps: int | None = None
    seed: int | None = None
    overrides: dict[str, Any] | None = None


@dataclass
class _TorchTuneFields:
    """Upstream's ``TorchTuneConfig`` fields, in upstream's order."""

    dtype: DataType | None = None
    batch_size: int | None = None
    epochs: int | None = None
    loss: Loss | None = None
    num_nodes: int | None = None
    peft_config: LoraConfig | None = None
    dataset_preprocess_config: TorchTuneInstructDataset | None = None
    resources_per_node: dict[str, Any] | None = None


@dataclass
class TorchTuneConfig(EngineSettings, _TorchTuneFields):
    """Parameters of the built-in torchtune fine-tuning trainer: upstream's fields in upstream's
    order (call-compatible with kubeflow 0.5), then ``EngineSettings``."""


@dataclass
class PreferenceDataset(_DatasetPreprocessing):
    """Preprocessing of a preference data set: ``prompt``, ``chosen`` and ``rejected`` columns
    (each text, or a list of messages), mapped with ``column_map`` (e.g. ``{"chosen":
    "better"}``); a prompt and completions given as text are rendered with the model's chat
    template as a user turn and assistant answers."""


@dataclass
class DPO:
    """Direct preference optimisation (TRL's ``DPOTrainer``) on chosen/rejected pairs.

    ``beta``: how far the policy may move from the reference (TRL's default 0.1).
    ``loss_type``: TRL's DPO loss (``sigmoid``, ``ipo``, ``hinge``...; default ``sigmoid``).
    ``reference_model``: True keeps the reference while training (full fine-tuning: a frozen
    copy of the initial model; LoRA: the base model with the adapter switched off, no copy);
    False computes the reference's log-probabilities once before training and holds no
    reference model while training."""

    beta: float | None = None
    loss_type: str | None = None
    reference_model: bool = True


@dataclass
class KTO:
    """Kahneman-Tversky optimisation (TRL's ``KTOTrainer``): each pair's chosen completion is a
    desirable example and its rejected one an undesirable one, weighted by
    ``desirable_weight`` and ``undesirable_weight``; ``beta`` as in ``DPO``."""

    beta: float | None = None
    desirable_weight: float | None = None
    undesirable_weight: float | None = None


@dataclass
class ORPO:
    """Odds-ratio preference optimisation (TRL's experimental ``ORPOTrainer``) on
    chosen/rejected pairs: supervised loss on the chosen answer plus ``beta`` times a penalty on
    the odds of the rejected one (TRL's default 0.1); no reference model. Experimental: TRL
    ships it under ``trl.experimental``, which may change without notice."""

    beta: float | None = None


@dataclass
class PromptDataset(_DatasetPreprocessing):
    """Preprocessing of a prompt data set (GRPO): a ``prompt`` column (text, or a list of
    messages) and any other columns the reward functions read (``answer``), mapped with
    ``column_map``."""


@dataclass
class ExactMatchReward:
    """Reward 1.0 for a completion equal to the record's ``column`` (spaces around either
    ignored), else 0.0."""

    column: str = "answer"
    weight: float = 1.0


@dataclass
class RegexReward:
    """Reward 1.0 for a completion that ``pattern`` (a Python regular expression) matches
    whole (spaces around it ignored), else 0.0."""

    pattern: str
    weight: float = 1.0


@dataclass
class LengthReward:
    """Reward 1.0 for a completion of ``target`` characters (spaces around it ignored), falling
    linearly to 0.0 at no characters and at twice the target."""

    target: int
    weight: float = 1.0


@dataclass
class FunctionReward:
    """A reward function of yours, sent like a ``CustomTrainer``'s function (its source; import
    what it needs inside it): called with ``prompts``, ``completions`` (text) and every other
    column of the data set as keyword arguments, a list each, it returns one number per
    completion."""

    func: Callable[..., list[float]]
    weight: float = 1.0


@dataclass
class GRPO:
    """Group relative policy optimisation (TRL's ``GRPOTrainer``): for each prompt the model
    writes ``num_generations`` completions (at most ``max_new_tokens`` tokens, sampled at
    ``temperature``), scored by ``rewards`` (their weighted sum), and learns from each one's
    reward relative to its group's; ``beta`` weighs a KL penalty to the initial model (TRL's
    default 0: none, and no reference model)."""

    rewards: list[ExactMatchReward | RegexReward | LengthReward | FunctionReward]
    num_generations: int | None = None
    max_new_tokens: int | None = None
    temperature: float | None = None
    beta: float | None = None


@dataclass
class Distillation:
    """Knowledge distillation (TRL's ``DistillationTrainer``, on-policy as in generalized
    knowledge distillation): the student (the job's model) writes completions to the prompts
    of a ``PromptDataset`` (at most ``max_new_tokens`` tokens, at ``temperature``) and learns
    the teacher's next-token distribution on them, under a generalized Jensen-Shannon
    divergence (``beta``: 0 forward KL, 1 reverse KL; TRL's default 0.5). ``teacher`` is a
    model initializer, fetched by the trainer's main rank before training; it must share the
    student's tokenizer."""

    teacher: HuggingFaceModelInitializer | S3ModelInitializer
    beta: float | None = None
    temperature: float | None = None
    max_new_tokens: int | None = None


@dataclass
class QAT:
    """Quantization-aware training with torchao around the job's supervised fine-tuning: the
    model's linear layers train fake-quantized to ``scheme``, then are converted to it, and the
    job writes the converted model (``training.engines.qat_model.load_quantized`` loads it).
    ``scheme``: ``int8-dynamic-act-int4-weight`` (int8 activations quantized per token at run
    time, int4 weights) or ``int4-weight-only``; ``group_size``: how many weights of a row share
    one scale (it must divide each linear layer's input size)."""

    scheme: str = "int8-dynamic-act-int4-weight"
    group_size: int = 32


@dataclass
class _TRLFields:
    """The fields of ``TRLConfig`` before ``EngineSettings``; upstream's names where
    ``TorchTuneConfig`` has the same setting."""

    num_nodes: int | None = None
    resources_per_node: dict[str, Any] | None = None
    dtype: DataType | None = None
    batch_size: int | None = None
    epochs: int | None = None
    peft_config: LoraConfig | None = None
    dataset_preprocess_config: TorchTuneInstructDataset | ChatDataset | PreferenceDataset | None = (
        None
    )
    method: DPO | KTO | ORPO | None = None
    quantization_aware: QAT | None = None
    gems_kernels: bool = False


@dataclass
class TRLConfig(EngineSettings, _TRLFields):
    """Parameters of the built-in TRL trainer (fine-tuning of any Hugging Face causal LM, full or
    LoRA): ``method`` picks the training method (unset: supervised fine-tuning; ``DPO``,
    ``KTO``, ``ORPO``, ``GRPO``, ``Distillation``), ``batch_size`` per device, ``peft_config``
    turns LoRA on (its ``lora_attn_modules`` are the model's module names; torchtune's
    ``output_proj`` is read as ``o_proj``), ``dataset_preprocess_config`` says the data set's
    format (unset: found from its columns; ``PreferenceDataset`` for DPO, KTO and ORPO,
    ``PromptDataset`` for GRPO and distillation), ``gems_kernels`` trains a Llama, Qwen2 or
    Mistral on gems' fused kernels (``gems_kernels.fused.patch_hf_model``)."""


@dataclass
class BuiltinTrainer:
    """A trainer whose logic ships in the runtime; only its parameters are set. The runtime's
    framework label names the engine that takes ``config`` (``torchtune``, ``trl``)."""

    config: TorchTuneConfig | TRLConfig


TORCH_TUNE = "torchtune"


class TrainerType(Enum):
    """Which kind of trainer a runtime takes."""

    CUSTOM_TRAINER = CustomTrainer.__name__
    BUILTIN_TRAINER = BuiltinTrainer.__name__


class RuntimeKind(Enum):
    """Kind of a training runtime object."""

    CLUSTER_TRAINING_RUNTIME = constants.CLUSTER_TRAINING_RUNTIME_KIND
    TRAINING_RUNTIME = constants.TRAINING_RUNTIME_KIND


@dataclass
class RuntimeTrainer:
    """The trainer of a runtime: framework, image, nodes, devices and entrypoint."""

    trainer_type: TrainerType
    framework: str
    image: str
    num_nodes: int = 1
    device: str = constants.UNKNOWN
    device_count: str = constants.UNKNOWN
    __command: tuple[str, ...] = field(init=False, repr=False, default=constants.DEFAULT_COMMAND)

    @property
    def command(self) -> tuple[str, ...]:
        """The entrypoint a CustomTrainer's function is wrapped in."""
        return self.__command

    def set_command(self, command: tuple[str, ...]) -> None:
        """Set the entrypoint."""
        self.__command = command


@dataclass
class Runtime:
    """A training runtime (ClusterTrainingRuntime or TrainingRuntime)."""

    name: str
    trainer: RuntimeTrainer
    kind: RuntimeKind
    pretrained_model: str | None = None


@dataclass
class Step:
    """One step of a TrainJob: an initializer, the launcher, or a training node."""

    name: str
    status: str | None
    pod_name: str
    device: str = constants.UNKNOWN
    device_count: str = constants.UNKNOWN


@dataclass
class TrainerStatus:
    """Progress that training code reports with ``update_trainjob_status``."""

    progress_percentage: int | None = None
    estimated_remaining_seconds: int | None = None
    metrics: dict[str, str] = field(default_factory=dict)
    last_updated_time: datetime | None = None


@dataclass
class CheckpointStatus:
    """What the job's ``trainer_sdk.checkpoint`` reported: the latest complete checkpoint's
    step and commit time, the restart attempt running now (0: the first run) and the step it
    resumed from (None: it started fresh)."""

    step: int | None = None
    saved_at: datetime | None = None
    attempt: int = 0
    resumed_from_step: int | None = None

    def age_seconds(self, now: datetime | None = None) -> float | None:
        """Seconds since the latest checkpoint was committed."""
        if self.saved_at is None:
            return None
        return ((now or datetime.now(timezone.utc)) - self.saved_at).total_seconds()


@dataclass
class TrainJob:
    """A TrainJob as the SDK shows it."""

    name: str
    runtime: Runtime
    steps: list[Step]
    num_nodes: int
    creation_timestamp: datetime
    status: str = constants.UNKNOWN
    trainer_status: TrainerStatus | None = None
    message: str | None = None
    checkpoint: CheckpointStatus | None = None
    gems_kernels: bool = False  # its ranks run under gems_kernels.enable() (TRAINER_GEMS=1)
    # A BuiltinTrainer job's fine-tuned model (model/, and adapter/ after LoRA): a directory on
    # this machine (local backend) or pvc://CLAIM/PATH (a cluster).
    output: str | None = None


@dataclass
class Event:
    """An event about a TrainJob or one of its objects."""

    involved_object_kind: str
    involved_object_name: str
    message: str
    reason: str
    event_time: datetime


@dataclass
class BaseInitializer(abc.ABC):
    """Base of the data set and model initializers."""

    storage_uri: str


def _require_scheme(storage_uri: str, scheme: str) -> None:
    if not storage_uri.startswith(f"{scheme}://"):
        raise ValueError(f"storage_uri must start with '{scheme}://', got {storage_uri}")


def _require_huggingface_repo(storage_uri: str, what: str) -> None:
    """``hf://<repo>``, ``hf://<user>/<repo>[/path]`` or, as upstream accepts,
    ``<user>/<repo>[/path]``: unscoped repositories (``hf://gpt2``) have no owner. A path on this
    machine (``./data.jsonl``, ``/models/m``, ``file:///...``; the local backend's initializer
    copies it) and a claim's (``pvc://<claim>/<path>``) are also accepted."""
    if storage.local_path(storage_uri) is not None:
        return
    parsed = urlparse(storage_uri)
    if parsed.scheme:  # a pvc:// claim's name and path are checked by the runtime
        repo = parsed.netloc if parsed.scheme in ("hf", "pvc") else ""
    else:
        owner, _, path = storage_uri.partition("/")
        repo = path.strip("/") and owner
    if not repo:
        raise ValueError(
            f"storage_uri: expected 'hf://<{what}>', 'hf://<user>/<{what}>', "
            f"'<user>/<{what}>', a path ('./{what}', '/{what}', 'file:///{what}') or "
            f"'pvc://<claim>/<{what}>', got {storage_uri}"
        )


@dataclass
class HuggingFaceDatasetInitializer(BaseInitializer):
    """Download a data set from the HuggingFace Hub (``hf://<dataset>``,
    ``hf://<user>/<dataset>`` or ``<user>/<dataset>``), or copy one from a path on this machine
    (``./data.jsonl``, ``file:///data/dir``; local backend) or a claim (``pvc://claim/path``)."""

    ignore_patterns: list[str] | None = None
    access_token: str | None = None

    def __post_init__(self) -> None:
        _require_huggingface_repo(self.storage_uri, "dataset")


@dataclass
class S3DatasetInitializer(BaseInitializer):
    """Download a data set from S3-compatible storage (``s3://bucket/path``)."""

    ignore_patterns: list[str] | None = None
    endpoint: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    region: str | None = None
    role_arn: str | None = None

    def __post_init__(self) -> None:
        _require_scheme(self.storage_uri, "s3")


@dataclass
class DataCacheInitializer(BaseInitializer):
    """Stream a data set through the distributed data cache (``cache://<schema>/<table>``)."""

    metadata_loc: str
    num_data_nodes: int
    head_cpu: str | None = None
    head_mem: str | None = None
    worker_cpu: str | None = None
    worker_mem: str | None = None
    iam_role: str | None = None

    def __post_init__(self) -> None:
        if self.num_data_nodes <= 1:
            raise ValueError(f"num_data_nodes must be greater than 1, got {self.num_data_nodes}")
        _require_scheme(self.storage_uri, "cache")
        if len(self.storage_uri[len("cache://") :].split("/")) != 2:
            raise ValueError(
                "storage_uri must be in format 'cache://<SCHEMA_NAME>/<TABLE_NAME>', "
                f"got {self.storage_uri}"
            )


@dataclass
class HuggingFaceModelInitializer(BaseInitializer):
    """Download a model from the HuggingFace Hub (``hf://<model>``, ``hf://<user>/<model>`` or
    ``<user>/<model>``), or copy a Hugging Face model directory from a path on this machine
    (local backend) or a claim (``pvc://claim/path``)."""

    ignore_patterns: list[str] | None = field(
        default_factory=lambda: list(constants.INITIALIZER_DEFAULT_IGNORE_PATTERNS)
    )
    access_token: str | None = None

    def __post_init__(self) -> None:
        _require_huggingface_repo(self.storage_uri, "model")


@dataclass
class S3ModelInitializer(BaseInitializer):
    """Download a model from S3-compatible storage (``s3://bucket/path``)."""

    ignore_patterns: list[str] | None = field(
        default_factory=lambda: list(constants.INITIALIZER_DEFAULT_IGNORE_PATTERNS)
    )
    endpoint: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    region: str | None = None
    role_arn: str | None = None

    def __post_init__(self) -> None:
        _require_scheme(self.storage_uri, "s3")


@dataclass
class Initializer:
    """Data set and model initializers that run before training."""

    dataset: HuggingFaceDatasetInitializer | S3DatasetInitializer | DataCacheInitializer | None = (
        None
    )
    model: HuggingFaceModelInitializer | S3ModelInitializer | None = None


@dataclass
class TrainJobTemplate:
    """Arguments of ``TrainerClient.train``, to be reused: ``client.train(**template)``."""

    trainer: CustomTrainer
    runtime: str | Runtime | None = None
    initializer: Initializer | None = None

    def keys(self) -> list[str]:
        """The keyword names, so that ``**template`` works."""
        return ["trainer", "runtime", "initializer"]

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)
