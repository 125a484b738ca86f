//! A stand-in for calico-node.exe in the Wine service test: prints its arguments and one
//! variable of its environment, then runs until it is stopped.

use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    println!(
        "fake calico-node {} FELIX_VXLANVNI={}",
        args.join(" "),
        std::env::var("FELIX_VXLANVNI").unwrap_or_default()
    );
    loop {
        std::thread::sleep(Duration::from_millis(200));
    }
}
