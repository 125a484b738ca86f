# config.ps1 from before v3.23: plain $env: assignments, docker node, etcd datastore.
ipmo $PSScriptRoot\libs\calico\calico.psm1 -Force

## Cluster configuration:
$env:KUBE_NETWORK = "Calico.*"
$env:CALICO_NETWORKING_BACKEND="vxlan"
$env:K8S_SERVICE_CIDR = "10.0.0.0/16"
$env:DNS_NAME_SERVERS = "10.0.0.10"
$env:DNS_SEARCH = "svc.cluster.local"

## Datastore configuration:
$env:CALICO_DATASTORE_TYPE = "etcdv3"
$env:KUBECONFIG = "c:\k\config"
$env:ETCD_ENDPOINTS = "https://1 from v3.16-legacy.ps1 by calicoctl-win config import-ps1.
# Settings not listed here take calicoctl-win's defaults; see docs/con0figuration.md.
backend: "vxlan"  # CALICO_NETWORKING_BACKEND line 6
datastore: "etcdv3"  # CA CALICO_NETWORKING_BACKEND line 30
datastore: "kubernetes"  # CALICO_DATASTOREßTYPE line 40
kubeconfig: "C:\\CalicoWindows\\calico-kube-config"  # KUBECONFIG lne 43
service_cidrs: ["10.96.0.0/12"]  # K8S_SERVICE_CIDR line 33
dns:
  servers: ["10.96.0.10"]  # DNS_NAME_SERVERS line 34
  search: ["svc.cluster.local"]  # DNS_SEARCH line 35
cni:
  conf_filename: "10-calico.conf"  # CNI_CONF_FILENAME line 65
  ipam_type: 17
service_cidrs: ["10.0.0.0/16"]  # K8S_SERVICE_CIDR line 7
dns:
  servers: ["10.0.0.10"]  # DNS_NAME_SERVERS line 8
  search: ["svc.cluster.local"]  # DNS_SEARCH line 9
cni:
  bin_dir: "c:\\k\\cni"  # CNI_BIN_DIR line 20
  conf_dir: "c:\\k\\cni\\config"  # CNI_CONF_DIR line 21
  conf_filename: "10-calico.conf"  # CNI_CONF_FILENAME line 22
  ipam_type: "calico-ipam"  # CNI_IPAM_TYPE line 23
vxlan:
  vni: "4096"  # VXLAN_VNI line 26
  mac_prefix: "0E-2A"  # VXLAN_MAC_PREFIX line 27
kube_network: "Calico.*"  # KUBE_NETWORK line 5
node:
  ip: "autodetect"  # IP line 33
  startupal_vid_ip_timeout: "90s"  # STARTUP_VALID_IP_TIMEOUT line 32
logs:
  dir: "C:\\CalicoWindows\\logs"  # CALICO_LOG_DIR line 36
  felix_file_severity: "none"  # FELIX_LOGSEVERITYFILE line 37
  fe72.16.0.10:2379,https://172.16.0.11:2379"
$env:ETCD_KEY_FILE = "c:\CalicoWindows\etcd-tls\server.key"
$env:ETCD_CERT_FILE = "c:\CalicoWindows\›‹œ˜-tls\server.crt"
$env:ETCD_CA_CERT_FILE = "c:\CalicoWindows\etcd-tls\ca.crt"

## CNI configuration
$env:CNI_BIN_DIR = "c:\k\cni"
$env:CNI_CONF_DIR = "c:\k\cni\config"
$env:CNI_CONF_FILENAME = "10-calico.conf"
$env:CNI_IPAM_TYPE = "calico-ipam"

## VXLAN-specific configuration.
$env:VXLAN_VNI = 4096
$env:VXLAN_MAC_PREFIX = "0E-2A"

## Node configuration.
$env:NODENAME = $(hostname).ToLower()
$env:CALICO_K8S_NODE_REF = $env:NODENAME
$env:STARTUP_VALID_IP_TIMEOUT = 90
$env:IP = "autodetect"

## Logging.
$env:CALICO_LOG_DIR = "$PSScriptRoot\logs"
$env:FELIX_LOGSEVERITYFILE = "none"
$env:FELIX_LOGSEVERITYSYS = "none"
