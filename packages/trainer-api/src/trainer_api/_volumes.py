"""core/v1 Volume with every volume source, and PersistentVolumeClaims."""

from __future__ import annotations

from pydantic import Field

from trainer_api._base import ApiModel
from trainer_api._env import LocalObjectReference, ObjectFieldSelector, ResourceFieldSelector
from trainer_api._meta import LabelSelector, ObjectMeta, Time
from trainer_api._types import Int32, Int64, QuantityValue

__all__ = [
    "AWSElasticBlockStoreVolumeSource",
    "AzureDiskVolumeSource",
    "AzureFileVolumeSource",
    "CSIVolumeSource",
    "CephFSVolumeSource",
    "CinderVolumeSource",
    "ClusterTrustBundleProjection",
    "ConfigMapProjection",
    "ConfigMapVolumeSource",
    "DownwardAPIProjection",
    "DownwardAPIVolumeFile",
    "DownwardAPIVolumeSource",
    "EmptyDirVolumeSource",
    "EphemeralVolumeSource",
    "FCVolumeSource",
    "FlexVolumeSource",
    "FlockerVolumeSource",
    "GCEPersistentDiskVolumeSource",
    "GitRepoVolumeSource",
    "GlusterfsVolumeSource",
    "HostPathVolumeSource",
    "ISCSIVolumeSource",
    "ImageVolumeSource",
    "KeyToPath",
    "ModifyVolumeStatus",
    "NFSVolumeSource",
    "PersistentVolumeClaim",
    "PersistentVolumeClaimCondition",
    "PersistentVolumeClaimSpec",
    "PersistentVolumeClaimStatus",
    "PersistentVolumeClaimTemplate",
    "PersistentVolumeClaimVolumeSource",
    "PhotonPersistentDiskVolumeSource",
    "PodCertificateProjection",
    "PortworxVolumeSource",
    "ProjectedVolumeSource",
    "QuobyteVolumeSource",
    "RBDVolumeSource",
    "ScaleIOVolumeSource",
    "SecretProjection",
    "SecretVolumeSource",
    "ServiceAccountTokenProjection",
    "StorageOSVolumeSource",
    "TypedLocalObjectReference",
    "TypedObjectReference",
    "Volume",
    "VolumeProjection",
    "VolumeResourceRequirements",
    "VsphereVirtualDiskVolumeSource",
]


class KeyToPath(ApiModel):
    """A key of a ConfigMap or Secret and the file it becomes."""

    key: str
    path: str
    mode: Int32 | None = None


class DownwardAPIVolumeFile(ApiModel):
    """A file holding a pod field or a container resource."""

    path: str
    field_ref: ObjectFieldSelector | None = None
    resource_field_ref: ResourceFieldSelector | None = None
    mode: Int32 | None = None


class EmptyDirVolumeSource(ApiModel):
    """A scratch directory that lives as long as the pod."""

    medium: str | None = None
    size_limit: QuantityValue | None = None


class HostPathVolumeSource(ApiModel):
    """A directory of the node."""

    path: str
    type: str | None = None


class ConfigMapVolumeSource(ApiModel):
    """A ConfigMap's keys as files."""

    name: str | None = None
    items: list[KeyToPath] | None = None
    default_mode: Int32 | None = None
    optional: bool | None = None


class SecretVolumeSource(ApiModel):
    """A Secret's keys as files."""

    secret_name: str | None = None
    items: list[KeyToPath] | None = None
    default_mode: Int32 | None = None
    optional: bool | None = None


class PersistentVolumeClaimVolumeSource(ApiModel):
    """A PersistentVolumeClaim in the pod's namespace."""

    claim_name: str
    read_only: bool | None = None


class DownwardAPIVolumeSource(ApiModel):
    """Pod fields and container resources as files."""

    items: list[DownwardAPIVolumeFile] | None = None
    default_mode: Int32 | None = None


class ClusterTrustBundleProjection(ApiModel):
    """ClusterTrustBundle certificates as a file."""

    path: str
    name: str | None = None
    signer_name: str | None = None
    label_selector: LabelSelector | None = None
    optional: bool | None = None


class ConfigMapProjection(ApiModel):
    """A ConfigMap in a projected volume."""

    name: str | None = None
    items: list[KeyToPath] | None = None
    optional: bool | None = None


class SecretProjection(ApiModel):
    """A Secret in a projected volume."""

    name: str | None = None
    items: list[KeyToPath] | None = None
    optional: bool | None = None


class DownwardAPIProjection(ApiModel):
    """Downward-API files in a projected volume."""

    items: list[DownwardAPIVolumeFile] | None = None


class PodCertificateProjection(ApiModel):
    """A pod certificate and key in a projected volume."""

    key_type: str
    signer_name: str
    certificate_chain_path: str | None = None
    credential_bundle_path: str | None = None
    key_path: str | None = None
    max_expiration_seconds: Int32 | None = None
    user_annotations: dict[str, str] | None = None


class ServiceAccountTokenProjection(ApiModel):
    """A service account token in a projected volume."""

    path: str
    audience: str | None = None
    expiration_seconds: Int64 | None = None


