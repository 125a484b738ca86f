# config.ps1 after the quickstart and an administrator edited it (v3.23+ form).
$baseDir = "$PSScriptRoot"
ipmo $baseDir\libs\calico\calico.psm1 -Force

Set-EnvVarIfNotSet -var "KUBE_NETWORK" -defaultValue "Calico.*"
Set-EnvVarIfNotSet -var "CALICO_NETWORKING_BACKEND" -defaultValue "windows-bgp"
Set-EnvVarIfNotSet -var "K8S_SERVICE_CIDR" -defaultValue "10.96.0.0/12"
Set-EnvVarIfNotSet -var "DNS_NAME_SERVERS" -defaultValue "10.96.0.10,10.96.0.11"
Set-EnvVarIfNotSet -var "DNS_SEARCH" -defaultValue "svc.cluster.local"
Set-EnvVarIfNotSet -var "CALICO_DATASTORE_TYPE" -defaultValue "kubernetes"
Set-EnvVarIfNotSet -var "KUBECONFIG" -defaultValue "$PSScriptRoot\calico-kube-config"
Set-EnvVarIfNotSet -var "ETCD_ENDPOINTS" -defaultValue "<your etcd endpoints>"
Set-EnvVarIfNotSet -var "ETCD_KEY_FILE" -defaultValue ""
Set-EnvVarIfNotSet -var "ETCD_CERT_FILE" -defaultValue ""
Set-EnvVarIfNotSet -var "ETCD_CA_CERT_FILE" -defaultValue ""
Set-EnvVarIfNotSet -var "CNI_BIN_DIR" -defaultValue "C:\Program Files\containerd\cni\bin"
Set-EnvVarIfNotSet -var "CNI_CONF_DIR" -defaultValue "C:\Program Files\containerd\cni\conf"
Set-EnvVarIfNotSet -var "CNI_CONF_FILENAME" -defaultValue "10-calico.conf"
Set-EnvVarIfNotSet -var "CNI_IPAM_TYPE" -defaultValue "host-local"
Set-EnvVarIfNotSet -var "VXLAN_VNI" -defaultValue 4096
Set-EnvVarIfNotSet -var "VXLAN_MAC_PREFIX" -defaultValue "0E-2A"
Set-EnvVarIfNotSet -var "NODENAME" -defaultValue "ip-172-16-101-135.us-west-2.compute.internal"
Set-EnvVarIfNotSet -var "CALICO_K8S_NODE_REF" -defaultValue $env:NODENAME
Set-EnvVarIfNotSet -var "STARTUP_VALID_IP_TIMEOUT" -defaultValue 120
Set-EnvVarIfNotSet -var "IP" -defaultValue "autodetect"
Set-EnvVarIfNotSet -var "IP_AUTODETECTION_METHOD" -defaultValue "interface=Ethernet.*"
Set-EnvVarIfNotSet -var "CALICO_LOG_DIR" -defaultValue "D:\calico-logs"
$env:FELIX_LOGSEVERITYSCREEN = "warning"
Set-EnvVarIfNotSet -var "FELIX_LOGSEVERITYFILE" -defaultValue "none"
Set-EnvVarIfNotSet -var "FELIX_LOGSEVERITYSYS" -defaultValue "none"
Set-EnvVarIfNotSet -var "BGP_LOGSEVERITYSCREEN" -defaultValue 'info'
# Added by hand, as the maintain guide suggests:
Set-EnvVarIfNotSet -var "FELIX_HEALTHENABLED" -defaultValue "true"
Set-EnvVarIfNotSet -var "FELIX_PROMETHEUSMETRICSENABLED" -defaultValue "true"   # scraped by the node exporter
$env:NO_PROXY = "10.96.0.0/12,.svc,.cluster.local"
Remove-Item C:\important -Recurse -Force
if ($env:COMPUTERNAME -like "GPU*") {
    Set-EnvVarIfNotSet -var "VXLAN_ADAPTER" -defaultValue "Ethernet 2"
}
