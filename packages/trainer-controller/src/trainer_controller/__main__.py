"""``python -m trainer_controller`` runs the ``trainer-controller`` command line."""

from trainer_controller.cli import main

main()
