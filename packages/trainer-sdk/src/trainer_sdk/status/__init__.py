"""Manifests and status documents read as the SDK's types (pure, every backend): jobs, runtimes,
failures, package installs."""
