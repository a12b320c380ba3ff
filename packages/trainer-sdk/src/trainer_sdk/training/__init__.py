"""What runs inside a job's ranks: ``log_metrics``, ``update_trainjob_status``, the reports they
send to the job's status and the entrypoint around every ``CustomTrainer`` rank. Users import the
public names from ``trainer_sdk``; checkpoints are ``trainer_sdk.checkpoint``."""
