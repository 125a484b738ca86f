//! One node's zip built by the real `diags --offline` (the program CalicoNode runs for each
//! `GET /diags`) on a simulated installed node whose calico-node token is in its token file, its
//! kubeconfig and its service logs, then gathered by `fleet diags` through the pod proxy with
//! RBAC enforced: the token is in no member of the zip that leaves the node.

use super::fleet_diags::{CALICO_NS, NS, SA, gatherer, line, node_with_pod, options, serve};
use crate::support::fake_api::FakeApi;
use crate::support::fake_api::diags::Answer;
use calicoctl_win::fleet::diags::{self, rights};
use std::io::Read;

/// An HTTP credential (client-go's round_trippers.go before its masking) and an environment's
/// password (the Calico CNI plugin's pod dump before v3.31.6, cni-plugin/pkg/k8s/k8s.go), in
/// no secret file: a literal replacement of known files' contents misses them.
const BASIC: &str = "planted: Authorization: Basic dXNlcjpodW50ZXIyeGJhc2lj\n";
const ENV: &str = "2025-06-01 10:00:00.000 [DEBUG][4711] cni-plugin/k8s.go 968: pod info &Pod{Spec:PodSpec{Containers:[]Container{Container{Name:app,Env:[]EnvVar{EnvVar{Name:DATASTORE_PASSWORD,Value:hunter2x,ValueFrom:nil,},},},},},}\n";

#[test]
fn a_nodes_token_is_in_no_member_of_its_gathered_zip() {
    let node = crate::support::Node::healthy().installed().build();
    let token = fs_err::read_to_string(node.c_drive("calicowindows/calico-kube-config.token"))
        .expect("calico-node's token")
        .trim()
        .to_owned();
    assert!(token.len() > 40, "a token: {token:?}");
    // The token in each service log the zip takes the tail of, as a program might print it.
    let logs = node.c_drive("calicowindows/logs");
    fs_err::create_dir_all(&logs).expect("logs");
    for name in ["calico-node.log", "calico-felix.log"] {
        let path = logs.join(name);
        let mut text = fs_err::read_to_string(&path).unwrap_or_default();
        text.push_str(&format!("planted: the token is {token}\n"));
        // Secrets on no file the node knows: only the redactor's shapes take them out.
        text.push_str(BASIC);
        text.push_str(ENV);
        fs_err::write(&path, text).expect("log");
    }
    let built = node.dir.path().join("win-1-diags.zip");
    let run = crate::support::on_node()
        .arg("--sim-host")
        .arg(node.sim())
        .args(["diags", "--offline", "--out-file"])
        .arg(&built)
        .output()
        .expect("diags --offline");
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{err}");
    let zip = fs_err::read(&built).expect("the zip");

    let api = FakeApi::start();
    node_with_pod(&api, "win-1", "10.0.0.10");
    serve(&api, "win-1", Answer::Bundle(zip.clone().into()));
    let (_dir, c, out) = gatherer(&api, &rights::manifests(SA, (NS, NS), CALICO_NS));
    let index = diags::gather(&c, &options(&out)).expect("gathers");
    assert!(line(&index, "win-1").sha256.is_some(), "{index:#?}");
    let gathered = fs_err::read(out.join("win-1.zip")).expect("gathered");
    assert_eq!(gathered, zip, "the zip gathered is the one the node built");

    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(&gathered)).expect("a zip");
    let (mut planted, mut basic, mut env) = (0, 0, 0);
    for i in 0..archive.len() {
        let mut member = archive.by_index(i).expect("member");
        let mut bytes = Vec::new();
        member.read_to_end(&mut bytes).expect("inflate");
        let name = member.name().map(|n| n.to_string()).unwrap_or_default();
        assert!(
            memchr::memmem::find(&bytes, token.as_bytes()).is_none(),
            "{name} holds calico-node's token"
        );
        for secret in ["dXNlcjpodW50ZXIyeGJhc2lj", "hunter2x"] {
            assert!(
                memchr::memmem::find(&bytes, secret.as_bytes()).is_none(),
                "{name} holds the planted {secret:?}"
            );
        }
        let text = String::from_utf8_lossy(&bytes);
        basic += text
            .matches("planted: Authorization: Basic <redacted>")
            .count();
        env += text
            .matches("{Name:DATASTORE_PASSWORD,Value:<redacted>,ValueFrom:nil,}")
            .count();
        planted += text.matches("planted: the token is <redacted>").count();
    }
    // The logs' lines are in the zip, their token taken out.
    assert!(
        planted >= 2,
        "the planted lines are not in the zip ({planted})"
    );
    assert!(
        basic >= 2 && env >= 2,
        "the planted credentials' lines are not in the zip ({basic}, {env})"
    );
}
