//! A stand-in for the Tigera operator's Windows DaemonSet on one simulated node: the DaemonSet
//! controller's placement and what the pod's containers do to the host. Each behaviour is
//! modelled from the real programs' source:
//! - rendering: with `windowsDataplane: HNS` and an Installation its validation takes, the
//!   operator renders the `calico-node-windows` DaemonSet (its affinity the Installation's
//!   `calicoNodeWindowsDaemonSet` override, else none here: `pkg/render/windows.go`) and keeps
//!   TigeraStatus `calico` and `calico-windows`; with Windows off the Windows controller
//!   returns before rendering (tigera/operator release-v1.44
//!   `pkg/controller/installation/windows_controller.go`) and the DaemonSet stays as it was.
//! - placement: the pod runs on a Windows node the rendered DaemonSet's required node affinity
//!   takes; taints and cordons do not matter (`TolerateAll`). The DaemonSet controller deletes a pod whose
//!   node no longer matches (kubernetes `pkg/controller/daemon/daemon_controller.go`
//!   `podsShouldBeOnNode`; affinity terms ORed, expressions ANDed, `NotIn` true for a node
//!   without the label: `component-helpers/scheduling/corev1/nodeaffinity`).
//! - the init container `uninstall-calico-hpc.ps1` (projectcalico/calico v3.32.1) deletes the
//!   services CalicoConfd, CalicoFelix, CalicoNode, CalicoUpgrade and, Calico being the CNI,
//!   kube-proxy;
//! - `node-service.ps1` compares `LastBootTime` with `LastBootUpTime.ToString("G")` (SYSTEM's
//!   culture; `calico.psm1` `Get-LastBootTime`) and, when they differ, deletes every non-NAT
//!   HNS network; then stores its own `LastBootTime`;
//! - the install-cni init container writes `10-calico.conflist` and `calico-kubeconfig` (a
//!   token of its own) into the CNI config directory (calico v3.32.1
//!   `cni-plugin/pkg/install/install.go` `writeCNIConfig`, `writeKubeconfig`), which is the
//!   Installation's `windowsNodes.cniConfigDir`, `/etc/cni/net.d` by default (tigera/operator
//!   release-v1.44 `pkg/render/windows.go`: `CNI_NET_DIR`, `DefaultWindowsCNIDirectories`);
//! - the felix container's preStop (`calico.exe component node shutdown`) sets the node's
//!   `NetworkUnavailable` True, reason `CalicoIsDown` (`node/pkg/lifecycle/shutdown`).
//!
//! The "G" format here is written out for the two cultures the tests use, from .NET's
//! documented patterns (en-US `M/d/yyyy h:mm:ss tt`, de-DE `dd.MM.yyyy HH:mm:ss`), apart from
//! calicoctl-win's own formatter.

use super::fake_api::State;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

pub const POD_PREFIX: &str = "/api/v1/namespaces/calico-system/pods/calico-node-windows-";

pub struct FakeOperator {
    stop: Arc<AtomicBool>,
    /// Pods not started for now (an image pull that takes long): the controllers still run.
    hold: Arc<AtomicBool>,
    /// The Windows controller not rendering for now.
    hold_render: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
    /// What it did, in order.
    pub log: Arc<Mutex<Vec<String>>>,
    /// How many steps it finished.
    steps: Arc<std::sync::atomic::AtomicUsize>,
}

