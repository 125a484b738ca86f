use super::*;

fn ok_line(node: &str) -> NodeBundle {
    NodeBundle {
        node: node.to_owned(),
        result: "ok",
        file: Some(format!("{node}.zip")),
        size: Some(1),
        sha256: Some("00".into()),
        reason: None,
        message: None,
        skipped: Vec::new(),
    }
}

fn index_of(nodes: Vec<NodeBundle>) -> Index {
    Index {
        gathered: nodes.len(),
        failed: 0,
        nodes,
        run_timed_out: false,
        earlier_zips: Vec::new(),
    }
}

/// A rerun keeps every earlier zip it did not replace (a node that failed now: its last
/// bundle; a node not asked), names them in `earlier_zips` and in its text, and the next run
/// takes the directory; a later run that gathers such a node replaces its zip and no longer
/// names it.
#[test]
fn a_rerun_keeps_the_earlier_bundles_it_did_not_replace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path();
    let earlier = index_of(vec![ok_line("win-a"), ok_line("win-b"), ok_line("win-c")]);
    write_index(out, &earlier).expect("index");
    for zip in ["win-a.zip", "win-b.zip", "win-c.zip"] {
        fs_err::write(out.join(zip), "old").expect("zip");
    }
    let taken = prepare_out(out).expect("taken");
    let failed = NodeBundle {
        result: "failed",
        file: None,
        size: None,
        sha256: None,
        ..ok_line("win-a")
    };
    fs_err::write(out.join("win-c.zip"), "new").expect("zip");
    let mut index = index_of(vec![failed, ok_line("win-c")]);
    finish(&taken, &mut index).expect("index written");
    drop(taken);
    for zip in ["win-a.zip", "win-b.zip"] {
        assert_eq!(fs_err::read_to_string(out.join(zip)).expect("kept"), "old");
    }
    assert_eq!(index.earlier_zips, ["win-a.zip", "win-b.zip"]);
    let text = fs_err::read_to_string(out.join("index.txt")).expect("text");
    assert!(
        text.contains("win-a.zip  kept from an earlier run"),
        "{text}"
    );

    let again = prepare_out(out).expect("the next run takes it");
    fs_err::write(out.join("win-a.zip"), "newer").expect("zip");
    let mut index = index_of(vec![ok_line("win-a")]);
    finish(&again, &mut index).expect("index written");
    assert_eq!(index.earlier_zips, ["win-b.zip", "win-c.zip"]);
}
