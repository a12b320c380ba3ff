"""The client's side of a local job: a TrainJob built by the runtime framework and its JobSet
compiled, once at submit, into the local plan (``plan.py``) that the job's supervisor executes."""
