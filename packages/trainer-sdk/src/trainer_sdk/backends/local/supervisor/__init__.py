"""The job's supervisor and guardian processes: they execute a local plan as pods of processes
(``python -m trainer_sdk.backends.local.supervisor JOB_DIR``) and report what a JobSet controller
would. Importing this package imports nothing: the supervisor starts fast."""
