//! `verify --namespace`: the runs in a namespace given take turns through the ConfigMap
//! `calicoctl-win-verify-run` (src/verify/shared.rs). One turn a command (several nodes in
//! one namespace are refused), a turn run out by its `expires` taken over and its run's
//! objects deleted, and a turn someone else took over meanwhile never deleted by the run that
//! lost it (its delete carries the resourceVersion it wrote).

use crate::support::Node;
use crate::support::fake_api::{FakeApi, meta};
use calicoctl_win::cluster::Cluster;
use calicoctl_win::verify::run::{Options, Report, run};
use serde_json::{Value, json};
use std::time::Duration;

const NS: &str = "calicoctl-win-verify";
const TURN: &str = "/api/v1/namespaces/calicoctl-win-verify/configmaps/calicoctl-win-verify-run";

fn in_namespace() -> Options {
    Options {
        namespace: Some(NS.into()),
        policy_wait: Duration::from_secs(3),
        settle: Duration::from_secs(2),
        ..Options::for_node("win-a")
    }
}

fn connect(api: &FakeApi, dir: &tempfile::TempDir) -> Cluster {
    let kubeconfig = api.kubeconfig(dir.path(), None);
    Cluster::connect(
        std::slice::from_ref(&kubeconfig),
        &Default::default(),
        false,
    )
    .expect("connect")
}

fn cluster() -> (FakeApi, tempfile::TempDir) {
    let (api, dir) = super::verify::cluster();
    let ns = meta("v1", "Namespace", NS, None);
    api.put(&format!("/api/v1/namespaces/{NS}"), ns);
    (api, dir)
}

/// A turn another run holds: `run`, `expires` (unix seconds), made now.
fn held_turn(api: &FakeApi, run: &str, expires: i64) {
    let mut turn = meta("v1", "ConfigMap", "calicoctl-win-verify-run", Some(NS));
    turn["metadata"]["creationTimestamp"] = json!(jiff::Timestamp::now().to_string());
    let at = jiff::Timestamp::from_second(expires).expect("time");
    turn["data"] = json!({"run": run, "expires": at.to_string()});
    api.put(TURN, turn);
}

#[test]
fn several_nodes_in_a_namespace_given_are_refused_before_anything_is_made() {
    let (api, _dir) = cluster();
    let node = Node::new(&api);
    let args = [
        "verify",
        "--namespace",
        NS,
        "--node",
        "win-a",
        "--node",
        "win-b",
    ];
    let (code, _, err) = node.run(&args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("one node a run"), "{err}");
    assert!(
        !api.requests().iter().any(|(m, _)| m != "GET"),
        "nothing made: {:?}",
        api.requests()
    );
}

/// A turn made a moment ago whose `expires` has passed (its run killed, or handed on) is
/// taken over and its run's leftover pod deleted; its age is not what judges it.
#[test]
fn a_turn_whose_expiry_passed_is_taken_over_and_its_objects_deleted() {
    let (api, dir) = cluster();
    held_turn(&api, "killed2", jiff::Timestamp::now().as_second() - 60);
    let mut pod = meta("v1", "Pod", "server", Some(NS));
    pod["metadata"]["labels"] = json!({"app.kubernetes.io/managed-by": "calicoctl-win-verify"});
    api.put(&format!("/api/v1/namespaces/{NS}/pods/server"), pod);
    let c = connect(&api, &dir);
    let o = Options {
        timeout: Duration::from_secs(20),
        ..in_namespace()
    };
    let r: Report = run(&c, &o).expect("run");
    assert!(r.passed, "{:#?}", r.checks);
    assert_eq!(r.leftovers_removed, [format!("{NS}/killed2")]);
    assert!(r.cleaned_up);
    assert!(api.get(TURN).is_none(), "given back");
    // The takeover was an update carrying the resourceVersion read.
    assert!(
        api.requests()
            .iter()
            .any(|(m, p)| m == "PUT" && p.ends_with("/configmaps/calicoctl-win-verify-run")),
        "{:?}",
        api.requests()
    );
}

