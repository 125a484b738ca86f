//! `reconfigure --turn NAMESPACE/NAME`: the fleet DaemonSet's pod changes its node only in a
//! fleet's turn (`fleet::turn`): its own slot taken back, else a run with a change waits for
//! one, plans again holding it, renews it beside the change, awaits the node healthy and gives
//! it back. A failure marks the turn failed and keeps it; a stop leaves it to run out.

use super::reconfigure::{self, Pass};
use crate::cli::{ReconfigureArgs, StatusArgs};
use crate::cluster::Cluster;
use crate::context::Context;
use crate::duration::{Look, Pauses, Stop, Wait, poll_until};
use crate::fleet::turn::{self, Held, Seen, TurnError, Turns};
use std::hash::BuildHasher;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// reconfigure with the fleet's turn `(namespace, name)`.
pub fn run(
    args: &ReconfigureArgs,
    ctx: &mut Context,
    (ns, name): (&str, &str),
) -> anyhow::Result<()> {
    let turns = Turns {
        namespace: ns.to_owned(),
        name: name.to_owned(),
        count: args.turns,
        lease: args.turn_lease.max(Duration::from_secs(1)),
    };
    // The node's name, as reconfigure finds it (kubelet's, read from the host).
    let host = ctx.open_host(crate::host::select::Intent::Read)?;
    let me = ctx.load_config()?.config.node.name.clone();
    drop(host);
    let c = ctx.require_cluster()?;
    let held = match turn::look(&c, &turns, &me, None)? {
        Ok(h) => h,
        Err(_) => match reconfigure::attempt(args, ctx, None)? {
            Pass::Done => return Ok(()),
            Pass::NeedsTurn => wait(ctx, &c, (&turns, &me), args.turn_timeout)?,
        },
    };
    ctx.printer
        .note(&format!("node {me} holds the turn {}", held.name()));
    hold(args, ctx, &c, (&turns, &me), held)
}

/// A look's pause: half the lease, give or take half at random, so that waiting pods do not
/// look together (1,000 on the default 60 s lease make about 33 small gets a second).
fn pause(lease: Duration, look: u32) -> Duration {
    let r = std::collections::hash_map::RandomState::new().hash_one(look) % 1000;
    lease / 4 + (lease / 2) * u32::try_from(r).unwrap_or(0) / 1000
}

/// Waits for a turn, within `timeout` (`TurnError::Waited`, exit 4); Ctrl-C or the container's
/// stop ends it.
fn wait(
    ctx: &mut Context,
    c: &Cluster,
    (t, me): (&Turns, &crate::k8s_name::NodeName),
    timeout: Duration,
) -> anyhow::Result<Held> {
    let stop = ctx.catch_stop(Stop::new(), super::common::CHANGE_UNCAUGHT);
    let mut seen = Seen::default();
    let (mut looks, mut said) = (0_u32, Vec::new());
    let what = format!(
        "a turn of {} in {} ({} at once)",
        t.name, t.namespace, t.count
    );
    let got = poll_until(
        Wait {
            what: &what,
            timeout,
            pauses: Pauses::every(t.lease),
            stop: &stop,
            say: &mut |l| said.push(l.to_owned()),
        },
        || -> anyhow::Result<Look<Held, Vec<String>>> {
            looks += 1;
            let next = pause(t.lease, looks);
            Ok(match turn::look(c, t, me, Some(&mut seen)) {
                Ok(Ok(h)) => Look::Done(h),
                Ok(Err(held)) => Look::Again(held, next),
                // A refusal is for a person to fix; anything else may pass.
                Err(
                    e @ crate::cluster::ClusterError::Api {
                        code: 401 | 403, ..
                    },
                ) => {
                    return Err(e.into());
                }
                Err(e) => Look::Again(vec![e.to_string()], next),
            })
        },
        |held| {
            Err(TurnError::Waited {
                turns: format!("{}/{}-turn-*", t.namespace, t.name),
                after: timeout,
                held,
            }
            .into())
        },
    );
    for l in said {
        ctx.printer.note(&l);
    }
    got
}