impl FakeOperator {
    /// Starts placing (and removing) the operator's pod of `node`, acting on the simulated
    /// host in `sim` when it starts one.
    pub fn start(api: Arc<Mutex<State>>, node: &str, sim: PathBuf) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let hold = Arc::new(AtomicBool::new(false));
        let hold_render = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (s, h, r, l, node) = (
            stop.clone(),
            hold.clone(),
            hold_render.clone(),
            log.clone(),
            node.to_owned(),
        );
        let steps = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let done = steps.clone();
        let handle = std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                let held = Hold {
                    pods: h.load(Ordering::SeqCst),
                    render: r.load(Ordering::SeqCst),
                };
                step(&api, &node, &sim, &l, held);
                done.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_millis(30));
            }
        });
        Self {
            stop,
            hold,
            hold_render,
            handle: Some(handle),
            log,
            steps,
        }
    }

    /// Returns once a whole step begun after this call is done (the state as it is now
    /// looked at), within a minute: not a pause a loaded machine may not fit a step in.
    pub fn looked_again(&self) {
        let until = self.steps.load(Ordering::SeqCst) + 2;
        for _ in 0..2400 {
            if self.steps.load(Ordering::SeqCst) >= until {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        panic!("the fake operator took no step in a minute");
    }

    /// Holds the node's pod back (or lets it come).
    pub fn hold_pods(&self, on: bool) {
        self.hold.store(on, Ordering::SeqCst);
    }

    /// Holds the Windows controller's rendering back (or lets it render).
    pub fn hold_render(&self, on: bool) {
        self.hold_render.store(on, Ordering::SeqCst);
    }

    pub fn events(&self) -> Vec<String> {
        self.log.lock().expect("log").clone()
    }
}

impl Drop for FakeOperator {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// What the stand-in holds back: the node's pod (an image pull that takes long), or the
/// Windows controller's rendering (it stops Degraded for a reason of its own, as
/// `windows_controller.go` does on "Unable to create the Tigera CA").
#[derive(Clone, Copy, Default)]
struct Hold {
    pods: bool,
    render: bool,
}

const DAEMONSET: &str = "/apis/apps/v1/namespaces/calico-system/daemonsets/calico-node-windows";

/// The core controller fills `windowsNodes` with the provider's defaults once Windows is on
/// and neither Installation sets them, and writes them back into `default`'s spec (tigera/operator release-v1.44
/// `core_controller.go` `fillDefaults`, then the update of the Installation); whether it did.
fn fill_windows_nodes(st: &mut State) -> bool {
    let path = "/apis/operator.tigera.io/v1/installations/default";
    let Some(default) = st.objects.get_mut(path) else {
        return false;
    };
    if !default["spec"]["windowsNodes"].is_null() {
        return false;
    }
    default["spec"]["windowsNodes"] =
        json!({"cniBinDir": "/opt/cni/bin", "cniConfigDir": "/etc/cni/net.d"});
    true
}

fn step(
    api: &Mutex<State>,
    node: &str,
    sim: &std::path::Path,
    log: &Mutex<Vec<String>>,
    hold: Hold,
) {
    let pod_path = format!("{POD_PREFIX}{node}");
    let mut st = api.lock().expect("api");
    let inst = effective(
        st.objects
            .get("/apis/operator.tigera.io/v1/installations/default")
            .cloned()
            .unwrap_or(Value::Null),
        st.objects
            .get("/apis/operator.tigera.io/v1/installations/overlay")
            .cloned(),
    );
    let Some(n) = st.objects.get(&format!("/api/v1/nodes/{node}")).cloned() else {
        return;
    };
    let enabled = inst["spec"]["calicoNetwork"]["windowsDataplane"] == "HNS";
    if enabled && inst["spec"]["windowsNodes"].is_null() && fill_windows_nodes(&mut st) {
        return;
    }
    let affinity =
        &inst["spec"]["calicoNodeWindowsDaemonSet"]["spec"]["template"]["spec"]["affinity"];
    let invalid = invalid(&st, &inst, enabled);
    render(
        &mut st,
        (enabled, hold.render),
        invalid.as_deref(),
        affinity,
    );
    // The DaemonSet controller places pods by the rendered DaemonSet, which stays when Windows
    // goes off (`windows_controller.go` returns before rendering: nothing is deleted).
    let ds = st.objects.get(DAEMONSET).cloned();
    let should = ds.as_ref().is_some_and(|ds| {
        n["metadata"]["labels"]["kubernetes.io/os"] == "windows"
            && matches_affinity(
                &ds["spec"]["template"]["spec"]["affinity"],
                &n["metadata"]["labels"],
            )
    });
    let exists = st.objects.contains_key(&pod_path);
    if should && !exists && !hold.pods {
        drop(st);
        let mut did = start_pod_on_host(sim);
        did.extend(install_cni(sim, &inst));
        let mut st = api.lock().expect("api");
        st.objects.insert(
            pod_path.clone(),
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("calico-node-windows-{node}"), "namespace": "calico-system",
                    "uid": format!("uid-{node}"),
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                        "name": "calico-node-windows", "uid": "ds", "controller": true}]},
                "spec": {"nodeName": node, "hostNetwork": true},
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}),
        );
        log.lock()
            .expect("log")
            .push(format!("pod started: {}", did.join("; ")));
    } else if !should && exists {
        st.objects.remove(&pod_path);
        let path = format!("/api/v1/nodes/{node}");
        if let Some(n) = st.objects.get_mut(&path) {
            let conds = n["status"]["conditions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let mut conds: Vec<Value> = conds
                .into_iter()
                .filter(|c| c["type"] != "NetworkUnavailable")
                .collect();
            conds.push(json!({"type": "NetworkUnavailable", "status": "True",
                "reason": "CalicoIsDown", "message": "Calico is shutting down on this node"}));
            n["status"]["conditions"] = json!(conds);
        }
        log.lock().expect("log").push("pod deleted".into());
    }
}

