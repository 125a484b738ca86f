//! What the commands share: reading the cluster, the checks' ids, the degraded result.

use crate::checks::{self, Check, Verdict};
use crate::cluster::{ClusterError, facts};
use crate::config::{Loaded, Source};
use crate::context::Context;
use crate::error::UsageError;
use crate::k8s_name::NodeName;

/// What is not as it should be, with codes and fixes: under `-q` (the fleet DaemonSet's
/// readiness probe) the only line printed.
#[derive(Debug, thiserror::Error)]
#[error("Calico on this node is degraded: {}", said(.0))]
pub struct Degraded(pub Vec<Problem>);

/// One reason of a `Degraded`: its sentence, its finding code and its fix.
#[derive(Debug)]
pub struct Problem {
    pub message: String,
    pub code: Option<crate::health::judge::Code>,
    pub remedy: Option<String>,
}

impl Problem {
    /// A reason with no code and no fix of its own.
    pub fn plain(message: String) -> Self {
        Self {
            message,
            code: None,
            remedy: None,
        }
    }
}

impl From<&crate::health::judge::Finding> for Problem {
    fn from(f: &crate::health::judge::Finding) -> Self {
        Self {
            message: f.message.clone(),
            code: Some(f.code),
            remedy: f.remedy.clone(),
        }
    }
}

/// The most characters of one fix the error line carries (status shows it whole).
const MAX_FIX: usize = 200;

/// Each reason as `sentence [code] (fix: ...)`, its fix cut at `MAX_FIX` characters.
fn said(problems: &[Problem]) -> String {
    let one = |p: &Problem| {
        let mut s = p.message.clone();
        if let Some(c) = p.code {
            s.push_str(&format!(" [{}]", c.word()));
        }
        if let Some(r) = &p.remedy {
            let mut fix: String = r.chars().take(MAX_FIX).collect();
            if r.chars().count() > MAX_FIX {
                fix.push('…');
            }
            s.push_str(&format!(" (fix: {fix})"));
        }
        s
    };
    problems.iter().map(one).collect::<Vec<_>>().join("; ")
}