class VolumeProjection(ApiModel):
    """One source of a projected volume."""

    cluster_trust_bundle: ClusterTrustBundleProjection | None = None
    config_map: ConfigMapProjection | None = None
    downward_api: DownwardAPIProjection | None = Field(default=None, alias="downwardAPI")
    pod_certificate: PodCertificateProjection | None = None
    secret: SecretProjection | None = None
    service_account_token: ServiceAccountTokenProjection | None = None


class ProjectedVolumeSource(ApiModel):
    """Several sources in one directory."""

    sources: list[VolumeProjection] | None = None
    default_mode: Int32 | None = None


class TypedLocalObjectReference(ApiModel):
    """An object of any kind in the same namespace."""

    kind: str
    name: str
    api_group: str | None = None


class TypedObjectReference(ApiModel):
    """An object of any kind, possibly in another namespace."""

    kind: str
    name: str
    api_group: str | None = None
    namespace: str | None = None


class VolumeResourceRequirements(ApiModel):
    """Storage a claim requests."""

    limits: dict[str, QuantityValue] | None = None
    requests: dict[str, QuantityValue] | None = None


class PersistentVolumeClaimSpec(ApiModel):
    """What storage a claim asks for."""

    access_modes: list[str] | None = None
    data_source: TypedLocalObjectReference | None = None
    data_source_ref: TypedObjectReference | None = None
    resources: VolumeResourceRequirements | None = None
    selector: LabelSelector | None = None
    storage_class_name: str | None = None
    volume_attributes_class_name: str | None = None
    volume_mode: str | None = None
    volume_name: str | None = None


class PersistentVolumeClaimCondition(ApiModel):
    """A condition of a claim."""

    type: str
    status: str
    last_probe_time: Time | None = None
    last_transition_time: Time | None = None
    message: str | None = None
    reason: str | None = None


class ModifyVolumeStatus(ApiModel):
    """The state of a volume attributes change."""

    status: str
    target_volume_attributes_class_name: str | None = None


class PersistentVolumeClaimStatus(ApiModel):
    """The observed state of a claim."""

    access_modes: list[str] | None = None
    allocated_resource_statuses: dict[str, str] | None = None
    allocated_resources: dict[str, QuantityValue] | None = None
    capacity: dict[str, QuantityValue] | None = None
    conditions: list[PersistentVolumeClaimCondition] | None = None
    current_volume_attributes_class_name: str | None = None
    modify_volume_status: ModifyVolumeStatus | None = None
    phase: str | None = None


class PersistentVolumeClaim(ApiModel):
    """A PersistentVolumeClaim, as a JobSet volume claim policy template."""

    api_version: str | None = None
    kind: str | None = None
    metadata: ObjectMeta | None = None
    spec: PersistentVolumeClaimSpec | None = None
    status: PersistentVolumeClaimStatus | None = None


class PersistentVolumeClaimTemplate(ApiModel):
    """The claim an ephemeral volume creates."""

    spec: PersistentVolumeClaimSpec
    metadata: ObjectMeta | None = None


class EphemeralVolumeSource(ApiModel):
    """A volume backed by a claim that lives as long as the pod."""

    volume_claim_template: PersistentVolumeClaimTemplate | None = None


class CSIVolumeSource(ApiModel):
    """A volume of a CSI driver."""

    driver: str
    fs_type: str | None = None
    node_publish_secret_ref: LocalObjectReference | None = None
    read_only: bool | None = None
    volume_attributes: dict[str, str] | None = None


class ImageVolumeSource(ApiModel):
    """An OCI image or artifact as a read-only volume."""

    reference: str | None = None
    pull_policy: str | None = None


class NFSVolumeSource(ApiModel):
    """An NFS export."""

    server: str
    path: str
    read_only: bool | None = None


class AWSElasticBlockStoreVolumeSource(ApiModel):
    """An AWS EBS disk."""

    volume_id: str = Field(alias="volumeID")
    fs_type: str | None = None
    partition: Int32 | None = None
    read_only: bool | None = None


class AzureDiskVolumeSource(ApiModel):
    """An Azure data disk."""

    disk_name: str
    disk_uri: str = Field(alias="diskURI")
    caching_mode: str | None = None
    fs_type: str | None = None
    kind: str | None = None
    read_only: bool | None = None


class AzureFileVolumeSource(ApiModel):
    """An Azure File share."""

    secret_name: str
    share_name: str
    read_only: bool | None = None


class CephFSVolumeSource(ApiModel):
    """A Ceph file system."""

    monitors: list[str]
    path: str | None = None
    read_only: bool | None = None
    secret_file: str | None = None
    secret_ref: LocalObjectReference | None = None
    user: str | None = None


class CinderVolumeSource(ApiModel):
    """An OpenStack Cinder volume."""

    volume_id: str = Field(alias="volumeID")
    fs_type: str | None = None
    read_only: bool | None = None
    secret_ref: LocalObjectReference | None = None


