mod config;
fn main() {}