/// `--allow-known-issue` names entries of the known-issues table only.
pub(crate) fn check_known_issue_ids(allowed: &[String]) -> Result<(), UsageError> {
    match checks::known_issues::unknown_ids(allowed).first() {
        Some(bad) => Err(UsageError::new(
            format!("--allow-known-issue {bad}: there is no known issue with that id"),
            format!(
                "ids: {} (docs/known-issues.md)",
                checks::known_issues::KNOWN_ISSUES
                    .iter()
                    .map(|k| k.id)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
        None => Ok(()),
    }
}

/// Refuses a `--skip` that names no check.
pub(crate) fn check_skips(skip: &[String]) -> Result<(), UsageError> {
    let known = |id: &str| {
        checks::host::IDS.contains(&id)
            || checks::cluster::IDS.contains(&id)
            || id == checks::known_issues::ID
    };
    match skip.iter().find(|s| !known(s)) {
        Some(bad) => Err(UsageError::new(
            format!("--skip {bad}: there is no check with that id"),
            format!(
                "check ids: {}, {}, {}",
                checks::host::IDS.join(", "),
                checks::cluster::IDS.join(", "),
                checks::known_issues::ID
            ),
        )),
        None => Ok(()),
    }
}

pub(crate) use crate::cluster::read::ClusterRead;

impl ClusterRead {
    /// The files `config` renders for `release` (`plan::desired::rendered_files`), Calico's
    /// components pinned to the cluster's API group (`Locks::pin`), else calico-node's
    /// environment file's now.
    pub(crate) fn rendered_files(
        &self,
        host: &dyn crate::host::Host,
        config: &crate::config::Config,
        release: (Option<&str>, Option<&str>),
        uplink: Option<&str>,
    ) -> anyhow::Result<Vec<crate::plan::install::DesiredFile>> {
        use crate::cluster::calico_api::Group;
        let pin = match self.facts() {
            Some(f) => f.calico_locks.pin(),
            None => crate::health::api_group::pinned(host, &config.root()),
        };
        let pin = pin.map(Group::api_version);
        crate::plan::desired::rendered_files(host, config, release, uplink, pin)
    }
}

/// The cluster, unless `--offline` or no admin kubeconfig; a given one that cannot be used is
/// bad input (exit 2), not a cluster failing every check.
pub(crate) fn read_cluster(
    offline: bool,
    ctx: &mut Context,
    node: &NodeName,
    rights: facts::Rights,
) -> Result<ClusterRead, ClusterError> {
    if offline {
        return Ok(ClusterRead::Skipped("skipped with --offline"));
    }
    read_cluster_knowing(ctx, node, rights, None)
}

/// `read_cluster` (not offline), with the node's Node already read (`Some`).
pub(crate) fn read_cluster_knowing(
    ctx: &mut Context,
    node: &NodeName,
    rights: facts::Rights,
    known: Option<k8s_openapi::api::core::v1::Node>,
) -> Result<ClusterRead, ClusterError> {
    Ok(match ctx.connect_cluster() {
        Ok(None) => ClusterRead::Skipped(
            "no admin kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config or C:\\k\\config)",
        ),
        Ok(Some(c)) => match facts::gather_knowing(&c, node, rights, known) {
            Ok(f) => ClusterRead::Read(Box::new(c), Box::new(f)),
            Err(e) => ClusterRead::Failed(e),
        },
        Err(
            e @ (ClusterError::NoKubeconfig { .. }
            | ClusterError::Kubeconfig { .. }
            | ClusterError::ExpiredToken { .. }),
        ) => {
            return Err(e);
        }
        Err(e) => ClusterRead::Failed(e),
    })
}

/// The configuration with what the cluster says filling unset settings.
pub(crate) fn with_cluster(
    ctx: &mut Context,
    cluster: &ClusterRead,
    base: Loaded,
) -> anyhow::Result<Loaded> {
    match cluster.facts() {
        Some(f) => Ok(ctx.load_config_with(f.settings())?),
        None => Ok(base),
    }
}

/// The cluster checks: evaluated, skipped (with why), or failed with the reason and its hint.
pub(crate) fn cluster_checks(
    cluster: &ClusterRead,
    loaded: &Loaded,
    release: Option<&str>,
) -> Vec<Check> {
    match cluster {
        ClusterRead::Skipped(why) => checks::cluster::all(Verdict::Skip, why, None),
        ClusterRead::Failed(e) => {
            let msg = format!("cannot read the cluster: {}", crate::error::chain(e));
            checks::cluster::unreadable(&msg, &e.hint())
        }
        ClusterRead::Read(_, f) => {
            let asked = checks::cluster::Asked {
                vni_explicit: loaded
                    .shown
                    .get("vxlan.vni")
                    .is_some_and(|s| !matches!(s.source, Source::Default | Source::Cluster)),
                release,
            };
            checks::cluster::evaluate(f, &loaded.config, &asked)
        }
    }
}

/// The checks of the adapter the External vSwitch binds (`plan::desired::choose_uplink`).
pub(crate) fn adapter_checks(
    host: &dyn crate::host::Host,
    snapshot: &checks::host::HostSnapshot,
    cluster: &ClusterRead,
    config: &crate::config::Config,
) -> Vec<checks::Check> {
    let internal_ip = cluster.facts().and_then(|f| f.node_internal_ip);
    let (choice, remedy) = match crate::plan::desired::choose_uplink(host, config, internal_ip) {
        Ok(c) => (Ok(c), None),
        Err(e) => {
            let remedy = e
                .downcast_ref::<crate::host::uplink::ChoiceError>()
                .map(|c| c.remedy());
            (Err(format!("{e:#}")), remedy)
        }
    };
    checks::host::adapter_checks(snapshot, config, &choice, remedy)
}

/// The adapter the External network binds: chosen again, else the recorded one.
pub(crate) fn uplink(
    host: &dyn crate::host::Host,
    config: &crate::config::Config,
    cluster: &ClusterRead,
    rec: Option<&crate::installed::record::InstallRecord>,
) -> anyhow::Result<crate::host::uplink::Choice> {
    let internal_ip = cluster.facts().and_then(|f| f.node_internal_ip);
    let recorded = rec.and_then(|r| r.network.as_ref()?.adapter.as_deref());
    Ok(crate::plan::desired::choose_uplink(host, config, internal_ip)?.or_recorded(recorded))
}

/// This node's Kubernetes name (`node.k8s_node_ref`, not Calico's `node.name`) and the
/// cluster's DNS domain from a `dns.search` entry `svc.DOMAIN`; none without a configuration.
pub fn this_node(ctx: &mut Context) -> Option<(NodeName, Option<String>)> {
    let l = ctx.load_config().ok()?;
    let domain = l
        .config
        .dns
        .search
        .iter()
        .find_map(|d| d.to_string().strip_prefix("svc.").map(str::to_owned));
    Some((l.config.node.k8s_node_ref.clone(), domain))
}

/// Where Calico is installed when neither a flag nor a readable config says.
pub(crate) const DEFAULT_ROOT: &str = r"C:\CalicoWindows";

/// What a Ctrl-C does to a changing command's run when the stop signal cannot be caught.
pub const CHANGE_UNCAUGHT: &str =
    "the process ends where it is, and its journal lets the next run undo or finish what it did";

/// What a Ctrl-C does to verify's run when the stop signal cannot be caught.
pub const VERIFY_UNCAUGHT: &str = "a run stopped that way leaves its namespace to the next run";

/// A changing command's document after `--verify`: its own keys, then verify's report.
#[derive(serde::Serialize)]
pub(crate) struct WithVerify<D> {
    /// `output::VERIFY_SCHEMA`: the report's shape.
    pub schema: u32,
    #[serde(flatten)]
    pub doc: D,
    pub verify: crate::verify::run::Report,
}

#[cfg(test)]
mod degraded_tests {
    use super::{Degraded, MAX_FIX, Problem};
    use crate::health::judge::{Code, Finding};

    /// The error line names each finding's code and its fix, a long fix cut.
    #[test]
    fn the_degraded_line_carries_each_code_and_a_bounded_fix() {
        let long = "x".repeat(MAX_FIX + 50);
        let f = Finding::new(Code::Token, "t", "the token is refused", long);
        let e = Degraded(vec![
            (&f).into(),
            Problem::plain("node a is not Ready".into()),
        ]);
        let said = e.to_string();
        let fix = format!(" (fix: {}…)", "x".repeat(MAX_FIX));
        assert_eq!(
            said,
            format!(
                "Calico on this node is degraded: the token is refused [token]{fix}; node a is not Ready"
            )
        );
    }
}