/// Why the operator refuses an Installation with Windows on, as its validation does before
/// it renders anything (tigera/operator release-v1.44
/// `pkg/controller/installation/validation.go` `validateCustomResource`: the services endpoint
/// ConfigMap's host and port, `spec.serviceCIDRs` with the Calico CNI, the first IPv4 pool's
/// encapsulation VXLAN or None).
fn invalid(st: &State, inst: &Value, enabled: bool) -> Option<String> {
    if !enabled {
        // "spec.WindowsNodes is not valid and should not be provided when Calico for Windows
        // is disabled" (the same function, Windows off).
        return (!inst["spec"]["windowsNodes"].is_null()).then(|| {
            "installation spec.WindowsNodes is not valid and should not be provided when Calico for Windows is disabled".into()
        });
    }
    // The operator reads the ConfigMap in its own namespace (tigera/operator v1.43.0
    // `pkg/controller/utils/utils.go` `GetK8sServiceEndPoint`: `common.OperatorNamespace()`,
    // its service account's namespace unless OPERATOR_NAMESPACE says another): its
    // Deployment's here.
    let ns = st
        .objects
        .iter()
        .find(|(p, d)| {
            p.starts_with("/apis/apps/v1/")
                && d["metadata"]["labels"]["k8s-app"] == "tigera-operator"
        })
        .and_then(|(_, d)| d["metadata"]["namespace"].as_str())
        .unwrap_or("tigera-operator");
    let cm = st.objects.get(&format!(
        "/api/v1/namespaces/{ns}/configmaps/kubernetes-services-endpoint"
    ));
    let has = |k: &str| {
        cm.and_then(|c| c["data"][k].as_str())
            .is_some_and(|v| !v.is_empty())
    };
    if !has("KUBERNETES_SERVICE_HOST") || !has("KUBERNETES_SERVICE_PORT") {
        return Some("services endpoint configmap 'kubernetes-services-endpoint' does not have all required information for Calico Windows daemonset configuration".into());
    }
    if inst["spec"]["serviceCIDRs"]
        .as_array()
        .is_none_or(Vec::is_empty)
    {
        return Some(
            "installation spec.ServiceCIDRs must be provided when using Calico CNI on Windows"
                .into(),
        );
    }
    let v4 = inst["spec"]["calicoNetwork"]["ipPools"]
        .as_array()
        .and_then(|p| {
            p.iter().find(|p| {
                p["cidr"]
                    .as_str()
                    .and_then(|c| c.split('/').next())
                    .is_some_and(|a| a.parse::<std::net::Ipv4Addr>().is_ok())
            })
        });
    if let Some(enc) = v4.and_then(|p| p["encapsulation"].as_str())
        && enc != "VXLAN"
        && enc != "None"
    {
        return Some(format!(
            "IPv4 IPPool encapsulation {enc} is not supported by Calico for Windows"
        ));
    }
    None
}

