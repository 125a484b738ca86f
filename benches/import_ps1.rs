//! config.ps1 import benchmark (not a test): files of 10k, 40k and 160k lines (every line a
//! distinct variable, the worst case for a lookup per line) imported in process; prints the
//! time of each and how it grows per fourfold length (linear: about 4; quadratic: about 16).
//! Before the importer kept its values in a map, 40k lines took 8.6 s.
//!
//! Run with `cargo bench --bench import_ps1`.

use calicoctl_win::config::import_ps1;
use std::time::Instant;

fn file(lines: usize) -> String {
    (0..lines)
        .map(|i| format!("Set-EnvVarIfNotSet -var \"FELIX_SETTING_{i}\" -defaultValue \"v{i}\"\n"))
        .collect()
}

fn main() {
    let mut last: Option<f64> = None;
    for lines in [10_000usize, 40_000, 160_000] {
        let text = file(lines);
        let start = Instant::now();
        let import = import_ps1::import(&text);
        let yaml = import_ps1::to_yaml(&import, "config.ps1");
        let secs = start.elapsed().as_secs_f64();
        assert_eq!(import.imported.len(), lines);
        let growth = last.map_or(String::new(), |l| {
            format!(", x{:.1} for 4x the lines", secs / l)
        });
        println!(
            "import-ps1 {lines:>7} lines: {:.3} s ({} bytes of YAML){growth}",
            secs,
            yaml.len()
        );
        last = Some(secs);
    }
}