/// A run whose turn another run took over while it ran (the turn's resourceVersion is no
/// longer the one it wrote) leaves that turn alone when it stops: the delete's precondition
/// is refused, 409, and the other run keeps its turn.
#[test]
fn a_turn_taken_over_meanwhile_is_not_given_back_by_the_run_that_lost_it() {
    let (api, dir) = cluster();
    // The server never gets Ready: the run waits for it until it is stopped.
    api.lock().dataplane.never_ready = true;
    let c = connect(&api, &dir);
    let o = in_namespace();
    let stop = o.stop.clone();
    let running = std::thread::spawn(move || run(&c, &o).expect("run"));
    let made = || {
        api.lock()
            .objects
            .contains_key(&format!("/api/v1/namespaces/{NS}/pods/server"))
    };
    for _ in 0..600 {
        if made() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(made(), "the run made its pods");
    // Another run takes the turn over (as an update would: a new resourceVersion).
    let mut turn = api.get(TURN).expect("the run's turn");
    turn["data"]["run"] = json!("other");
    turn["metadata"]["resourceVersion"] = json!("9999");
    api.put(TURN, turn);
    stop.request();
    let r = running.join().expect("joins");
    assert!(r.interrupted, "{r:#?}");
    let kept = api.get(TURN).expect("the other run's turn is kept");
    assert_eq!(kept["data"]["run"], "other");
}

/// A renewal of this run's own that lands between the release's read of the turn and its
/// delete (one the run gave up waiting for that the server committed all the same) moves
/// the turn's resourceVersion: the delete's precondition meets a 409, the turn is read
/// again, still this run's, and deleted by the version read, so the next run need not wait
/// out the lease.
#[test]
fn a_renewal_landing_before_the_turns_delete_does_not_leave_the_turn_behind() {
    let (api, dir) = cluster();
    api.lock().touched_before_delete.insert(TURN.into(), 1);
    let c = connect(&api, &dir);
    let r = run(&c, &in_namespace()).expect("run");
    assert!(r.passed && r.cleaned_up, "{r:#?}");
    assert_eq!(
        api.lock().touched_before_delete[TURN],
        0,
        "the renewal landed"
    );
    assert!(api.get(TURN).is_none(), "{:?}", api.get(TURN));
    let deletes = api
        .requests()
        .iter()
        .filter(|(m, p)| m == "DELETE" && p.starts_with(TURN))
        .count();
    assert_eq!(deletes, 2, "one refused, one by the version read again");
    // Each delete of the turn carries its uid as a precondition (a turn made again under
    // the name by another run is another object, and stays).
    let uid = api.lock().delete_options.clone();
    let turns: Vec<_> = uid.iter().filter(|(p, _)| p == TURN).collect();
    assert_eq!(turns.len(), 2, "{turns:?}");
    for (_, options) in turns {
        let want = options["preconditions"]["uid"].as_str();
        assert!(want.is_some_and(|u| !u.is_empty()), "{options}");
    }
}

/// A turn whose delete meets a second 409 while it is still this run's (two renewals of its
/// own landing, say) is left to run out within its lease: the report does not say it was
/// cleaned up, and says the turn remains until its lease runs out.
#[test]
fn a_turn_not_given_back_is_not_reported_cleaned_up() {
    let (api, dir) = cluster();
    api.lock().touched_before_delete.insert(TURN.into(), 2);
    let c = connect(&api, &dir);
    let r = run(&c, &in_namespace()).expect("run");
    assert!(r.passed, "{r:#?}");
    assert!(!r.cleaned_up, "{r:#?}");
    let why = r.clean_up_error.clone().unwrap_or_default();
    assert!(why.contains("remains until its lease runs out"), "{why}");
    assert!(api.get(TURN).is_some(), "the turn is left to its lease");
}

/// A run whose every check was judged and passed, whose turn another run takes over while
/// its clean-up waits for a pod that stays Terminating, still passed: the loss came after
/// the checks, so it is the clean-up's error, not a lost lease that fails the run.
#[test]
fn a_turn_lost_during_the_clean_up_does_not_fail_a_passed_run() {
    let (api, dir) = cluster();
    api.lock().dataplane.pods_linger = true;
    let c = connect(&api, &dir);
    let o = Options {
        timeout: Duration::from_secs(20),
        renew: Duration::from_millis(200),
        ..in_namespace()
    };
    // Another run takes the turn over as this one's clean-up deletes its first pod (a
    // scripted event, under the server's lock): the clean-up then waits for its pods.
    api.when("DELETE", &format!("/api/v1/namespaces/{NS}/pods/"), |st| {
        let turn = st.objects.get_mut(TURN).expect("the run's turn");
        turn["data"]["run"] = json!("other");
        turn["metadata"]["resourceVersion"] = json!("9999");
    });
    let running = std::thread::spawn(move || run(&c, &o).expect("run"));
    let r = running.join().expect("joins");
    assert!(r.passed, "{r:#?}");
    assert!(r.lease_lost.is_none(), "{r:#?}");
    assert!(!r.cleaned_up, "{r:#?}");
    let why = r.clean_up_error.clone().unwrap_or_default();
    assert!(why.contains("took this run's turn"), "{why}");
    assert_eq!(api.get(TURN).expect("kept")["data"]["run"], "other");
}

/// A run killed outright (no signal it can catch: a console's process ended, its pod's
/// container stopped without one) holds the turn for at most its lease, one minute, not for
/// the whole of a run's bounds: the run renews it while it lives.
#[cfg(unix)]
#[test]
fn a_run_killed_outright_holds_the_turn_for_its_lease_only() {
    let (api, dir) = cluster();
    api.lock().dataplane.never_ready = true;
    let kubeconfig = api.kubeconfig(dir.path(), None);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("calicoctl-win"))
        .args([
            "verify",
            "--node",
            "win-a",
            "--namespace",
            NS,
            "--kubeconfig",
        ])
        .arg(&kubeconfig)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let made = || {
        api.lock()
            .objects
            .contains_key(&format!("/api/v1/namespaces/{NS}/pods/server"))
    };
    for _ in 0..600 {
        if made() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(made(), "the run made its pods");
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
    let turn = api.get(TURN).expect("the killed run's turn");
    let expires: jiff::Timestamp = turn["data"]["expires"]
        .as_str()
        .expect("expires")
        .parse()
        .expect("a time");
    let left = expires.as_second() - jiff::Timestamp::now().as_second();
    assert!(left <= 60, "held {left} s more: {turn}");
}

/// The probe pods made, read while the run waits for its server (never Ready): each pod,
/// with the run's ConfigMap in that namespace, once the pods are there.
fn pods_while_running(api: &FakeApi, dir: &tempfile::TempDir, o: Options) -> Vec<(Value, Value)> {
    api.lock().dataplane.never_ready = true;
    let c = connect(api, dir);
    let stop = o.stop.clone();
    let running = std::thread::spawn(move || run(&c, &o).expect("run"));
    let servers = || {
        let st = api.lock();
        st.objects
            .iter()
            .filter(|(p, _)| p.contains("/pods/"))
            .map(|(p, v)| {
                let ns_path = &p[..p.find("/pods/").expect("a pod path")];
                let cm = format!("{ns_path}/configmaps/calicoctl-win-verify-run");
                (v.clone(), st.objects.get(&cm).cloned().unwrap_or_default())
            })
            .collect::<Vec<_>>()
    };
    for _ in 0..600 {
        if servers()
            .iter()
            .any(|(p, _)| p["metadata"]["name"] == "server")
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let found = servers();
    stop.request();
    running.join().expect("joins");
    assert!(!found.is_empty(), "the run made its pods");
    found
}

/// Every probe pod has a controller, the run's ConfigMap in its namespace (by its uid), so
/// that a drain without `--force` (kubectl's `unreplicatedFilter`, calicoctl-win's own)
/// evicts it instead of refusing the node; no `blockOwnerDeletion`.
fn assert_controlled(found: &[(Value, Value)]) {
    for (pod, cm) in found {
        let refs = &pod["metadata"]["ownerReferences"];
        assert_eq!(refs[0]["kind"], "ConfigMap", "{pod}");
        assert_eq!(refs[0]["name"], "calicoctl-win-verify-run", "{pod}");
        assert_eq!(refs[0]["controller"], true, "{pod}");
        assert!(refs[0]["blockOwnerDeletion"].is_null(), "{pod}");
        assert!(
            cm["metadata"]["uid"].is_string(),
            "the ConfigMap exists: {pod}"
        );
        assert_eq!(refs[0]["uid"], cm["metadata"]["uid"], "{pod}");
        let typed: k8s_openapi::api::core::v1::Pod =
            serde_json::from_value(pod.clone()).expect("a pod");
        let s = calicoctl_win::cluster::drain::select(&[typed]);
        assert!(s.unmanaged.is_empty() && s.evict.len() == 1, "{s:?}");
    }
}

#[test]
fn probe_pods_in_a_namespace_given_are_controlled_by_the_turn() {
    let (api, dir) = cluster();
    let found = pods_while_running(&api, &dir, in_namespace());
    assert_controlled(&found);
}

#[test]
fn probe_pods_in_a_namespace_of_their_own_are_controlled_by_the_runs_configmap() {
    let (api, dir) = super::verify::cluster();
    let o = Options {
        policy_wait: Duration::from_secs(3),
        settle: Duration::from_secs(2),
        ..Options::for_node("win-a")
    };
    let found = pods_while_running(&api, &dir, o);
    assert_controlled(&found);
}

/// A killed run's pod left on a node that is gone, or whose kubelet is down (not Ready),
/// stays Terminating after its delete (kube-apiserver's graceful delete waits for a kubelet
/// that never confirms): the takeover deletes it with grace 0 and the run goes on, instead
/// of making a pod of the same name (409 AlreadyExists).
#[test]
fn a_killed_runs_pod_terminating_on_a_dead_node_is_deleted_at_once_on_takeover() {
    let (api, dir) = cluster();
    let mut dead = meta("v1", "Node", "win-dead", None);
    dead["status"]["conditions"] = json!([{"type": "Ready", "status": "Unknown"}]);
    api.put("/api/v1/nodes/win-dead", dead);
    held_turn(&api, "killed3", jiff::Timestamp::now().as_second() - 60);
    for (name, node) in [("client-local", "win-dead"), ("server", "gone-node")] {
        let mut pod = meta("v1", "Pod", name, Some(NS));
        pod["metadata"]["labels"] = json!({"app.kubernetes.io/managed-by": "calicoctl-win-verify"});
        pod["metadata"]["uid"] = json!(format!("old-{name}"));
        pod["spec"]["nodeName"] = json!(node);
        api.put(&format!("/api/v1/namespaces/{NS}/pods/{name}"), pod);
    }
    let c = connect(&api, &dir);
    let o = Options {
        timeout: Duration::from_secs(20),
        ..in_namespace()
    };
    let r: Report = run(&c, &o).expect("run");
    assert!(r.passed, "{:#?}", r.checks);
    assert_eq!(r.leftovers_removed, [format!("{NS}/killed3")]);
    assert!(r.cleaned_up);
}

/// A run whose turn another run took over deletes only the pods it made, by their uids: the
/// new holder's pod of the same name, its Service and its turn stay, and the report says so.
#[test]
fn a_run_that_lost_its_turn_deletes_only_its_own_pods() {
    let (api, dir) = cluster();
    api.lock().dataplane.never_ready = true;
    let c = connect(&api, &dir);
    let o = in_namespace();
    let stop = o.stop.clone();
    let running = std::thread::spawn(move || run(&c, &o).expect("run"));
    let server = format!("/api/v1/namespaces/{NS}/pods/server");
    let local = format!("/api/v1/namespaces/{NS}/pods/client-local");
    let made = || api.lock().objects.contains_key(&local);
    for _ in 0..600 {
        if made() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(made(), "the run made its pods");
    // Another run takes the turn over and makes its own server (a new uid).
    let mut turn = api.get(TURN).expect("the run's turn");
    turn["data"]["run"] = json!("other");
    turn["metadata"]["resourceVersion"] = json!("9999");
    api.put(TURN, turn);
    let mut theirs = api.get(&server).expect("server");
    theirs["metadata"]["uid"] = json!("uid-theirs");
    api.put(&server, theirs);
    stop.request();
    let r = running.join().expect("joins");
    assert!(
        r.clean_up_error
            .as_deref()
            .is_some_and(|e| e.contains("another run")),
        "{r:#?}"
    );
    assert_eq!(api.get(TURN).expect("their turn")["data"]["run"], "other");
    assert_eq!(
        api.get(&server).expect("their server")["metadata"]["uid"],
        "uid-theirs"
    );
    assert!(
        api.get(&format!("/api/v1/namespaces/{NS}/services/server"))
            .is_some()
    );
    assert!(api.get(&local).is_none(), "its own pod deleted");
}

/// Another run takes this run's turn over while its policy check waits (Felix never applies
/// the policy): the run stops and ends with its report, not an error: the checks judged by
/// then keep their verdicts, the policy checks are `stopped`, and the `verify-lease-lost`
/// finding names the turn; the run fails with exit 1, and the other run's turn stays.
#[test]
fn a_turn_taken_over_mid_run_ends_with_the_checks_done_and_a_finding() {
    use calicoctl_win::error::Diagnose;
    use calicoctl_win::installed::health::Code;
    use calicoctl_win::verify::judge::Outcome;
    use calicoctl_win::verify::matrix::CheckId;
    let (api, dir) = cluster();
    api.lock().dataplane.policy_applies_after = None;
    let c = connect(&api, &dir);
    let mut o = in_namespace();
    o.policy_wait = Duration::from_secs(30);
    o.renew = Duration::from_millis(200);
    // Another run takes the turn over as the run makes its policy (a scripted event, under
    // the server's lock): the policy check then waits, until the run is stopped.
    let policy = format!("/apis/networking.k8s.io/v1/namespaces/{NS}/networkpolicies");
    let made = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = made.clone();
    api.when("POST", &policy, move |st| {
        let turn = st.objects.get_mut(TURN).expect("the run's turn");
        turn["data"]["run"] = json!("other");
        turn["metadata"]["resourceVersion"] = json!("9999");
        seen.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    let r = run(&c, &o).expect("a report");
    assert!(
        made.load(std::sync::atomic::Ordering::SeqCst),
        "the run made its policy"
    );
    let lost = r.lease_lost.as_ref().expect("the finding");
    assert_eq!(lost.code, Code::VerifyLeaseLost);
    assert!(
        lost.message
            .contains("configmaps/calicoctl-win-verify-run in namespace calicoctl-win-verify")
            && lost.message.contains("another run took the turn"),
        "{lost:?}"
    );
    assert!(!r.passed && !r.interrupted && !r.timed_out, "{r:#?}");
    let of = |id| r.checks.iter().find(|v| v.check == id).map(|v| &v.outcome);
    assert_eq!(of(CheckId::PodToPod), Some(&Outcome::Pass), "{r:#?}");
    assert_eq!(of(CheckId::ClusterIp), Some(&Outcome::Pass), "{r:#?}");
    assert_eq!(
        of(CheckId::PolicyApplied),
        Some(&Outcome::Stopped),
        "{r:#?}"
    );
    assert_eq!(
        of(CheckId::PolicyRemoved),
        Some(&Outcome::Stopped),
        "{r:#?}"
    );
    let failed = calicoctl_win::verify::failure::of(&r, 120).expect("failed");
    assert!(failed.to_string().contains("lease"), "{failed}");
    let exit = failed.diagnose().expect("diagnosed").exit;
    assert_eq!(exit as i32, 1, "{failed}");
    let kept = api.get(TURN).expect("the other run's turn is kept");
    assert_eq!(kept["data"]["run"], "other");
}

/// Another run takes the turn over after this run's clean-up saw it still its own, and makes
/// its Service and policy (the same names, new uids) before this run's deletes of them
/// arrive: this run deletes its own by their uids (`preconditions`), and the other run's stay.
#[test]
fn a_turn_taken_over_during_the_clean_up_keeps_the_new_holders_service_and_policy() {
    let (api, dir) = cluster();
    let service = format!("/api/v1/namespaces/{NS}/services/server");
    let policy =
        format!("/apis/networking.k8s.io/v1/namespaces/{NS}/networkpolicies/deny-server-ingress");
    let mut theirs_service = meta("v1", "Service", "server", Some(NS));
    theirs_service["metadata"]["uid"] = json!("uid-theirs");
    let mut theirs_policy = meta(
        "networking.k8s.io/v1",
        "NetworkPolicy",
        "deny-server-ingress",
        Some(NS),
    );
    theirs_policy["metadata"]["uid"] = json!("uid-theirs");
    let c = connect(&api, &dir);
    let o = in_namespace();
    // The takeover is armed for the first delete of a pod of the run's, which comes in its
    // clean-up (after the clean-up's look at the turn): the turn updated as another run's.
    let local = format!("/api/v1/namespaces/{NS}/pods/client-local");
    let at = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second() + 60).expect("time");
    let turn = json!({"mergeOnto": {"data": {"run": "other", "expires": at.to_string()}}});
    api.lock().written_before_delete.insert(
        local.clone(),
        vec![
            (TURN.to_owned(), turn),
            (service.clone(), theirs_service),
            (policy.clone(), theirs_policy),
        ],
    );
    let running = std::thread::spawn(move || run(&c, &o).expect("run"));
    let r = running.join().expect("joins");
    let kept = |p: &str| api.get(p).map(|o| o["metadata"]["uid"].clone());
    assert_eq!(kept(&service), Some(json!("uid-theirs")), "their Service");
    assert_eq!(kept(&policy), Some(json!("uid-theirs")), "their policy");
    assert_eq!(api.get(TURN).expect("their turn")["data"]["run"], "other");
    assert!(!r.cleaned_up, "{r:#?}");
    assert!(api.get(&local).is_none(), "its own pod deleted");
    // Its own were asked to go, each by its own uid: the other run's objects, at the same
    // paths, would pass as kept also if no delete had been sent.
    let options = api.lock().delete_options.clone();
    for path in [&service, &policy] {
        let sent: Vec<&Value> = options
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, o)| &o["preconditions"]["uid"])
            .collect();
        assert!(
            !sent.is_empty() && sent.iter().all(|u| u.is_string() && **u != "uid-theirs"),
            "{path}: {sent:?}"
        );
    }
}

/// Another run takes the turn over just before this run's delete of it (the 409, and the
/// read after it shows the other run's): the clean-up is not reported clean, and says the
/// turn was taken over.
#[test]
fn a_turn_taken_over_at_its_give_back_is_not_reported_cleaned_up() {
    let (api, dir) = cluster();
    let c = connect(&api, &dir);
    let o = in_namespace();
    // Armed before the run: the turn is updated as another run's just before its delete.
    let at = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second() + 60).expect("time");
    let turn = json!({"mergeOnto": {"data": {"run": "other", "expires": at.to_string()}}});
    api.lock()
        .written_before_delete
        .insert(TURN.to_owned(), vec![(TURN.to_owned(), turn)]);
    let r = run(&c, &o).expect("run");
    assert!(r.passed, "{r:#?}");
    assert!(!r.cleaned_up, "{r:#?}");
    let why = r.clean_up_error.clone().unwrap_or_default();
    assert!(why.contains("took this run's turn"), "{why}");
    assert_eq!(api.get(TURN).expect("their turn")["data"]["run"], "other");
}

/// Pods that outlast the clean-up (their kubelet has not confirmed them gone) with the turn
/// still this run's: the turn is handed on for the next run, and the report says the pods are
/// still terminating and the next run deletes them, never that what the run made is kept.
#[test]
fn pods_outlasting_the_clean_up_are_said_to_be_left_to_the_next_run() {
    let (api, dir) = cluster();
    api.lock().dataplane.pods_linger = true;
    let c = connect(&api, &dir);
    let o = Options {
        timeout: Duration::from_secs(20),
        ..in_namespace()
    };
    let r = run(&c, &o).expect("run");
    assert!(r.passed, "{r:#?}");
    assert!(!r.cleaned_up, "{r:#?}");
    let why = r.clean_up_error.clone().unwrap_or_default();
    assert!(why.contains("its pods are still terminating"), "{why}");
    assert!(why.contains("the next run deletes them"), "{why}");
    let turn = api.get(TURN).expect("handed on");
    assert!(turn["data"]["expires"].is_string(), "{turn}");
}

/// The number (from 1, as `FakeApi::timeout_write_at` counts) of the first create whose path
/// ends with `tail` among the writes of a passing run in the namespace given, on a cluster of
/// its own.
fn write_number(tail: &str) -> usize {
    let (api, dir) = cluster();
    let c = connect(&api, &dir);
    let r = run(&c, &in_namespace()).expect("run");
    assert!(r.passed, "{:#?}", r.checks);
    let writes: Vec<_> = api
        .writes()
        .into_iter()
        .filter(|(_, p)| !p.ends_with("/tokenreviews"))
        .collect();
    1 + writes
        .iter()
        .position(|(m, p)| m == "POST" && p.ends_with(tail))
        .expect("the create")
}

/// A create of the run (the Service, a pod, the policy) that commits but is answered 504, as
/// kube-apiserver answers a write that outlived its deadline: the run cannot name what it made
/// by uid, so its clean-up hands the turn on instead of giving it back, and the next run takes
/// it over, sweeps by name and leaves nothing. (Given back, the object stayed for good: each
/// later run's create of its name met 409 and its clean-up skipped it again.)
#[test]
fn a_create_answered_with_a_timeout_is_left_to_the_next_run_which_leaves_nothing() {
    for tail in ["/services", "/pods", "/networkpolicies"] {
        let n = write_number(tail);
        let (api, dir) = cluster();
        let c = connect(&api, &dir);
        api.timeout_write_at(n);
        let first = run(&c, &in_namespace());
        let turn = api
            .get(TURN)
            .unwrap_or_else(|| panic!("{tail}: the turn handed on"));
        assert!(turn["data"]["expires"].is_string(), "{tail}: {turn}");
        if let Ok(r) = &first {
            assert!(!r.cleaned_up, "{tail}: {r:#?}");
        }
        let r = run(&c, &in_namespace()).expect("the next run");
        assert!(r.passed, "{tail}: {:#?}", r.checks);
        assert_eq!(r.leftovers_removed.len(), 1, "{tail}: {r:#?}");
        assert!(r.cleaned_up, "{tail}: {r:#?}");
        let inside = format!("/namespaces/{NS}/");
        let left: Vec<String> = api
            .lock()
            .objects
            .keys()
            .filter(|p| p.contains(&inside))
            .cloned()
            .collect();
        assert!(left.is_empty(), "{tail}: {left:?}");
    }
}

/// An administrator's own Service `server` (no owner label) in the namespace given: the run's
/// create of its Service meets 409 AlreadyExists, which says nothing of ours, so the turn is
/// given back, not handed on, and no run deletes that Service (a 409 counted as "may have made
/// it" handed the turn on and the next run swept the Service by name).
#[test]
fn an_administrators_service_of_the_probes_name_is_never_swept() {
    let (api, dir) = cluster();
    let path = format!("/api/v1/namespaces/{NS}/services/server");
    let mut theirs = meta("v1", "Service", "server", Some(NS));
    theirs["metadata"]["uid"] = json!("uid-admins");
    api.put(&path, theirs);
    let c = connect(&api, &dir);
    for _ in 0..2 {
        let first = run(&c, &in_namespace());
        assert!(first.is_err() || first.as_ref().is_ok_and(|r| !r.passed));
        assert!(api.get(TURN).is_none(), "the turn given back");
        let kept = api.get(&path).map(|s| s["metadata"]["uid"].clone());
        assert_eq!(kept, Some(json!("uid-admins")));
    }
}
