/work/main/tools/wine/computenetwork/target/x86_64-pc-windows-gnu/debug/deps/windows_link-27a34151b570f3aa.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/windows-link-0.2.1/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/windows-link-0.2.1/src/../readme.md

/work/main/tools/wine/computenetwork/target/x86_64-pc-windows-gnu/debug/deps/libwindows_link-27a34151b570f3aa.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/windows-link-0.2.1/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/windows-link-0.2.1/src/../readme.md

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/windows-link-0.2.1/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/windows-link-0.2.1/src/../readme.md:
