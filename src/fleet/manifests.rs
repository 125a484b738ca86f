//! The manifests that let an engine already in the cluster roll calicoctl-win over the Windows
//! nodes (`fleet plan`): a system-upgrade-controller Plan and a HostProcess DaemonSet, each
//! with the Secret holding the config every node gets. Built from typed structs: Kubernetes'
//! own from k8s-openapi, the Plan's from system-upgrade-controller's API types.

use crate::duration::show;
use k8s_openapi::api::apps::v1::{
    DaemonSet, DaemonSetSpec, DaemonSetUpdateStrategy, RollingUpdateDaemonSet,
};
use k8s_openapi::api::core::v1::{
    Container, EmptyDirVolumeSource, ExecAction, PodSecurityContext, PodSpec, PodTemplateSpec,
    Probe, Secret, SecretVolumeSource, Service, ServicePort, ServiceSpec, Toleration, Volume,
    VolumeMount, WindowsSecurityContextOptions,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// The key of the config file in the Secret.
pub const CONFIG_KEY: &str = "calico-windows.yaml";
/// Where the Secret is mounted; a HostProcess container sees it under its sandbox, the drive
/// letter dropped (microsoft/hcsshim#1443).
pub const CONFIG_MOUNT: &str = "C:\\calicoctl-win";
/// The Plan's secret path, which puts the Secret at `CONFIG_MOUNT`: system-upgrade-controller
/// v0.19.0 mounts a path that starts with `/` as it is and joins any other under
/// `/run/system-upgrade/secrets/` (`pkg/upgrade/container/container.go`, `WithSecrets`);
/// kubelet on Windows gives it `c:` (`pkg/volume/util/util.go`, `MakeAbsolutePath`).
pub const PLAN_SECRET_PATH: &str = "/calicoctl-win";
/// The job's node, as cmd.exe expands it (system-upgrade-controller
/// `pkg/upgrade/container/container.go`, `New`).
pub const NODE_NAME: &str = "%SYSTEM_UPGRADE_NODE_NAME%";
/// The container's sandbox, as cmd.exe expands it: every command runs under `cmd.exe /c`, as
/// hcsshim does with file binding anyway (`internal/jobcontainers/jobcontainer.go`).
pub const SANDBOX: &str = "%CONTAINER_SANDBOX_MOUNT_POINT%";
pub const APP_LABEL: &str = "app.kubernetes.io/name";
/// The metrics Service's port of CalicoNode's endpoint (status finds the Service by it).
pub const METRICS_PORT_NAME: &str = "calicoctl-win";
/// Where the log containers keep their positions: the pod's emptyDir.
pub const POSITIONS_MOUNT: &str = "C:\\log-positions";
/// The container that follows calicoctl-win's own log (`kubectl logs ... -c install`).
pub const INSTALL_LOG_CONTAINER: &str = "install";
/// The DaemonSet's first container, which `kubectl logs` shows when none is named.
pub const MAIN_CONTAINER: &str = "calicoctl-win";

/// system-upgrade-controller's `Plan` (upgrade.cattle.io/v1), with the fields a rollout uses
/// (v0.19.0 `pkg/apis/upgrade.cattle.io/v1/types.go`; Windows nodes from v0.19).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: PlanSpec,
}

/// `PlanSpec`: how many nodes at once, which, the job's container and its drain.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanSpec {
    pub concurrency: i64,
    pub node_selector: LabelSelector,
    pub service_account_name: String,
    /// The tag of an image named without one; a new version runs the plan again.
    pub version: String,
    pub secrets: Vec<SecretSpec>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// The controller's cordon and drain; none for a migration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drain: Option<DrainSpec>,
    /// How long a job may run (unset: the controller's default, 600 s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_active_deadline_secs: Option<i64>,
    pub upgrade: ContainerSpec,
}

/// `SecretSpec`: a Secret mounted into the job's containers.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SecretSpec {
    pub name: String,
    pub path: String,
}

/// `DrainSpec`: the `kubectl drain` flags the controller's drain container passes.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DrainSpec {
    /// A duration string passed to `kubectl drain --timeout`.
    pub timeout: String,
    pub ignore_daemon_sets: bool,
    pub delete_emptydir_data: bool,
    pub force: bool,
}

/// `ContainerSpec`: the upgrade container.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerSpec {
    pub image: String,
    pub command: Vec<String>,
    pub args: Vec<String>,
}

/// What the manifests are made from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fleet {
    pub name: String,
    pub namespace: String,
    /// The image holding calicoctl-win.exe at its root.
    pub image: String,
    pub version: String,
    pub service_account: String,
    pub config_secret: String,
    /// The config file's text, which every node gets.
    pub config: String,
    /// Nodes changed at once (the Plan's concurrency, the DaemonSet's turns and maxUnavailable).
    pub concurrency: u32,
    /// Labels a node needs besides `kubernetes.io/os=windows`.
    pub node_selector: BTreeMap<String, String>,
    pub drain_timeout: Duration,
    pub force: bool,
    pub delete_emptydir_data: bool,
    /// The migration the Plan rolls instead of a reconfigure.
    pub migrate: Option<Migration>,
    /// The Plan's job runs `verify` after the reconfigure (`fleet plan --verify`).
    pub verify: Option<VerifyJob>,
    /// The DaemonSet's pod runs `verify` this often, published in the Node's condition
    /// (`fleet plan --verify-every`).
    pub verify_every: Option<Duration>,
    /// The probe image of both (`fleet plan --verify-image`): verify's `--image`, else agnhost.
    pub verify_image: Option<String>,
    /// The DaemonSet's pod has a log container per service (`fleet plan --log-containers`).
    pub log_containers: bool,
}

/// The bounds of a Plan's job that runs `verify`; its deadline is their sum with the drain's
/// timeout and `VERIFY_JOB_MARGIN`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerifyJob {
    /// `verify --timeout` and `--pull-timeout`, on the job's command line.
    pub timeout: Duration,
    pub pull_timeout: Duration,
    /// The longest the reconfigure's own waits take with their defaults.
    pub reconfigure: Duration,
}

/// What a verify job may take besides its bounds (images starting, the pod scheduled).
pub const VERIFY_JOB_MARGIN: Duration = Duration::from_secs(300);

impl VerifyJob {
    /// The job's `jobActiveDeadlineSecs`, counted from its start, the controller's drain
    /// included (system-upgrade-controller v0.19.0 `pkg/upgrade/job/job.go`, `New`).
    pub fn deadline_secs(&self, drain: Duration) -> i64 {
        let all = drain
            + self.reconfigure
            + self.pull_timeout
            // Twice: verify's wait for the node's Ready and `CalicoWindowsReady` before its
            // checks (`--while-cordoned`), then the checks, each within `--timeout`.
            + self.timeout * 2
            + VERIFY_JOB_MARGIN;
        i64::try_from(all.as_secs()).unwrap_or(i64::MAX)
    }
}

/// A migration rolled by the Plan (`fleet plan --migrate`): `migrate to-operator` or
/// `migrate from-operator` on each node, one at a time, no drain (the pods stay).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Migration {
    pub to_operator: bool,
    /// How long each node waits for its operator pod.
    pub pod_timeout: Duration,
    /// `from-operator`'s release flags (`--release-zip`, `--sha256`, `--calico-version`).
    pub release: Vec<String>,
}

/// What a migration's job may take besides its wait for the operator's pod (migrate's other
/// waits; from the operator, install's download and service starts).
pub const MIGRATION_JOB_MARGIN: Duration = Duration::from_secs(3600);

impl Migration {
    /// The subcommand's name.
    pub fn direction(&self) -> &'static str {
        if self.to_operator {
            "to-operator"
        } else {
            "from-operator"
        }
    }

    /// calicoctl-win's arguments after the global ones.
    fn args(&self) -> Vec<String> {
        let mut args = vec![
            "migrate".to_owned(),
            self.direction().to_owned(),
            format!("--pod-timeout={}", show(self.pod_timeout)),
        ];
        args.extend(self.release.iter().cloned());
        args
    }
}

impl Fleet {
    /// calicoctl-win.exe in the container's image.
    pub fn exe() -> String {
        format!("{SANDBOX}\\calicoctl-win.exe")
    }

    /// calicoctl-win under cmd.exe.
    fn cmd() -> Vec<String> {
        vec!["cmd.exe".to_owned(), "/c".to_owned(), Self::exe()]
    }

