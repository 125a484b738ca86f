//! The probe pods' events read a page at a time, as kube-apiserver pages a list: an event past
//! the first page is read, and a server that never ends its list is read a bounded number of
//! pages.

use super::verify::{client, cluster};
use crate::support::fake_api::meta;
use calicoctl_win::verify::probe;
use serde_json::json;

const NS: &str = "calicoctl-win-verify-ev";

fn event(name: &str, uid: &str, reason: &str) -> serde_json::Value {
    let mut e = meta("v1", "Event", name, Some(NS));
    e["involvedObject"] = json!({"kind": "Pod", "name": "server", "uid": uid});
    e["reason"] = json!(reason);
    e["message"] = json!(format!("{reason} happened"));
    e
}

/// A namespace holding 1,200 events of other things before the server pod's own: the pod's
/// event, on the third page, is read and is the pod's.
#[test]
fn a_pods_event_past_the_first_page_is_read() {
    let (api, dir) = cluster();
    let mut pod = meta("v1", "Pod", "server", Some(NS));
    pod["metadata"]["uid"] = json!("server-uid");
    pod["metadata"]["labels"] = json!({"calicoctl-win.projectcalico.org/verify-run": "ev"});
    pod["spec"] = json!({"nodeName": "win-a"});
    pod["status"] = json!({"phase": "Pending"});
    api.put(&format!("/api/v1/namespaces/{NS}/pods/server"), pod);
    for i in 0..1200 {
        let name = format!("a-other-{i:05}");
        api.put(
            &format!("/api/v1/namespaces/{NS}/events/{name}"),
            event(&name, "other-uid", "Pulled"),
        );
    }
    api.put(
        &format!("/api/v1/namespaces/{NS}/events/z-server"),
        event("z-server", "server-uid", "FailedCreatePodSandBox"),
    );
    let c = client(&api, &dir);
    assert_eq!(probe::events(&c, NS, None).expect("events").len(), 1201);
    let run = calicoctl_win::verify::objects::Names::new("ev", false);
    let states = probe::pods(&c, (NS, &run)).expect("pods");
    assert_eq!(
        states[0].events,
        ["FailedCreatePodSandBox: FailedCreatePodSandBox happened"]
    );
    // A server whose every page says there is more is read `EVENTS_PAGES` pages, then left.
    api.lock().endless_lists = true;
    let before = api.requests().len();
    let read = probe::events(&c, NS, None).expect("events");
    let asked = api.requests().len() - before;
    assert_eq!(asked, probe::EVENTS_PAGES, "{asked}");
    assert!(!read.is_empty());
}
