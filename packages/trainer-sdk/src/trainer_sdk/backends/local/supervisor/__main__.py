"""``python -m trainer_sdk.backends.local.supervisor JOB_DIR``: the process that runs one job."""

import sys

from trainer_sdk.backends.local.supervisor.supervisor import main

sys.exit(main())
