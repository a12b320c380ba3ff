"""What runs inside a local pod, before or instead of the user's command (standard library only,
started as scripts by path): the private namespaces' setup and the one-process ``torchrun``."""