    /// `--config` with the config file, then `args`.
    fn with_config(args: &[&str]) -> Vec<String> {
        let config = ["--config", &Self::config_path()].map(String::from);
        config
            .into_iter()
            .chain(args.iter().map(|a| (*a).to_owned()))
            .collect()
    }

    /// A container's command: calicoctl-win with the config, then `args`, under cmd.exe.
    fn command(args: &[&str]) -> Vec<String> {
        let mut command = Self::cmd();
        command.extend(Self::with_config(args));
        command
    }

    fn config_mount() -> VolumeMount {
        VolumeMount {
            name: "config".into(),
            mount_path: CONFIG_MOUNT.into(),
            read_only: Some(true),
            ..VolumeMount::default()
        }
    }

    /// The config file, where the container sees the Secret.
    pub fn config_path() -> String {
        let mount = CONFIG_MOUNT.trim_start_matches("C:");
        format!("{SANDBOX}{mount}\\{CONFIG_KEY}")
    }

    /// calicoctl-win's arguments for a job whose engine drains the node (the Plan), or that
    /// drains it (the DaemonSet).
    pub fn args(&self, engine_drains: bool) -> Vec<String> {
        let mut args = Self::with_config(&["-o", "json"]);
        if let Some(m) = &self.migrate {
            args.extend(m.args());
            return args;
        }
        args.push("reconfigure".into());
        // The engine's drain has its own timeout and flags (the Plan's `drain`).
        if engine_drains {
            args.push("--drain=external".into());
            return args;
        }
        args.push("--drain".into());
        args.push(format!("--drain-timeout={}", show(self.drain_timeout)));
        if self.force {
            args.push("--force".into());
        }
        if self.delete_emptydir_data {
            args.push("--delete-emptydir-data".into());
        }
        // The DaemonSet's pacing (`fleet::turn`).
        args.push(format!("--turn={}/{}", self.namespace, self.name));
        args.push(format!("--turns={}", self.concurrency));
        args
    }

    /// The Plan's job: `reconfigure --drain=external`, then with `verify`, `&& verify` for the
    /// node: a failed change or traffic fails the job, which leaves the node cordoned.
    fn plan_args(&self) -> Vec<String> {
        let mut args = self.args(true);
        if let (Some(v), None) = (&self.verify, &self.migrate) {
            args.extend(["&&".to_owned(), Self::exe()]);
            args.extend(Self::with_config(&[
                "-o",
                "json",
                "verify",
                "--node",
                NODE_NAME,
                "--namespace",
                crate::cluster::verify_rights::NAMESPACE,
                "--while-cordoned",
            ]));
            // The bounds the job's deadline is made of, said rather than defaulted.
            args.push(format!("--timeout={}", show(v.timeout)));
            args.push(format!("--pull-timeout={}", show(v.pull_timeout)));
            args.extend(self.verify_image.iter().map(|i| format!("--image={i}")));
        }
        args
    }

