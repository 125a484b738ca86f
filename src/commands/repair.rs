//! `repair`: stuck and stale HNS endpoints removed, their pods evicted for their controllers
//! to recreate, then a wait until none is at fault. No service is restarted (`plan::repair`).

use super::change::{Change, Changing};
use super::common::{ClusterRead, read_cluster};
use crate::apply;
use crate::cli::RepairArgs;
use crate::cluster::Cluster;
use crate::context::Context;
use crate::duration::{Look, Pauses, Stop, Stopped, Wait, poll_until};
use crate::error::UsageError;
use crate::health::judge::Finding;
use crate::host::Host;
use crate::installed::endpoints::{self, Judged};
use crate::installed::record;
use crate::k8s_name::NodeName;
use crate::layout::InstallRoot;
use crate::plan::repair;
use anyhow::Context as _;
use std::time::Duration;

/// What a repair works on: the node's name, the install root, the cluster.
struct Target {
    node: NodeName,
    root: InstallRoot,
    cluster: Box<Cluster>,
}

/// The least `--grace`: HNS can take tens of seconds to attach an endpoint on a loaded node.
pub const MIN_GRACE: Duration = Duration::from_secs(60);

/// The node, its install and the cluster; refused without either.
fn target(ctx: &mut Context, host: &dyn Host) -> anyhow::Result<Target> {
    let base = ctx.load_config()?;
    let node = base.config.node.name.clone();
    let root = base.config.root();
    if record::read(host, &root)?.is_none() {
        return Err(UsageError::new(
            format!("Calico is not installed in {root}: there is nothing to repair"),
            "install it first ('calicoctl-win install'), or point install_root at where it is",
        )
        .of_kind(crate::error::Kind::NotInstalled)
        .into());
    }
    let cluster = read_cluster(false, ctx, &node, crate::cluster::facts::Rights::Skip)?;
    let cluster = match cluster {
        ClusterRead::Read(c, _) => c,
        ClusterRead::Skipped(why) => {
            return Err(UsageError::new(
                format!("repair judges the endpoints against the cluster, which was {why}"),
                "pass the admin or installer kubeconfig with --kubeconfig, or set KUBECONFIG",
            )
            .of_kind(crate::error::Kind::NoAdminKubeconfig)
            .into());
        }
        ClusterRead::Failed(e) => {
            return Err(anyhow::Error::new(e).context("repair needs the cluster"));
        }
    };
    Ok(Target {
        node,
        root,
        cluster,
    })
}

/// Repair's own keys of its document (`change::Changing`).
#[derive(serde::Serialize)]
#[cfg_attr(test, derive(Default))]
pub(crate) struct Repair<'a> {
    pub node: &'a str,
    pub endpoints: &'a [&'a Judged],
    pub suspect: &'a [&'a Judged],
    pub restarts: &'a [&'a str],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remaining: Option<&'a [Judged]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub findings: Option<&'a [Finding]>,
    /// A stop ended the wait after the run (done); `remaining` is the last look's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

pub fn run(args: &RepairArgs, ctx: &mut Context) -> anyhow::Result<()> {
    check_grace(args.grace)?;
    let host = ctx.open_host_to_change("repair")?;
    let Target {
        node,
        root,
        cluster: c,
    } = target(ctx, host.as_ref())?;
    let journal_path = root.journal();
    let mut change = Change::begin(ctx, host.as_ref(), "repair", &root, journal_path)?;
    let interrupted = change.journal.take();
    let (judged, actions) = planned(ctx, host.as_ref(), &c, &node, args)?;
    let faults: Vec<&Judged> = judged.iter().filter(|j| j.verdict.is_fault()).collect();
    let suspect: Vec<&Judged> = judged
        .iter()
        .filter(|j| j.verdict == endpoints::Verdict::Suspect)
        .collect();
    let own = Repair {
        node: node.as_str(),
        endpoints: &faults,
        suspect: &suspect,
        restarts: &[],
        remaining: None,
        findings: None,
        interrupted: false,
    };
    let mut doc = Changing::plan(ctx.options.dry_run, own, &actions);
    for j in &suspect {
        ctx.printer.text(&format!("Not yet: {}", j.sentence()));
    }
    if actions.is_empty() {
        // An interrupted repair whose steps a new look finds done: its journal is finished.
        if interrupted.is_some() && !ctx.options.dry_run {
            host.remove_file(&change.journal_path)
                .context("cannot remove the finished repair's journal")?;
        }
        ctx.printer.text(
            "No HNS endpoint of the Calico network has been at fault for longer than the grace period: nothing to repair.",
        );
        ctx.printer.json(&doc);
        return Ok(());
    }
    ctx.printer.text(&format!(
        "Repair {} HNS endpoint(s) on node {node}. No service is restarted: Felix and kube-proxy keep running, ClusterIPs stay up; only the pods evicted are without their network until their controllers make them again.",
        faults.len()
    ));
    if ctx.options.dry_run {
        super::change::end_dry_run(ctx, &actions, &doc);
        return Ok(());
    }
    let recheck = |id: &str| still_at_fault(host.as_ref(), &c, &node, args.grace, id);
    let mut opts = options(ctx, &change, interrupted, &c);
    opts.recheck = Some(&recheck);
    let stop = opts.stop.clone();
    if let Err(f) = change.run(ctx, &actions, opts)? {
        let e = f.error;
        let step = e.action.clone();
        return Err(anyhow::Error::new(e).context(format!(
            "repair stopped at '{step}'; the steps before it stay done (deleted endpoints and evictions cannot be undone); run 'calicoctl-win repair' again to finish"
        )));
    }
    doc.changed = true;
    count_repair(host.as_ref(), &root, &actions, ctx);
    let left = match wait_healthy(ctx, (host.as_ref(), &c, &node), args, &stop)? {
        Waited::Healthy(left) => left,
        Waited::Stopped(left) => {
            doc.own.remaining = Some(&left);
            doc.own.interrupted = true;
            return Err(stopped(ctx, &doc));
        }
    };
    let findings = look_after(ctx, (host.as_ref(), &c, &node, &root), args.grace);
    doc.own.remaining = Some(&left);
    doc.own.findings = Some(&findings);
    ctx.printer.json(&doc);
    finished(ctx, actions.len(), &findings)
}

