# Calico for Windows configuration, as it ships in the release zip (v3.23+ form).
$baseDir = "$PSScriptRoot"
ipmo $baseDir\libs\calico\calico.psm1 -Force

Write-Host "Setting environment variables if not set..."

## Cluster
Set-EnvVarIfNotSet -var "KUBE_NETWORK" -defaultValue "Calico.*"
Set-EnvVarIfNotSet -var "CALICO_NETWORKING_BACKEND" -defaultValue "vxlan"
Set-EnvVarIfNotSet -var "K8S_SERVICE_CIDR" -defaultValue "<your service cidr>"
Set-EnvVarIfNotSet -var "DNS_NAME_SERVERS" -defaultValue "<your dns server ips>"
Set-EnvVarIfNotSet -var "DNS_SEARCH" -defaultValue "svc.cluster.local"

## Datastore
Set-EnvVarIfNotSet -var "CALICO_DATASTORE_TYPE" -defaultValue "<your datastore type>"
Set-EnvVarIfNotSet -var "KUBECONFIG" -defaultValue "$PSScriptRoot\calico-kube-config"
Set-EnvVarIfNotSet -var "ETCD_ENDPOINTS" -defaultValue "<your etcd endpoints>"
Set-EnvVarIfNotSet -var "ETCD_KEY_FILE" -defaultValue "<your etcd key>"
Set-EnvVarIfNotSet -var "ETCD_CERT_FILE" -defaultValue "<your etcd cert>"
Set-EnvVarIfNotSet -var "ETCD_CA_CERT_FILE" -defaultValue "<your etcd ca cert>"

## CNI
if (Get-IsContainerdRunning)
{
    Set-EnvVarIfNotSet -var "CNI_BIN_DIR" -defaultValue (Get-ContainerdCniBinDir)
    Set-EnvVarIfNotSet -var "CNI_CONF_DIR" -defaultValue (Get-ContainerdCniConfDir)
} else {
    Set-EnvVarIfNotSet -var "CNI_BIN_DIR" -defaultValue "c:\k\cni"
    Set-EnvVarIfNotSet -var "CNI_CONF_DIR" -defaultValue "c:\k\cni\config"
}
Set-EnvVarIfNotSet -var "CNI_CONF_FILENAME" -defaultValue "10-calico.conf"
Set-EnvVarIfNotSet -var "CNI_IPAM_TYPE" -defaultValue "calico-ipam"

## VXLAN
Set-EnvVarIfNotSet -var "VXLAN_VNI" -defaultValue 4096
$env:VXLAN_MAC_PREFIX = "0E-2A"
Set-EnvVarIfNotSet -var "VXLAN_MAC_PREFIX" -defaultValue "0E-2A"
Set-EnvVarIfNotSet -var "VXLAN_ADAPTER" -defaultValue ""

## Node
Set-EnvVarIfNotSet -var "NODENAME" -defaultValue $(hostname).ToLower()
Set-EnvVarIfNotSet -var "CALICO_K8S_NODE_REF" -defaultValue $env:NODENAME
Set-EnvVarIfNotSet -var "STARTUP_VALID_IP_TIMEOUT" -defaultValue 90
Set-EnvVarIfNotSet -var "IP" -defaultValue "autodetect"

## Logging
Set-EnvVarIfNotSet -var "CALICO_LOG_DIR" -defaultValue "$PSScriptRoot\logs"
# $env:FELIX_LOGSEVERITYSCREEN = "info"
Set-EnvVarIfNotSet -var "FELIX_LOGSEVERITYFILE" -defaultValue "none"
Set-EnvVarIfNotSet -var "FELIX_LOGSEVERITYSYS" -defaultValue "none"
#Set-EnvVarIfNotSet -var "BGP_LOGSEVERITYSCREEN" -defaultValue "debug"
