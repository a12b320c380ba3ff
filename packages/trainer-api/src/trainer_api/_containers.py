"""core/v1 Container and what it holds: ports, resources, mounts, probes, security context."""

from __future__ import annotations

from pydantic import Field

from trainer_api._base import ApiModel
from trainer_api._env import EnvFromSource, EnvVar
from trainer_api._types import Int32, Int64, IntOrString, QuantityValue

__all__ = [
    "AppArmorProfile",
    "Capabilities",
    "Container",
    "ContainerPort",
    "ContainerResizePolicy",
    "ContainerRestartRule",
    "ContainerRestartRuleOnExitCodes",
    "EphemeralContainer",
    "ExecAction",
    "GRPCAction",
    "HTTPGetAction",
    "HTTPHeader",
    "Lifecycle",
    "LifecycleHandler",
    "Probe",
    "ResourceClaim",
    "ResourceRequirements",
    "SELinuxOptions",
    "SeccompProfile",
    "SecurityContext",
    "SleepAction",
    "TCPSocketAction",
    "VolumeDevice",
    "VolumeMount",
    "WindowsSecurityContextOptions",
]


class ContainerPort(ApiModel):
    """A port a container exposes."""

    container_port: Int32
    name: str | None = None
    protocol: str | None = None
    host_ip: str | None = Field(default=None, alias="hostIP")
    host_port: Int32 | None = None


class ResourceClaim(ApiModel):
    """A container's use of a pod resource claim."""

    name: str
    request: str | None = None


class ResourceRequirements(ApiModel):
    """Resource limits and requests; quantities are kept as written (see ``Quantity``)."""

    limits: dict[str, QuantityValue] | None = None
    requests: dict[str, QuantityValue] | None = None
    claims: list[ResourceClaim] | None = None


class VolumeMount(ApiModel):
    """A volume mounted into a container."""

    name: str
    mount_path: str
    read_only: bool | None = None
    recursive_read_only: str | None = None
    sub_path: str | None = None
    sub_path_expr: str | None = None
    mount_propagation: str | None = None


class VolumeDevice(ApiModel):
    """A raw block volume mapped into a container."""

    name: str
    device_path: str


class ExecAction(ApiModel):
    """Run a command in the container."""

    command: list[str] | None = None


class HTTPHeader(ApiModel):
    """A header of an HTTP probe."""

    name: str
    value: str


class HTTPGetAction(ApiModel):
    """An HTTP GET against the container."""

    port: IntOrString
    path: str | None = None
    host: str | None = None
    scheme: str | None = None
    http_headers: list[HTTPHeader] | None = None


class TCPSocketAction(ApiModel):
    """Open a TCP connection to the container."""

    port: IntOrString
    host: str | None = None


class GRPCAction(ApiModel):
    """A gRPC health check against the container."""

    port: Int32
    service: str | None = None


class SleepAction(ApiModel):
    """Sleep for a while."""

    seconds: Int64


class LifecycleHandler(ApiModel):
    """What a lifecycle hook does."""

    exec: ExecAction | None = None
    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    sleep: SleepAction | None = None


class Lifecycle(ApiModel):
    """Hooks run after a container starts and before it stops."""

    post_start: LifecycleHandler | None = None
    pre_stop: LifecycleHandler | None = None
    stop_signal: str | None = None


class Probe(ApiModel):
    """A liveness, readiness or startup probe."""

    exec: ExecAction | None = None
    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    grpc: GRPCAction | None = None
    initial_delay_seconds: Int32 | None = None
    timeout_seconds: Int32 | None = None
    period_seconds: Int32 | None = None
    success_threshold: Int32 | None = None
    failure_threshold: Int32 | None = None
    termination_grace_period_seconds: Int64 | None = None


class Capabilities(ApiModel):
    """Linux capabilities added to and dropped from a container."""

    add: list[str] | None = None
    drop: list[str] | None = None


class SELinuxOptions(ApiModel):
    """An SELinux label."""

    level: str | None = None
    role: str | None = None
    type: str | None = None
    user: str | None = None


class SeccompProfile(ApiModel):
    """A seccomp profile."""

    type: str
    localhost_profile: str | None = None


class AppArmorProfile(ApiModel):
    """An AppArmor profile."""

    type: str
    localhost_profile: str | None = None


class WindowsSecurityContextOptions(ApiModel):
    """Windows-specific security options."""

    gmsa_credential_spec: str | None = None
    gmsa_credential_spec_name: str | None = None
    host_process: bool | None = None
    run_as_user_name: str | None = None


class SecurityContext(ApiModel):
    """Security options of a container."""

    allow_privilege_escalation: bool | None = None
    app_armor_profile: AppArmorProfile | None = None
    capabilities: Capabilities | None = None
    privileged: bool | None = None
    proc_mount: str | None = None
    read_only_root_filesystem: bool | None = None
    run_as_group: Int64 | None = None
    run_as_non_root: bool | None = None
    run_as_user: Int64 | None = None
    se_linux_options: SELinuxOptions | None = Field(default=None, alias="seLinuxOptions")
    seccomp_profile: SeccompProfile | None = None
    windows_options: WindowsSecurityContextOptions | None = None


class ContainerResizePolicy(ApiModel):
    """Whether resizing a resource restarts the container."""

    resource_name: str
    restart_policy: str


class ContainerRestartRuleOnExitCodes(ApiModel):
    """Exit codes a container restart rule matches."""

    operator: str
    values: list[Int32] | None = None


class ContainerRestartRule(ApiModel):
    """A rule deciding whether an exited container restarts."""

    action: str
    exit_codes: ContainerRestartRuleOnExitCodes | None = None


class Container(ApiModel):
    """core/v1 Container."""

    name: str
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    working_dir: str | None = None
    ports: list[ContainerPort] | None = None
    env_from: list[EnvFromSource] | None = None
    env: list[EnvVar] | None = None
    resources: ResourceRequirements | None = None
    resize_policy: list[ContainerResizePolicy] | None = None
    restart_policy: str | None = None
    restart_policy_rules: list[ContainerRestartRule] | None = None
    volume_mounts: list[VolumeMount] | None = None
    volume_devices: list[VolumeDevice] | None = None
    liveness_probe: Probe | None = None
    readiness_probe: Probe | None = None
    startup_probe: Probe | None = None
    lifecycle: Lifecycle | None = None
    termination_message_path: str | None = None
    termination_message_policy: str | None = None
    image_pull_policy: str | None = None
    security_context: SecurityContext | None = None
    stdin: bool | None = None
    stdin_once: bool | None = None
    tty: bool | None = None


class EphemeralContainer(Container):
    """core/v1 EphemeralContainer: a debugging container added to a running pod."""

    target_container_name: str | None = None