/// The change holding the turn, renewed beside it; given back once the node is healthy
/// (before the document: a turn not given back is the run's error), or marked failed.
fn hold(
    args: &ReconfigureArgs,
    ctx: &mut Context,
    c: &Cluster,
    (t, me): (&Turns, &crate::k8s_name::NodeName),
    held: Held,
) -> anyhow::Result<()> {
    let caught = ctx.catch_stop(Stop::new(), super::common::CHANGE_UNCAUGHT);
    let change_stop = caught.part();
    let (ending, lost) = (Stop::new(), AtomicBool::new(false));
    let held = Mutex::new(Some(held));
    let mut settle = |ctx: &mut Context| -> anyhow::Result<()> {
        healthy(args, ctx, (t.lease, me))?;
        give_back(ctx, c, (t, me), &held)
    };
    let ran = std::thread::scope(|s| {
        s.spawn(|| keep(c, (t, me), &held, &ending, (&lost, &change_stop)));
        let mut turn = reconfigure::Turn {
            stop: change_stop.clone(),
            settle: &mut settle,
        };
        let ran = reconfigure::attempt(args, ctx, Some(&mut turn));
        ending.request();
        ran
    });
    let held = held.into_inner().unwrap_or_else(|p| p.into_inner());
    let e = match ran {
        Ok(_) => return Ok(()),
        Err(e) => e,
    };
    // Healthy and given back (or its giving back failed, said): no failure of the node's.
    let Some(mut held) = held else {
        return Err(e);
    };
    if lost.load(Ordering::SeqCst) {
        let slot = held.name().to_owned();
        return Err(e.context(TurnError::Lost { slot }));
    }
    // Stopped: the turn runs out unrenewed, unless this node's next pod takes it back.
    if !caught.requested() {
        let code = super::known_errors::failure_kind(&e).name();
        if let Err(w) = turn::fail(c, t, me, &mut held, &code) {
            ctx.printer.warn(&format!(
                "the turn {} was not marked failed ({w}): it runs out unrenewed",
                held.name()
            ));
        }
    }
    Err(e)
}

/// Gives the held turn back (the renewals end with it).
fn give_back(
    ctx: &mut Context,
    c: &Cluster,
    (t, me): (&Turns, &crate::k8s_name::NodeName),
    held: &Mutex<Option<Held>>,
) -> anyhow::Result<()> {
    let mut slot = held.lock().unwrap_or_else(|p| p.into_inner());
    let Some(mut h) = slot.take() else {
        return Ok(());
    };
    match turn::release(c, t, me, &mut h) {
        Ok(_) => {
            ctx.printer
                .note(&format!("gave the turn {} back", h.name()));
            Ok(())
        }
        Err(e) => Err(anyhow::Error::new(e).context(format!(
            "node {me} is healthy, but its turn {} was not given back: it runs out unrenewed",
            h.name()
        ))),
    }
}

/// Renews the turn every third of its lease until `ending` or its giving back; a turn found
/// another node's, or not renewed for two thirds of the lease, stops the change (`change`) and
/// says so (`lost`), as client-go gives up at `RenewDeadline` (v0.33.0
/// `tools/leaderelection/leaderelection.go`, `renew`).
fn keep(
    c: &Cluster,
    (t, me): (&Turns, &crate::k8s_name::NodeName),
    held: &Mutex<Option<Held>>,
    ending: &Stop,
    (lost, change): (&AtomicBool, &Stop),
) {
    let mut renewed = std::time::Instant::now();
    while !ending.wait(t.lease / 3) {
        let mut slot = held.lock().unwrap_or_else(|p| p.into_inner());
        let Some(h) = slot.as_mut() else {
            return;
        };
        let gone = match turn::renew(c, t, me, h) {
            Ok(true) => {
                renewed = std::time::Instant::now();
                false
            }
            Ok(false) => true,
            Err(_) => renewed.elapsed() >= t.lease * 2 / 3,
        };
        if gone {
            lost.store(true, Ordering::SeqCst);
            change.request();
            return;
        }
    }
}

/// Waits until `status --offline` finds the node healthy, within `--wait-timeout`; Ctrl-C or
/// the container's stop ends it.
fn healthy(
    args: &ReconfigureArgs,
    ctx: &mut Context,
    (lease, me): (Duration, &crate::k8s_name::NodeName),
) -> anyhow::Result<()> {
    let status = StatusArgs {
        offline: true,
        verify: false,
        grace: crate::installed::endpoints::DEFAULT_GRACE,
    };
    let stop = ctx.catch_stop(Stop::new(), super::common::CHANGE_UNCAUGHT);
    let mut said = Vec::new();
    let what = format!("node {me} to be healthy again (status --offline)");
    let got = poll_until(
        Wait {
            what: &what,
            timeout: args.wait_timeout,
            pauses: Pauses::every(lease / 6),
            stop: &stop,
            say: &mut |l| said.push(l.to_owned()),
        },
        || -> anyhow::Result<Look<(), Vec<String>>> {
            let report = super::status::survey(&status, ctx)?;
            if report.healthy() {
                return Ok(Look::Done(()));
            }
            Ok(Look::Pending(
                report
                    .findings()
                    .iter()
                    .map(|f| f.message.clone())
                    .collect(),
            ))
        },
        |findings| {
            Err(TurnError::Unhealthy {
                node: me.to_string(),
                after: args.wait_timeout,
                findings,
            }
            .into())
        },
    );
    for l in said {
        ctx.printer.note(&l);
    }
    got
}
