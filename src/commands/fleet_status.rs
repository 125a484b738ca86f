//! `fleet status`: every Windows node in one view, read a page at a time, and what is not as
//! it should be (`fleet::view` judges each node).

use crate::config::ConfigHash;
use crate::context::Context;
use crate::fleet::traffic;
use crate::fleet::view::{
    HashVotes, NodeRow, code_counts, node_row, row_troubles, short_hash, shown,
};
use crate::health::judge::{Finding, fleet_row};

/// `fleet status`'s document.
#[derive(serde::Serialize)]
pub(crate) struct FleetStatus<'a> {
    pub nodes: &'a [Row<'a>],
    pub findings: &'a std::collections::BTreeMap<String, usize>,
    pub config_hash: Option<&'a ConfigHash>,
    /// The fleet DaemonSet's `--verify-every`, against which traffic verdicts are judged.
    pub verify_every: Option<String>,
    /// The fleet's turns (`reconfigure --turn`): each slot, its holder and whether it failed.
    pub turns: &'a [crate::fleet::turn::Slot],
    pub healthy: bool,
    pub problems: &'a [String],
}

/// A node's row and its findings (`health::judge::fleet_row`).
#[derive(serde::Serialize)]
pub(crate) struct Row<'a> {
    #[serde(flatten)]
    pub row: &'a NodeRow,
    pub problems: Vec<Finding>,
}

/// `fleet status`: every Windows node, read a page at a time (memory holds rows, not Nodes);
/// exit 1 with the reasons when any is not as it should be, or there is none.
pub fn run(args: &crate::cli::FleetStatusArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let c = ctx.require_cluster()?;
    let (every, turns) = read_daemon_set(ctx, &c, args);
    let now = crate::duration::now();
    let (mut rows, mut votes): (Vec<NodeRow>, _) = (Vec::new(), HashVotes::default());
    crate::cluster::node::for_each_windows_node(&c, |n| {
        let mut row = node_row(n, now);
        row.traffic = traffic::of_node(n, every, now, &mut row.malformed);
        votes.add(&row);
        rows.push(row);
    })?;
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    let fleet_hash = votes.most_common();
    let mut problems = Vec::new();
    if rows.is_empty() {
        problems.push(super::common::Problem::plain(
            "no Windows nodes: no node has the label kubernetes.io/os=windows".to_owned(),
        ));
    }
    let judged: Vec<Row> = rows
        .iter()
        .map(|r| Row {
            row: r,
            problems: row_troubles(r, fleet_hash.as_ref())
                .iter()
                .map(|t| fleet_row(&r.name, t))
                .chain(traffic_findings(r))
                .collect(),
        })
        .collect();
    problems.extend(
        judged
            .iter()
            .flat_map(|r| r.problems.iter().map(Into::into)),
    );
    let sentences: Vec<String> = problems.iter().map(|p| p.message.clone()).collect();
    print_table(ctx, &rows, (fleet_hash.as_ref(), &turns));
    let findings = code_counts(&rows);
    if !findings.is_empty() {
        let said: Vec<String> = findings
            .iter()
            .map(|(code, n)| format!("{code} on {n} node(s)"))
            .collect();
        ctx.printer
            .text(&format!("Findings (docs/findings.md): {}", said.join(", ")));
    }
    let healthy = problems.is_empty();
    ctx.printer.json(&FleetStatus {
        nodes: &judged,
        findings: &findings,
        config_hash: fleet_hash.as_ref(),
        verify_every: every.map(crate::duration::show),
        turns: &turns,
        healthy,
        problems: &sentences,
    });
    if healthy {
        return Ok(());
    }
    for p in problems.iter().filter(|p| p.code.is_none()) {
        ctx.printer.text(&format!("  - {}", p.message));
    }
    // Each node's problem with its code and its fix, as status lists its findings.
    for f in judged.iter().flat_map(|r| &r.problems) {
        ctx.printer.text(&format!("  - {f:4}"));
    }
    Err(super::common::Degraded(problems).into())
}

