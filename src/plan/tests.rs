use super::uninstall::is_service_log;

#[test]
fn only_the_services_logs_count_as_logs() {
    for yes in [
        "calico-node.log",
        "calico-felix-20261121T101500Z.log",
        "CALICO-CONFD.LOG",
    ] {
        assert!(is_service_log(yes), "{yes}");
    }
    for no in [
        "calico-node.log.bak",
        "kubelet.log",
        "calico-felix-.log",
        "calico-node-../x.log",
        "notes.txt",
    ] {
        assert!(!is_service_log(no), "{no}");
    }
}
