"""``python -m trainer_sdk`` runs the ``trainer`` command line."""

from trainer_sdk.cli import main

main()