/// A stop during the wait after the run: the document printed, and exit 1.
fn stopped(ctx: &mut Context, doc: &Changing<Repair<'_>>) -> anyhow::Error {
    ctx.printer.json(doc);
    anyhow::anyhow!(
        "stopped (Ctrl-C or a termination signal) while waiting for the repaired endpoints, after its {} step(s): the repair is done; 'calicoctl-win status' tells the node's health",
        doc.actions.len()
    )
}

/// The node judged again, as status and the condition judge it.
fn look_after(
    ctx: &Context,
    (host, c, node, root): (&dyn Host, &Cluster, &NodeName, &InstallRoot),
    grace: Duration,
) -> Vec<Finding> {
    let state_dir = ctx.state_dir(host);
    let own = crate::health::Own {
        cluster: Some(c),
        remote: endpoints::Remote::Ask,
        ageing: endpoints::Ageing::Read,
    };
    let surveyed = crate::health::survey(crate::health::Look {
        host,
        root,
        node,
        grace,
        state_dir: state_dir.as_deref(),
        mode: crate::health::Mode::Own(own),
    });
    crate::health::OwnView::of(surveyed).findings
}

/// Counts the repair and its endpoints in the metrics CalicoNode serves (or warns).
fn count_repair(host: &dyn Host, root: &InstallRoot, actions: &[apply::Action], ctx: &mut Context) {
    use crate::installed::metrics::{REPAIR_FILE, REPAIRED_ENDPOINTS, REPAIRS, bump};
    let removed = actions
        .iter()
        .filter(|a| matches!(a, apply::Action::DeleteEndpoint { .. }))
        .count() as u64;
    let counted = bump(host, root, REPAIR_FILE, REPAIRS, 1)
        .and_then(|()| bump(host, root, REPAIR_FILE, REPAIRED_ENDPOINTS, removed));
    if let Err(e) = counted {
        ctx.printer
            .warn(&format!("cannot count the repair in its metrics: {e}"));
    }
}

/// `--grace` below the floor is refused.
fn check_grace(grace: Duration) -> anyhow::Result<()> {
    if grace >= MIN_GRACE {
        return Ok(());
    }
    Err(UsageError::new(
        format!(
            "--grace {} is shorter than an HNS attach can take",
            crate::duration::show(grace)
        ),
        format!("pass --grace {} or more", crate::duration::show(MIN_GRACE)),
    )
    .into())
}

/// The endpoints judged now and the plan; this look is recorded (not in a dry run) for a later
/// run to age the faults; a refusal puts the record back.
fn planned(
    ctx: &Context,
    host: &dyn Host,
    c: &Cluster,
    node: &NodeName,
    args: &RepairArgs,
) -> anyhow::Result<(Vec<Judged>, Vec<apply::Action>)> {
    let ageing = if ctx.options.dry_run {
        endpoints::Ageing::Read
    } else {
        endpoints::Ageing::Record
    };
    let seen_before = endpoints::seen::load(host);
    let judged = survey(host, c, node, args.grace, ageing)?;
    let planned = repair::plan(&repair::Inputs {
        node,
        judged: &judged,
        // Pods with emptyDir data are evicted too: they have no network to use it with.
        drain: args.evict.options(true),
        allow_majority: args.allow_majority,
    });
    match planned {
        Ok(actions) => Ok((judged, actions)),
        Err(r) => {
            endpoints::seen::store(host, &seen_before)
                .context("cannot put back the record of endpoint faults")?;
            Err(refused(node, &judged, r))
        }
    }
}

/// The look before an endpoint is deleted: kept, with why, unless still at fault.
fn still_at_fault(
    host: &dyn Host,
    c: &Cluster,
    node: &NodeName,
    grace: Duration,
    id: &str,
) -> anyhow::Result<Option<String>> {
    let now = survey(host, c, node, grace, endpoints::Ageing::Read)?;
    Ok(match now.iter().find(|j| j.id.eq_ignore_ascii_case(id)) {
        None => Some("it is gone already".into()),
        Some(j) if j.verdict.is_fault() => None,
        Some(j) => Some(format!("a new look finds it {}", j.verdict.word())),
    })
}