/// What the controllers leave in the cluster: TigeraStatus `calico` Degraded with the
/// validation's error (`core_controller.go`: `SetDegraded(InvalidConfigurationError, "Invalid
/// Installation provided", err)`), else Available, and with Windows on and a valid
/// Installation the `calico-node-windows` DaemonSet (`pkg/render/windows.go`: node selector
/// `kubernetes.io/os: windows`, the `calicoNodeWindowsDaemonSet` override's affinity).
fn render(st: &mut State, (enabled, held): (bool, bool), invalid: Option<&str>, affinity: &Value) {
    let status = |degraded: Option<(&str, &str)>, name: &str| {
        let (d, reason, message) = match degraded {
            Some((r, m)) => ("True", r, m),
            None => ("False", "", ""),
        };
        json!({"apiVersion": "operator.tigera.io/v1", "kind": "TigeraStatus",
            "metadata": {"name": name},
            "status": {"conditions": [
                {"type": "Degraded", "status": d, "reason": reason, "message": message},
                {"type": "Available", "status": if degraded.is_some() { "False" } else { "True" }}]}})
    };
    let core = invalid.map(|why| ("InvalidConfigurationError", why));
    st.objects.insert(
        "/apis/operator.tigera.io/v1/tigerastatuses/calico".into(),
        status(core, "calico"),
    );
    let windows =
        (enabled && held).then_some(("ResourceCreateError", "Unable to create the Tigera CA"));
    st.objects.insert(
        "/apis/operator.tigera.io/v1/tigerastatuses/calico-windows".into(),
        status(windows.or(core.filter(|_| enabled)), "calico-windows"),
    );
    if enabled && invalid.is_none() && !held {
        let mut spec = json!({"nodeSelector": {"kubernetes.io/os": "windows"}});
        if !affinity.is_null() {
            spec["affinity"] = affinity.clone();
        }
        st.objects.insert(
            DAEMONSET.into(),
            json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
                "metadata": {"name": "calico-node-windows", "namespace": "calico-system",
                    "generation": 1},
                "spec": {"selector": {"matchLabels": {"k8s-app": "calico-node-windows"}},
                    "template": {"metadata": {"labels": {"k8s-app": "calico-node-windows"}},
                        "spec": spec}},
                "status": {"observedGeneration": 1}}),
        );
    }
}

/// The Installation the operator works from: `default` with each field the `overlay`
/// Installation sets in its place (tigera/operator release-v1.44
/// `pkg/controller/utils/merge.go` `OverrideInstallationSpec`, which `windows_controller.go`
/// applies), for the fields this stand-in reads.
fn effective(mut default: Value, overlay: Option<Value>) -> Value {
    let Some(overlay) = overlay else {
        return default;
    };
    for path in [
        &["calicoNetwork", "windowsDataplane"][..],
        &[
            "calicoNodeWindowsDaemonSet",
            "spec",
            "template",
            "spec",
            "affinity",
        ],
        &["windowsNodes", "cniConfigDir"],
        &["windowsNodes", "cniBinDir"],
        &["cni", "specVersion"],
        &["serviceCIDRs"],
        &["calicoNetwork", "ipPools"],
    ] {
        let set = path.iter().fold(&overlay["spec"], |v, k| &v[*k]);
        if !set.is_null() {
            let mut at = &mut default["spec"];
            for k in path {
                at = &mut at[*k];
            }
            *at = set.clone();
        }
    }
    default
}

/// Required node affinity against a node's labels: no affinity matches; terms ORed, each
/// term's expressions ANDed.
fn matches_affinity(affinity: &Value, labels: &Value) -> bool {
    let Some(terms) = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"]
        .as_array()
    else {
        return true;
    };
    terms.iter().any(|t| {
        t["matchExpressions"]
            .as_array()
            .is_none_or(|e| e.iter().all(|x| expression(x, labels)))
    })
}

fn expression(x: &Value, labels: &Value) -> bool {
    let have = labels[x["key"].as_str().unwrap_or_default()].as_str();
    let values: Vec<&str> = x["values"]
        .as_array()
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    match x["operator"].as_str() {
        Some("In") => have.is_some_and(|h| values.contains(&h)),
        Some("NotIn") => have.is_none_or(|h| !values.contains(&h)),
        Some("Exists") => have.is_some(),
        Some("DoesNotExist") => have.is_none(),
        _ => false,
    }
}

const CALICO: &str = r"hklm\software\tigera\calico";

/// The install-cni container: the conflist and the kubeconfig with the CNI's own token, in
/// the Installation's Windows CNI config directory on the simulated host's C: drive.
fn install_cni(sim: &std::path::Path, inst: &Value) -> Vec<String> {
    let dir = inst["spec"]["windowsNodes"]["cniConfigDir"]
        .as_str()
        .unwrap_or("/etc/cni/net.d");
    let rel = dir
        .replace('\\', "/")
        .trim_start_matches("C:")
        .trim_start_matches("c:")
        .trim_start_matches('/')
        .to_ascii_lowercase();
    let at = sim.join("fs/c").join(rel);
    fs_err::create_dir_all(&at).expect("cni dir");
    let kubeconfig = format!("{dir}/calico-kubeconfig");
    let version = inst["spec"]["cni"]["specVersion"]
        .as_str()
        .filter(|v| *v != "Auto")
        .unwrap_or("1.0.0");
    let conflist = json!({"name": "Calico", "cniVersion": version, "plugins": [{
        "type": "calico", "mode": "vxlan", "vxlan_mac_prefix": "0E-2A", "vxlan_vni": 4096,
        "kubernetes": {"kubeconfig": kubeconfig}, "datastore_type": "kubernetes",
        "ipam": {"type": "calico-ipam"}}]});
    fs_err::write(
        at.join("10-calico.conflist"),
        serde_json::to_vec_pretty(&conflist).expect("json"),
    )
    .expect("conflist");
    fs_err::write(
        at.join("calico-kubeconfig"),
        "# Kubeconfig file for Calico CNI plugin.\napiVersion: v1\nkind: Config\nusers:\n- name: calico\n  user:\n    token: operator-cni-token\n",
    )
    .expect("kubeconfig");
    vec![format!(
        "wrote {dir}/10-calico.conflist and calico-kubeconfig"
    )]
}

