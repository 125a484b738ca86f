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

/// An earlier run's zip that cannot be removed (on Windows, open in Explorer: a sharing
/// violation) stays listed in the new index's `earlier_zips`: the next run takes the
/// directory, with this run's new zips, and removes it then.
#[test]
fn a_removal_failing_midway_leaves_a_directory_the_next_run_takes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path();
    let earlier = index_of(vec![ok_line("win-a"), ok_line("win-b")]);
    write_index(out, &earlier).expect("index");
    for zip in ["win-a.zip", "win-b.zip"] {
        fs_err::write(out.join(zip), "old").expect("zip");
    }
    let taken = prepare_out(out).expect("taken");
    // This run gathered win-c only (win-a and win-b are no longer selected).
    fs_err::write(out.join("win-c.zip"), "new").expect("zip");
    let mut index = index_of(vec![ok_line("win-c")]);
    let open_elsewhere = |p: &Path| {
        if p.ends_with("win-a.zip") {
            Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied))
        } else {
            fs_err::remove_file(p)
        }
    };
    let not_removed = finish_with(&taken, &mut index, open_elsewhere).expect("index written");
    assert!(not_removed.is_some(), "the removal's error, for a warning");
    drop(taken);
    assert!(out.join("win-a.zip").exists() && !out.join("win-b.zip").exists());
    assert_eq!(index.earlier_zips, ["win-a.zip"]);

    let again = prepare_out(out).expect("the next run takes it");
    let mut index = index_of(vec![ok_line("win-c")]);
    finish(&again, &mut index).expect("finished");
    assert!(!out.join("win-a.zip").exists(), "removed by the next run");
    assert!(out.join("win-c.zip").exists());
    assert!(index.earlier_zips.is_empty());
}

/// A rerun in which a node asked failed (its pod not answering, the run's timeout) keeps that
/// node's earlier zip, its last bundle, listed in `earlier_zips`; a node no longer asked loses
/// its zip; the next run takes the directory.
#[test]
fn a_node_failing_now_keeps_its_earlier_bundle() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path();
    write_index(out, &index_of(vec![ok_line("win-a"), ok_line("win-b")])).expect("index");
    for zip in ["win-a.zip", "win-b.zip"] {
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
    let mut index = index_of(vec![failed]);
    let not_removed = finish(&taken, &mut index).expect("index written");
    drop(taken);
    assert!(not_removed.is_none());
    assert_eq!(
        fs_err::read_to_string(out.join("win-a.zip")).expect("kept"),
        "old"
    );
    assert!(!out.join("win-b.zip").exists(), "no longer asked: removed");
    assert_eq!(index.earlier_zips, ["win-a.zip"]);
    prepare_out(out).expect("the next run takes it");
}