/// After the plan ran: done, or what the node's judges still find (exit 1).
fn finished(ctx: &mut Context, steps: usize, findings: &[Finding]) -> anyhow::Result<()> {
    if findings.is_empty() {
        ctx.printer.text(&format!(
            "Repaired: {steps} step(s); nothing is at fault on the node."
        ));
        return Ok(());
    }
    for f in findings {
        ctx.printer.text(&format!("after the repair: {f:4}"));
    }
    Err(super::common::Degraded(
        findings
            .iter()
            .map(|f| super::common::Problem {
                message: format!("after the repair, {}", f.message),
                ..f.into()
            })
            .collect(),
    )
    .into())
}

/// The Calico network's endpoints judged as `status` judges them.
fn survey(
    host: &dyn Host,
    c: &Cluster,
    node: &NodeName,
    grace: Duration,
    ageing: endpoints::Ageing,
) -> anyhow::Result<Vec<Judged>> {
    let how = endpoints::Survey {
        cluster: Some(c),
        node,
        grace,
        remote: endpoints::Remote::Ask,
        ageing,
    };
    Ok(endpoints::survey_calico(host, &how)?.unwrap_or_default())
}

/// How the wait after the repair ended, with the endpoints last found at fault.
enum Waited {
    Healthy(Vec<Judged>),
    Stopped(Vec<Judged>),
}

/// After the repair, until `--wait-timeout` or `stop`: the endpoints still at fault.
fn wait_healthy(
    ctx: &mut Context,
    (host, c, node): (&dyn Host, &Cluster, &NodeName),
    args: &RepairArgs,
    stop: &Stop,
) -> anyhow::Result<Waited> {
    let ctx = std::cell::RefCell::new(ctx);
    let last = std::cell::RefCell::new(Vec::new());
    let look = || -> anyhow::Result<Look<Vec<Judged>, Vec<Judged>>> {
        let left: Vec<Judged> = survey(host, c, node, args.grace, endpoints::Ageing::Read)?
            .into_iter()
            .filter(|j| j.verdict.is_fault())
            .collect();
        if left.is_empty() {
            return Ok(Look::Done(left));
        }
        ctx.borrow_mut().log(&format!(
            "{} endpoint(s) still at fault; looking again",
            left.len()
        ));
        last.replace(left.clone());
        Ok(Look::Pending(left))
    };
    let wait = Wait {
        what: "the repaired endpoints to be healthy",
        timeout: args.wait_timeout,
        pauses: Pauses {
            first: Duration::from_millis(100),
            most: Duration::from_secs(5),
        },
        stop,
        say: &mut |line| ctx.borrow_mut().log(line),
    };
    match poll_until(wait, look, Ok) {
        Ok(left) => Ok(Waited::Healthy(left)),
        Err(e) if e.is::<Stopped>() => Ok(Waited::Stopped(last.into_inner())),
        Err(e) => Err(e),
    }
}

/// Refused before anything changes: pods nothing recreates, or the breaker.
fn refused(node: &NodeName, judged: &[Judged], r: repair::Refusal) -> anyhow::Error {
    match r {
        repair::Refusal::Unmanaged(pods) => UsageError::new(
            format!(
                "the endpoints of pod(s) {} on node {node} are stuck, and no controller recreates them once evicted; nothing was changed",
                pods.join(", ")
            ),
            "recreate them yourself, or pass --force to evict them all the same",
        )
        .of_kind(crate::error::Kind::DrainRefused)
        .into(),
        repair::Refusal::Breaker { faults, of } => {
            let evidence: Vec<String> = judged
                .iter()
                .filter(|j| j.verdict.is_fault())
                .map(Judged::sentence)
                .collect();
            UsageError::new(
                format!(
                    "{faults} of the {of} pod endpoints on node {node} are judged at fault, more than half: that is likelier a misjudgement (pods or addresses the cluster has not posted) than such a node; nothing was changed. The evidence: {}",
                    evidence.join("; ")
                ),
                "check the pods ('kubectl get pods -o wide --field-selector spec.nodeName=<node>') and 'calicoctl-win status'; pass --allow-majority to repair them all the same",
            )
            .of_kind(crate::error::Kind::DrainRefused)
            .into()
        }
    }
}

/// How the plan runs: journaled, no rollback (nothing deleted or evicted comes back); Ctrl-C
/// ends it before its next step, and the health wait after it.
fn options<'a>(
    ctx: &mut Context,
    change: &Change,
    journal: Option<crate::apply::journal::Journal>,
    cluster: &'a Cluster,
) -> apply::Options<'a> {
    apply::Options {
        stop: ctx.catch_stop(Stop::new(), super::common::CHANGE_UNCAUGHT),
        // Its plan stops and starts no service (`plan::repair`).
        ..change.options(false, Duration::ZERO, journal, Some(cluster))
    }
}
