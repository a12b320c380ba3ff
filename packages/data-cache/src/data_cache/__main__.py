"""``python -m data_cache`` runs the command line."""

from data_cache.cli import main

main()
