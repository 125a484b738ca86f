//! The single-stream inflate floor (not a test), for `scripts/bench-fetch.sh`: how long one
//! thread takes to inflate the largest entry of each zip given, with the zip crate and the
//! deflate backend (zlib-rs) that `fetch release` inflates with, into a sink. Prints one line
//! per zip: its path, the entry, and the median of 5 runs in seconds. No fetch can end sooner
//! after its download began than this (the largest entry cannot be split between cores).
//!
//! Run with `cargo bench --bench inflate -- ZIP...`.

use std::io::Read;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // cargo bench passes `--bench`.
    for path in std::env::args().skip(1).filter(|a| !a.starts_with("--")) {
        let file = std::fs::File::open(&path)?;
        let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file))?;
        let mut largest = (0, 0);
        for i in 0..zip.len() {
            let size = zip.by_index_raw(i)?.size();
            if size > largest.1 {
                largest = (i, size);
            }
        }
        let mut times = Vec::new();
        let mut name = String::new();
        for _ in 0..5 {
            let started = Instant::now();
            let mut entry = zip.by_index(largest.0)?;
            name = entry.name()?.into_owned();
            // Reading to the end also checks the CRC-32, as an extraction does.
            let mut buf = vec![0u8; 1 << 16];
            while entry.read(&mut buf)? > 0 {}
            times.push(started.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        println!("{path}\t{name}\t{:.4}", times[times.len() / 2]);
    }
    Ok(())
}