/// The DaemonSet's verify interval and its turns, read once (a refusal of either is said).
fn read_daemon_set(
    ctx: &mut Context,
    c: &crate::cluster::Cluster,
    args: &crate::cli::FleetStatusArgs,
) -> (Option<std::time::Duration>, Vec<crate::fleet::turn::Slot>) {
    let ds = c.get_in(&args.namespace, &args.name).unwrap_or_else(|e| {
        ctx.printer.warn(&format!(
            "cannot read DaemonSet {}/{} ({e}): no CalicoWindowsTraffic verdict is judged stale",
            args.namespace, args.name
        ));
        None
    });
    let turns = match &ds {
        Some(ds) if !traffic::takes_turns(ds) => Vec::new(),
        _ => crate::fleet::turn::slots(c, &args.namespace, &args.name).unwrap_or_else(|e| {
            ctx.printer.warn(&format!(
                "cannot read the turns of {}/{} ({e}): who holds them is not shown",
                args.namespace, args.name
            ));
            Vec::new()
        }),
    };
    (ds.as_ref().and_then(traffic::every_of), turns)
}

/// The turns held, each with its node, since when and its failure, escaped as the table is.
fn print_turns(ctx: &mut Context, turns: &[crate::fleet::turn::Slot]) {
    let held: Vec<String> = turns
        .iter()
        .filter(|t| t.node.is_some())
        .map(|t| shown(&crate::fleet::turn::said(t)))
        .collect();
    if !turns.is_empty() {
        let said = if held.is_empty() {
            "none held".to_owned()
        } else {
            held.join(", ")
        };
        ctx.printer.text(&format!("Turns: {said}"));
    }
}

/// The table, every value escaped (`view::shown`); NODE as wide as the longest name, up to 63.
fn print_table(
    ctx: &mut Context,
    rows: &[NodeRow],
    (fleet_hash, turns): (Option<&ConfigHash>, &[crate::fleet::turn::Slot]),
) {
    let cell = |v: &Option<String>| v.as_deref().map_or("-".to_owned(), shown);
    let width = rows
        .iter()
        .map(|r| shown(&r.name).chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, 63);
    ctx.printer.text(&format!(
        "{:<width$} {:<14} {:<10} {:<16} {:<7} {:<8} {:<8} REASONS",
        "NODE", "CALICOCTL-WIN", "CALICO", "CONFIG", "READY", "CALICO", "TRAFFIC"
    ));
    for r in rows {
        let name: String = shown(&r.name).chars().take(width).collect();
        let hash = r.config_hash.as_deref().map_or("-".to_owned(), short_hash);
        ctx.printer.text(&format!(
            "{:<width$} {:<14} {:<10} {:<16} {:<7} {:<8} {:<8} {}",
            name,
            cell(&r.calicoctl_win),
            cell(&r.calico),
            hash,
            cell(&r.ready),
            if r.handed_to_operator {
                "operator".to_owned()
            } else {
                cell(&r.calico_ready)
            },
            cell(&r.traffic.as_ref().map(|t| t.status.clone())),
            r.reasons.as_deref().map_or(String::new(), shown)
        ));
    }
    ctx.printer.text(&format!(
        "{} Windows node(s); the fleet's config: {}",
        rows.len(),
        fleet_hash.map_or("none recorded", ConfigHash::as_str)
    ));
    print_turns(ctx, turns);
}

/// A node's traffic verdict against the DaemonSet's interval, as findings: the verdict's,
/// then each known code of a False verdict's failing checks with its fix.
fn traffic_findings(r: &NodeRow) -> Vec<Finding> {
    use crate::health::judge::Code;
    let Some((t, sentence)) = r
        .traffic
        .as_ref()
        .and_then(|t| Some((t, traffic::problem(&r.name, t)?)))
    else {
        return Vec::new();
    };
    let verdict = if t.status == "False" {
        Code::TrafficFails
    } else {
        Code::TrafficUnjudged
    };
    let mut out = vec![Finding::new(verdict, &r.name, sentence, verdict.remedy())];
    for word in &t.codes {
        if let Some(code) = Code::ALL.iter().copied().find(|c| c.word() == *word) {
            let layer = word.strip_prefix("traffic-").unwrap_or(word);
            let said = format!(
                "node {} does not pass traffic: its scheduled verify fails at {layer}",
                shown(&r.name)
            );
            out.push(Finding::new(code, &r.name, said, code.remedy()));
        }
    }
    out
}
