/work/main/tools/wine/computenetwork/target/x86_64-pc-windows-gnu/debug/deps/computenetwork-e3d5a98d9a05a77e.d: /work/main/clippy.toml src/lib.rs src/../../netstate.rs src/spy.rs Cargo.toml

/work/main/tools/wine/computenetwork/target/x86_64-pc-windows-gnu/debug/deps/libcomputenetwork-e3d5a98d9a05a77e.rmeta: /work/main/clippy.toml src/lib.rs src/../../netstate.rs src/spy.rs Cargo.toml

/work/main/clippy.toml:
src/lib.rs:
src/../../netstate.rs:
src/spy.rs:
Cargo.toml:

# env-dep:CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
# env-dep:CLIPPY_CONF_DIR