    fn labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(APP_LABEL.to_owned(), self.name.clone())])
    }

    fn meta(&self, name: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(self.namespace.clone()),
            labels: Some(self.labels()),
            ..ObjectMeta::default()
        }
    }

    /// The Secret with the config file.
    pub fn secret(&self) -> Secret {
        Secret {
            metadata: self.meta(&self.config_secret),
            type_: Some("Opaque".into()),
            // As text, so that a review of the manifests reads the config.
            string_data: Some(BTreeMap::from([(
                CONFIG_KEY.to_owned(),
                self.config.clone(),
            )])),
            ..Secret::default()
        }
    }

    /// The headless Service over the DaemonSet's pods with the metrics ports (calicoctl-win's,
    /// Felix's), for Prometheus' Kubernetes service discovery.
    pub fn metrics_service(&self, ports: [u16; 2]) -> Service {
        let port = |name: &str, p: u16| ServicePort {
            name: Some(name.into()),
            port: i32::from(p),
            protocol: Some("TCP".into()),
            ..ServicePort::default()
        };
        Service {
            metadata: self.meta(&format!("{}-metrics", self.name)),
            spec: Some(ServiceSpec {
                cluster_ip: Some("None".into()),
                // A degraded node's pod is not Ready, and its metrics are wanted then most.
                publish_not_ready_addresses: Some(true),
                selector: Some(self.labels()),
                ports: Some(vec![
                    port(METRICS_PORT_NAME, ports[0]),
                    port("felix", ports[1]),
                ]),
                ..ServiceSpec::default()
            }),
            ..Service::default()
        }
    }

    fn selected(&self) -> BTreeMap<String, String> {
        let mut labels = self.node_selector.clone();
        labels.insert("kubernetes.io/os".into(), "windows".into());
        labels
    }

    /// Windows nodes are often tainted `os=windows:NoSchedule` (`install --taint-windows`).
    fn tolerations() -> Vec<Toleration> {
        vec![Toleration {
            key: Some("os".into()),
            operator: Some("Equal".into()),
            value: Some("windows".into()),
            effect: Some("NoSchedule".into()),
            ..Toleration::default()
        }]
    }

    /// The system-upgrade-controller Plan: `concurrency` nodes at a time, each cordoned and
    /// drained by the controller, then `reconfigure --drain=external` (or `migrate`, no drain);
    /// exit 0 uncordons the node, any other stops there. Never selected by the label `migrate`
    /// moves: the controller deletes the job of a node that leaves the selector (v0.19.0
    /// `pkg/upgrade/handle_batch.go`, "running out-of-turn").
    pub fn plan(&self) -> Plan {
        let node_selector = LabelSelector {
            match_expressions: Some(
                self.selected()
                    .into_iter()
                    .map(|(key, value)| LabelSelectorRequirement {
                        key,
                        operator: "In".into(),
                        values: Some(vec![value]),
                    })
                    .collect(),
            ),
            ..LabelSelector::default()
        };
        Plan {
            api_version: "upgrade.cattle.io/v1".into(),
            kind: "Plan".into(),
            metadata: self.meta(&self.name),
            spec: PlanSpec {
                concurrency: i64::from(self.concurrency),
                node_selector,
                service_account_name: self.service_account.clone(),
                version: self.version.clone(),
                secrets: vec![SecretSpec {
                    name: self.config_secret.clone(),
                    path: PLAN_SECRET_PATH.into(),
                }],
                tolerations: Self::tolerations(),
                drain: self.migrate.is_none().then(|| DrainSpec {
                    timeout: show(self.drain_timeout),
                    ignore_daemon_sets: true,
                    delete_emptydir_data: self.delete_emptydir_data,
                    force: self.force,
                }),
                job_active_deadline_secs: match (&self.migrate, &self.verify) {
                    (Some(m), _) => Some(
                        i64::try_from((m.pod_timeout + MIGRATION_JOB_MARGIN).as_secs())
                            .unwrap_or(i64::MAX),
                    ),
                    (None, Some(v)) => Some(v.deadline_secs(self.drain_timeout)),
                    (None, None) => None,
                },
                upgrade: ContainerSpec {
                    image: self.image.clone(),
                    command: Self::cmd(),
                    args: self.plan_args(),
                },
            },
        }
    }

    /// The HostProcess DaemonSet: on each Windows node, with `changes`, `reconfigure --drain
    /// --turn` (`fleet::turn`), then `service keep-token`, the node's renewer of last resort
    /// (alone beside a Plan). The pod is Ready while `status` finds the node healthy.
    pub fn daemon_set(&self, changes: bool) -> DaemonSet {
        let pod = self.pod(changes);
        DaemonSet {
            metadata: self.meta(&self.name),
            spec: Some(DaemonSetSpec {
                selector: LabelSelector {
                    match_labels: Some(self.labels()),
                    ..LabelSelector::default()
                },
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some(self.labels()),
                        // A changed config is a changed pod template: the DaemonSet rolls.
                        annotations: Some(BTreeMap::from([
                            (
                                "calicoctl-win/config-sha256".to_owned(),
                                crate::files::sha256_hex(self.config.as_bytes()),
                            ),
                            // `kubectl logs` without -c: the rollout's own lines.
                            (
                                "kubectl.kubernetes.io/default-container".to_owned(),
                                MAIN_CONTAINER.to_owned(),
                            ),
                        ])),
                        ..ObjectMeta::default()
                    }),
                    spec: Some(pod),
                },
                update_strategy: Some(DaemonSetUpdateStrategy {
                    type_: Some("RollingUpdate".into()),
                    rolling_update: Some(RollingUpdateDaemonSet {
                        max_unavailable: Some(IntOrString::Int(
                            i32::try_from(self.concurrency).unwrap_or(i32::MAX),
                        )),
                        ..RollingUpdateDaemonSet::default()
                    }),
                }),
                ..DaemonSetSpec::default()
            }),
            ..DaemonSet::default()
        }
    }

    /// The DaemonSet's pod: calicoctl-win in a HostProcess container as SYSTEM.
    fn pod(&self, changes: bool) -> PodSpec {
        let mut command = Self::cmd();
        if changes {
            command.extend(self.args(false));
            // Once the change exited 0: the renewer of calico-node's token, with this pod's
            // own token, which kubelet renews.
            command.extend(["&&".to_owned(), Self::exe()]);
        }
        command.extend(Self::with_config(&["service", "keep-token"]));
        // `keep-token`'s scheduled verify (`--verify-every`), with its probe image.
        if let Some(every) = self.verify_every {
            command.push(format!("--verify-every={}", show(every)));
            if let Some(i) = &self.verify_image {
                command.push(format!("--verify-image={i}"));
            }
        }
        let container = Container {
            name: MAIN_CONTAINER.into(),
            image: Some(self.image.clone()),
            command: Some(command),
            volume_mounts: Some(vec![Self::config_mount()]),
            readiness_probe: Some(Probe {
                exec: Some(ExecAction {
                    command: Some(Self::command(&["-q", "status", "--offline"])),
                }),
                period_seconds: Some(30),
                timeout_seconds: Some(20),
                ..Probe::default()
            }),
            ..Container::default()
        };
        let mut containers = vec![container];
        containers.extend(self.log_containers());
        let config_volume = Volume {
            name: "config".into(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(self.config_secret.clone()),
                ..SecretVolumeSource::default()
            }),
            ..Volume::default()
        };
        let positions_volume = self.log_containers.then(|| Volume {
            name: "log-positions".into(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Volume::default()
        });
        PodSpec {
            containers,
            host_network: Some(true),
            node_selector: Some(self.selected()),
            service_account_name: Some(self.service_account.clone()),
            tolerations: Some(Self::tolerations()),
            security_context: Some(PodSecurityContext {
                windows_options: Some(WindowsSecurityContextOptions {
                    host_process: Some(true),
                    run_as_user_name: Some("NT AUTHORITY\\SYSTEM".into()),
                    ..WindowsSecurityContextOptions::default()
                }),
                ..PodSecurityContext::default()
            }),
            volumes: Some(
                [Some(config_volume), positions_volume]
                    .into_iter()
                    .flatten()
                    .collect(),
            ),
            ..PodSpec::default()
        }
    }

    /// The log containers (`--log-containers`): one per service, and `install` for
    /// calicoctl-win's own. Opt-in, as nothing bounds the copy's disk use: kubelet's log
    /// rotation fails under containerd on Windows (containerd/containerd#7075).
    fn log_containers(&self) -> Vec<Container> {
        if !self.log_containers {
            return Vec::new();
        }
        let mut all: Vec<Container> = crate::layout::Role::ALL
            .map(|r| self.log_container(r.name(), r.name()))
            .into();
        all.push(self.log_container(INSTALL_LOG_CONTAINER, crate::layout::OWN_LOG_ROLE));
        all
    }

    /// The container `name` following `role`'s log (as the operator's calico-node-windows has
    /// a container per component: tigera/operator v1.40.0 `pkg/render/windows.go`), its
    /// position in the pod's emptyDir; HostProcess, as all of a pod's containers must be
    /// (`validateWindowsHostProcessPod`, pkg/apis/core/validation/validation.go).
    fn log_container(&self, name: &str, role: &str) -> Container {
        let mount = POSITIONS_MOUNT.trim_start_matches("C:");
        let position = format!("{SANDBOX}{mount}\\{role}.json");
        Container {
            name: name.into(),
            image: Some(self.image.clone()),
            command: Some(Self::command(&[
                "logs",
                role,
                "--follow",
                "--position",
                &position,
            ])),
            volume_mounts: Some(vec![
                Self::config_mount(),
                VolumeMount {
                    name: "log-positions".into(),
                    mount_path: POSITIONS_MOUNT.into(),
                    ..VolumeMount::default()
                },
            ]),
            ..Container::default()
        }
    }
}
