mod config;
mod render;
fn main() {}
