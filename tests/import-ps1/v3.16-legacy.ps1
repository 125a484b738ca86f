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
$env:ETCD_ENDPOINTS = "https://172.16.0.10:2379,https://172.16.0.11:2379"
$env:ETCD_KEY_FILE = "c:\CalicoWindows\etcd-tls\server.key"
$env:ETCD_CERT_FILE = "c:\CalicoWindows\etcd-tls\server.crt"
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
