//! `split_command_line` against the real CommandLineToArgvW (shell32), under Wine in CI.

use crate::host::split_command_line;
use windows_sys::Win32::Foundation::LocalFree;
use windows_sys::Win32::UI::Shell::CommandLineToArgvW;

fn argv(line: &str) -> Vec<String> {
    let wide = super::ffi::wide(line);
    let mut n = 0i32;
    // SAFETY: `wide` is NUL-terminated and outlives the call; the result is read for `n`
    // entries and freed once with LocalFree, as the API documents.
    unsafe {
        let list = CommandLineToArgvW(wide.as_ptr(), &mut n);
        assert!(!list.is_null(), "CommandLineToArgvW failed for {line:?}");
        let out = (0..usize::try_from(n).unwrap_or(0))
            .map(|i| super::ffi::take_wide(*list.add(i)))
            .collect();
        LocalFree(list.cast());
        out
    }
}

#[test]
fn our_split_is_windows_own() {
    let lines = [
        r#""C:\Program Files\x.exe" "abc" d e"#,
        r#"C:\k\kubelet.exe a\\\b d"e f"g h"#,
        r#"x.exe a\\\"b c d"#,
        r#"x.exe a\\\\"b c" d e"#,
        r#"x.exe a"b"" c d"#,
        r#"x.exe "a""b" c"#,
        r#"x.exe "" "" x"#,
        r#"x.exe "C:\dir\\" next"#,
        r#"x.exe	tab	separated  "two  spaces""#,
        r#""C:\CalicoWindows\calicoctl-win.exe" service run node --install-root C:\CalicoWindows"#,
        r#"C:\CalicoWindows\calicoctl-win.exe service run felix --install-root "C:\Calico Windows""#,
    ];
    for line in lines {
        let (program, args) = split_command_line(line);
        let want = argv(line);
        assert_eq!(
            std::iter::once(program).chain(args).collect::<Vec<_>>(),
            want,
            "{line}"
        );
    }
}
