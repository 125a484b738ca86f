use super::*;
use crate::host::Files;
use crate::host::sim::SimHost;

/// A link above the HostProcess container's sandbox (`CONTAINER_SANDBOX_MOUNT_POINT` below
/// it: the sandbox's volume mount point, hcsshim's `C:\hpc\<id>` made by SYSTEM with the list
/// the drive root gives) is judged by its owner only, as a link in the sandbox is: this
/// program and its config are read through it. A link beside the sandbox whose name only
/// starts as the sandbox's does, or any link when no sandbox is said, is judged by who may
/// change it.
#[test]
fn a_link_above_the_sandbox_is_judged_by_its_owner_only() {
    let h = SimHost::in_memory("ws2022").expect("host");
    h.create_dir(r"C:\volume\id").expect("dir");
    h.create_dir(r"C:\hpc").expect("dir");
    let target = h.local_path(r"C:\volume").expect("local");
    let link = h.local_path(r"C:\hpc\mount").expect("local");
    std::os::unix::fs::symlink(&target, &link).expect("link");
    let path = r"C:\hpc\mount\id\felix.pos";
    // Administrators' link, its list inherited from the drive root: Users may change it.
    let (at, who) = untrusted_link(&h, path, None, None).expect("refused without a sandbox");
    assert_eq!(at, r"C:\hpc\mount");
    assert!(who.starts_with("Users may"), "{who}");
    for sandbox in [r"C:\hpc\mount\id\", r"C:\hpc\mount\id", r"C:\HPC\Mount\ID"] {
        assert_eq!(
            untrusted_link(&h, path, None, Some(sandbox)),
            None,
            "{sandbox}"
        );
    }
    for sandbox in [r"C:\hpc\mounted\id", r"C:\hpc\other"] {
        assert!(
            untrusted_link(&h, path, None, Some(sandbox)).is_some(),
            "{sandbox}"
        );
    }
    // Made by a user, who owns it: refused above the sandbox too.
    h.set_security(
        r"C:\hpc\mount",
        "O:BUD:(A;;FA;;;SY)(A;;FA;;;BA)(A;;FA;;;BU)",
    )
    .expect("a user's link");
    let (_, who) = untrusted_link(&h, path, None, Some(r"C:\hpc\mount\id\")).expect("refused");
    assert!(who.starts_with("its owner Users"), "{who}");
}
