use super::*;

fn addresses() -> Addresses {
    Addresses {
        namespace: "calicoctl-win-verify-x1".into(),
        names: crate::verify::objects::Names::new("x1", false),
        pods: [
            (Role::Server, "10.244.1.5".to_owned()),
            (Role::Local, "10.244.1.6".to_owned()),
        ]
        .into_iter()
        .collect(),
        service_ip: Some("10.96.0.20".into()),
        api_server_ip: Some("10.96.0.1".into()),
        cluster_domain: "cluster.local".into(),
    }
}

#[test]
fn names_addresses_and_outside_hosts_are_dialled_as_netexec_takes_them() {
    let a = addresses();
    let v6 = Target::External("[2001:db8::1]:80".into());
    let server = Target::Pod(Role::Server);
    for (to, has) in [
        // Through the client's pod proxy, to the server's address, which must answer its name.
        (
            &server,
            "/namespaces/calicoctl-win-verify-x1/pods/client-local:8080/proxy/dial?request=hostname&protocol=http&host=10.244.1.5&port=8080&tries=1",
        ),
        // A Windows pod resolves a single label (its namespace's suffix) or a fully qualified
        // name, never a partly qualified one (Kubernetes' DNS docs, Windows nodes).
        (&Target::ServiceName, "host=server&port=80&"),
        (
            &Target::KubernetesName,
            "host=kubernetes.default.svc.cluster.local&port=443",
        ),
        (&Target::ApiServerIp, "host=10.96.0.1&port=443"),
        // Each value encoded for the query: an address's colons too.
        (&v6, "request=%2F&"),
        (&v6, "host=%5B2001%3Adb8%3A%3A1%5D&port=80"),
    ] {
        let d = dial(Role::Local, to, &a).unwrap();
        assert!(d.path.contains(has), "{to:?}: {}", d.path);
    }
    let expect = |to: &Target| dial(Role::Local, to, &a).unwrap().expect;
    assert_eq!(expect(&server).as_deref(), Some("server"));
    assert_eq!(expect(&Target::ApiServerIp), None);
    // A pod without an address cannot be dialled: the pod-address check says why.
    assert_eq!(dial(Role::Local, &Target::Pod(Role::Linux), &a), None);
}

#[test]
fn netexecs_answers_are_read_as_it_writes_them() {
    let ok = answer(200, r#"{"responses":["server"]}"#);
    assert!(reached(&ok, Some("server")));
    assert!(!reached(&ok, Some("client-linux")), "another pod answered");
    let refused = answer(
        200,
        r#"{"errors":["Get \"http://10.244.1.5:8080/hostname\": dial tcp: connect: connection refused"]}"#,
    );
    assert!(matches!(refused, Answer::Failed(ref e) if e.len() == 1));
    assert!(!reached(&refused, None));
    let dns = answer(
        400,
        "host and/or port param are invalid. lookup server.ns: no such host\n",
    );
    assert!(matches!(dns, Answer::Unresolved(_)));
    let proxy = answer(
        503,
        "error trying to reach service: dial tcp 10.244.1.6:8080: i/o timeout",
    );
    assert!(matches!(proxy, Answer::NoProxy(ref s) if s.starts_with("HTTP 503")));
    assert!(matches!(answer(200, "<html>"), Answer::NoProxy(_)));
    // Neither key: netexec writes each only when not empty, and no error came.
    assert!(reached(&answer(200, "{}"), None));
}