/// The pod's containers on the host: services deleted, networks deleted when the marker says
/// another boot, the marker stored. What it did.
fn start_pod_on_host(sim: &std::path::Path) -> Vec<String> {
    let path = sim.join("state.json");
    let mut state: Value =
        serde_json::from_str(&fs_err::read_to_string(&path).expect("state")).expect("json");
    let mut did = Vec::new();
    for name in [
        "CalicoConfd",
        "CalicoFelix",
        "CalicoNode",
        "CalicoUpgrade",
        "kube-proxy",
    ] {
        if let Some(s) = state["services"].as_object_mut()
            && s.remove(&name.to_ascii_lowercase()).is_some()
        {
            did.push(format!("deleted service {name}"));
        }
    }
    let now = general(&state);
    let stored = state["registry"][CALICO]["lastboottime"]["data"]
        .as_str()
        .map(str::to_owned);
    if stored.as_deref() != Some(now.as_str()) {
        let kept: Vec<Value> = state["networks"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|n| {
                n["Type"]
                    .as_str()
                    .is_some_and(|t| t.eq_ignore_ascii_case("nat"))
            })
            .collect();
        let gone: Vec<String> = state["networks"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .filter(|n| !kept.contains(n))
            .filter_map(|n| n["ID"].as_str().map(str::to_owned))
            .collect();
        if !gone.is_empty() {
            did.push(format!(
                "LastBootTime {stored:?} is not {now:?}: deleted every non-NAT HNS network"
            ));
        }
        state["networks"] = json!(kept);
        if let Some(eps) = state["endpoints"].as_array_mut() {
            eps.retain(|e| {
                !gone
                    .iter()
                    .any(|g| Some(g.as_str()) == e["network_id"].as_str())
            });
        }
    }
    state["registry"][CALICO]["lastboottime"] = json!({"type": "REG_SZ", "data": now});
    // Whole or not at all, as the simulated host writes it: a run reading it meanwhile must
    // never see half a file.
    let tmp = path.with_extension("json.operator");
    fs_err::write(&tmp, serde_json::to_vec_pretty(&state).expect("json")).expect("write");
    fs_err::rename(&tmp, &path).expect("rename");
    did
}

/// `LastBootUpTime.ToString("G")` in SYSTEM's culture (`LocaleName` under
/// `HKU\.DEFAULT\Control Panel\International`): en-US or de-DE.
fn general(state: &Value) -> String {
    // WMI's LastBootUpTime: the boot as Windows reports it now, moved by every clock step
    // since (Microsoft's PowerShell `Get-Uptime` notes: the current time less the uptime is
    // "the same as the LastBootUpTime property"); the simulated host keeps it apart once a
    // step moved it.
    let local = state["system"]["boot_local_seconds_reported"]
        .as_i64()
        .or_else(|| state["system"]["boot_local_seconds"].as_i64())
        .expect("boot time");
    let (y, mo, d) = civil(local.div_euclid(86_400));
    let secs = local.rem_euclid(86_400);
    let (h, mi, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    let locale =
        state["registry"][r"hku\.default\control panel\international"]["localename"]["data"]
            .as_str()
            .unwrap_or("en-US");
    match locale {
        "de-DE" => format!("{d:02}.{mo:02}.{y} {h:02}:{mi:02}:{s:02}"),
        _ => {
            let h12 = if h % 12 == 0 { 12 } else { h % 12 };
            let tt = if h < 12 { "AM" } else { "PM" };
            format!("{mo}/{d}/{y} {h12}:{mi:02}:{s:02} {tt}")
        }
    }
}

/// Days since 1970-01-01 to a civil date (Howard Hinnant's `civil_from_days`).
fn civil(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}
