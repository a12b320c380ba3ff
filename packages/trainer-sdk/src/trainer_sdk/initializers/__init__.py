"""Data set and model initializers the local backend runs for ``dataset-initializer`` and
``model-initializer`` containers that have no command (their image's entrypoint upstream).

``python -m trainer_sdk.initializers dataset|model TARGET`` reads ``STORAGE_URI`` and the
optional settings (``ACCESS_TOKEN``, ``IGNORE_PATTERNS``, ``ENDPOINT``, ``ACCESS_KEY_ID``,
``SECRET_ACCESS_KEY``, ``REGION``) from the environment, as the upstream initializers do.
"""

from trainer_sdk.initializers.huggingface import download_huggingface
from trainer_sdk.initializers.local import copy_local
from trainer_sdk.initializers.s3 import download_s3

__all__ = ["copy_local", "download_huggingface", "download_s3"]
