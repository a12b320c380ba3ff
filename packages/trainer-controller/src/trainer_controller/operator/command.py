"""``trainer-controller run``: the operator's command, added to the package CLI group."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from pathlib import Path
from typing import NoReturn

import aiohttp
import click

from trainer_controller.operator.config import ConfigError, OperatorConfig, load_config
from trainer_controller.operator.credentials import Credentials, CredentialsError, load_credentials
from trainer_controller.operator.leader import LostLeadershipError
from trainer_controller.operator.logs import configure_logging
from trainer_controller.operator.runner import Operator

__all__ = ["run"]

_logger = logging.getLogger("trainer_controller")


def _exit_with(message: str) -> NoReturn:
    """One error record in the configured log format (a JSON line by default), then exit 1."""
    _logger.error(message)
    sys.exit(1)


async def _serve(config: OperatorConfig, credentials: Credentials) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await Operator(config, credentials).run(stop)


@click.command(name="run")
@click.option(
    "--kubeconfig",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Cluster to run against (default: in-cluster, then $KUBECONFIG or ~/.kube/config).",
)
@click.option(
    "--namespace", "namespaces", multiple=True, help="Watch only this namespace (repeatable)."
)
@click.option("--no-webhooks", is_flag=True, help="Serve no webhooks and manage no certificates.")
@click.option(
    "--config",
    "config_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="YAML configuration file; flags override it.",
)
@click.option("--concurrency", type=click.IntRange(min=1), help="Reconcile workers.")
@click.option("--health-port", type=click.IntRange(0, 65535))
@click.option("--metrics-port", type=click.IntRange(0, 65535))
@click.option("--webhook-port", type=click.IntRange(0, 65535))
@click.option("--progress-port", type=click.IntRange(0, 65535))
@click.option(
    "--cert-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Serve the certificate mounted here (cert-manager: tls.crt, tls.key, ca.crt).",
)
@click.option(
    "--no-leader-election",
    is_flag=True,
    help="Reconcile without taking the Lease (one replica only).",
)
@click.option("--log-format", type=click.Choice(["json", "text"]))
def run(
    kubeconfig: Path | None,
    namespaces: tuple[str, ...],
    no_webhooks: bool,
    config_file: Path | None,
    concurrency: int | None,
    health_port: int | None,
    metrics_port: int | None,
    webhook_port: int | None,
    progress_port: int | None,
    cert_dir: Path | None,
    no_leader_election: bool,
    log_format: str | None,
) -> None:
    """Run the operator against the cluster of KUBECONFIG."""
    try:
        config = load_config(config_file).replace(
            namespaces=namespaces or None,
            webhooks=False if no_webhooks else None,
            concurrency=concurrency,
            health_port=health_port,
            metrics_port=metrics_port,
            webhook_port=webhook_port,
            progress_port=progress_port,
            cert_dir=str(cert_dir) if cert_dir else None,
            leader_election=False if no_leader_election else None,
            log_format=log_format,
        )
    except ConfigError as error:
        raise click.BadParameter(str(error), param_hint="--config") from error
    configure_logging(config.log_level, config.log_format)
    try:
        credentials = load_credentials(str(kubeconfig) if kubeconfig else None)
    except CredentialsError as error:
        _exit_with(f"cannot start: {error}")
    try:
        asyncio.run(_serve(config, credentials))
    except aiohttp.ClientConnectionError as error:
        _exit_with(
            f"cannot reach the API server {credentials.server}: {error}; check the server of "
            "the kubeconfig's current context and that the cluster is up"
        )
    except LostLeadershipError as error:
        click.echo(f"error: {error}; exiting so that a standby takes over", err=True)
        sys.exit(1)
