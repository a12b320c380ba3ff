"""``python -m trainer_data_cache`` runs the command line."""

from trainer_data_cache.cli import main

main()