class FCVolumeSource(ApiModel):
    """A Fibre Channel volume."""

    fs_type: str | None = None
    lun: Int32 | None = None
    read_only: bool | None = None
    target_wwns: list[str] | None = Field(default=None, alias="targetWWNs")
    wwids: list[str] | None = None


class FlexVolumeSource(ApiModel):
    """A volume of a FlexVolume driver."""

    driver: str
    fs_type: str | None = None
    options: dict[str, str] | None = None
    read_only: bool | None = None
    secret_ref: LocalObjectReference | None = None


class FlockerVolumeSource(ApiModel):
    """A Flocker dataset."""

    dataset_name: str | None = None
    dataset_uuid: str | None = Field(default=None, alias="datasetUUID")


class GCEPersistentDiskVolumeSource(ApiModel):
    """A GCE persistent disk."""

    pd_name: str
    fs_type: str | None = None
    partition: Int32 | None = None
    read_only: bool | None = None


class GitRepoVolumeSource(ApiModel):
    """A git repository cloned into the volume."""

    repository: str
    directory: str | None = None
    revision: str | None = None


class GlusterfsVolumeSource(ApiModel):
    """A Glusterfs volume."""

    endpoints: str
    path: str
    read_only: bool | None = None


class ISCSIVolumeSource(ApiModel):
    """An iSCSI disk."""

    target_portal: str
    iqn: str
    lun: Int32
    chap_auth_discovery: bool | None = None
    chap_auth_session: bool | None = None
    fs_type: str | None = None
    initiator_name: str | None = None
    iscsi_interface: str | None = None
    portals: list[str] | None = None
    read_only: bool | None = None
    secret_ref: LocalObjectReference | None = None


class PhotonPersistentDiskVolumeSource(ApiModel):
    """A Photon Controller persistent disk."""

    pd_id: str = Field(alias="pdID")
    fs_type: str | None = None


class PortworxVolumeSource(ApiModel):
    """A Portworx volume."""

    volume_id: str = Field(alias="volumeID")
    fs_type: str | None = None
    read_only: bool | None = None


class QuobyteVolumeSource(ApiModel):
    """A Quobyte volume."""

    registry: str
    volume: str
    group: str | None = None
    read_only: bool | None = None
    tenant: str | None = None
    user: str | None = None


class RBDVolumeSource(ApiModel):
    """A Rados block device."""

    image: str
    monitors: list[str]
    fs_type: str | None = None
    keyring: str | None = None
    pool: str | None = None
    read_only: bool | None = None
    secret_ref: LocalObjectReference | None = None
    user: str | None = None


class ScaleIOVolumeSource(ApiModel):
    """A ScaleIO volume."""

    gateway: str
    system: str
    secret_ref: LocalObjectReference
    fs_type: str | None = None
    protection_domain: str | None = None
    read_only: bool | None = None
    ssl_enabled: bool | None = None
    storage_mode: str | None = None
    storage_pool: str | None = None
    volume_name: str | None = None


class StorageOSVolumeSource(ApiModel):
    """A StorageOS volume."""

    fs_type: str | None = None
    read_only: bool | None = None
    secret_ref: LocalObjectReference | None = None
    volume_name: str | None = None
    volume_namespace: str | None = None


class VsphereVirtualDiskVolumeSource(ApiModel):
    """A vSphere volume."""

    volume_path: str
    fs_type: str | None = None
    storage_policy_id: str | None = Field(default=None, alias="storagePolicyID")
    storage_policy_name: str | None = None


class Volume(ApiModel):
    """core/v1 Volume: a name and one source."""

    name: str
    empty_dir: EmptyDirVolumeSource | None = None
    host_path: HostPathVolumeSource | None = None
    config_map: ConfigMapVolumeSource | None = None
    secret: SecretVolumeSource | None = None
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    projected: ProjectedVolumeSource | None = None
    downward_api: DownwardAPIVolumeSource | None = Field(default=None, alias="downwardAPI")
    ephemeral: EphemeralVolumeSource | None = None
    csi: CSIVolumeSource | None = None
    image: ImageVolumeSource | None = None
    nfs: NFSVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None
    azure_disk: AzureDiskVolumeSource | None = None
    azure_file: AzureFileVolumeSource | None = None
    cephfs: CephFSVolumeSource | None = None
    cinder: CinderVolumeSource | None = None
    fc: FCVolumeSource | None = None
    flex_volume: FlexVolumeSource | None = None
    flocker: FlockerVolumeSource | None = None
    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    git_repo: GitRepoVolumeSource | None = None
    glusterfs: GlusterfsVolumeSource | None = None
    iscsi: ISCSIVolumeSource | None = None
    photon_persistent_disk: PhotonPersistentDiskVolumeSource | None = None
    portworx_volume: PortworxVolumeSource | None = None
    quobyte: QuobyteVolumeSource | None = None
    rbd: RBDVolumeSource | None = None
    scale_io: ScaleIOVolumeSource | None = Field(default=None, alias="scaleIO")
    storageos: StorageOSVolumeSource | None = None
    vsphere_volume: VsphereVirtualDiskVolumeSource | None = None
