"""The runtime framework: TrainJob + runtime + observed objects -> Plan (pure)."""
