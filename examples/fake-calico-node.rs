//! A stand-in for calico-node.exe in the Wine tests and the real-Windows lifecycle test (a test
//! fixture, not a product binary). `-startup` (or `component node startup`)
//! does what calico-node's startup does to HNS, through the real HCN calls (the Wine ring's
//! stand-in computenetwork.dll): it creates the `Calico` network for the backend and VNI of
//! its environment, reusing a matching one as calico-node does, and exits with its code. Any
//! other component prints its arguments and one variable of its environment, then runs until
//! it is stopped.

use std::time::Duration;

/// The node's IPAM block: the fake API server's cluster gives win-1 this block.
#[cfg(windows)]
const BLOCK: &str = "10.244.1.0/26";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    println!(
        "fake calico-node {} FELIX_VXLANVNI={}",
        args.join(" "),
        std::env::var("FELIX_VXLANVNI").unwrap_or_default()
    );
    let startup = args.iter().any(|a| a == "-startup")
        || args.windows(2).any(|w| w[0] == "node" && w[1] == "startup");
    if startup {
        std::process::exit(startup_on_this_host());
    }
    loop {
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[cfg(windows)]
fn startup_on_this_host() -> i32 {
    let env = std::env::vars().collect();
    let host = calicoctl_win::host::windows::WindowsHost::new();
    match calicoctl_win::host::sim::calico_node::startup_on(&host, &env, BLOCK) {
        Ok((code, log)) => {
            print!("{log}");
            code
        }
        Err(e) => {
            println!("startup failed: {e}");
            1
        }
    }
}

#[cfg(not(windows))]
fn startup_on_this_host() -> i32 {
    println!("startup needs HNS: run this on Windows or under Wine");
    1
}
