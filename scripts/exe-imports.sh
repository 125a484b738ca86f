#!/usr/bin/env bash
# The Windows exe's import table holds no user32.dll, gdi32.dll or shell32.dll. Microsoft's
# HandlerRoutine and SetConsoleCtrlHandler documentation (Remarks): a console process that
# loads gdi32.dll or user32.dll, itself or through a function that does (the Shell functions),
# is taken for a Windows application, and its handler is not called for CTRL_LOGOFF_EVENT or
# CTRL_SHUTDOWN_EVENT, the event a HostProcess container's stop sends (src/host/stop.rs); the
# stopped run would then not delete what it made. shell32.dll loads user32.dll.
# What it checks: the exe's own import table (objdump -p), that is, the DLLs Windows' loader maps
# when the exe starts because the exe names them. What it does not: the DLLs those load in turn,
# or load later while the exe runs. The exe imports ole32.dll and oleaut32.dll (COM, for WMI
# and the firewall API), and Microsoft documents that oleaut32 makes a hidden top-level window
# (user32's) the first time some Automation functions, such as VariantChangeType, read the
# locale's settings (KB Q189427, "PRB: Oleaut32 Hidden Window Blocks Apps Broadcasting
# Messages"); COM itself makes a hidden window for a single-threaded apartment (Raymond Chen,
# "User interface code + multi-threaded apartment = death": OleMainThreadWnd), which the exe
# does not enter (it initialises COM multithreaded, src/host/windows/firewall.rs). So user32.dll
# may well be loaded at run time, and no Microsoft page lists what ole32/oleaut32 load. The
# real-Windows workflow (.github/workflows/windows.yml, "The running exe loads no user32.dll")
# samples the running exe's loaded modules for that; it has not run yet.
# Usage: scripts/exe-imports.sh EXE   (needs x86_64-w64-mingw32-objdump, from gcc-mingw-w64-x86-64)
# scripts/exe-size.sh runs it on the release exe it builds, so CI runs it.
set -euo pipefail
exe="${1:?usage: scripts/exe-imports.sh EXE}"
objdump="${OBJDUMP:-x86_64-w64-mingw32-objdump}"
dlls=$("$objdump" -p "$exe" | sed -n 's/^[[:space:]]*DLL Name: //p' | tr 'A-Z' 'a-z' | sort -u)
if [ -z "$dlls" ]; then
    echo "exe-imports: no import table read from $exe" >&2
    exit 2
fi
bad=$(printf '%s\n' "$dlls" | grep -xE 'user32\.dll|gdi32\.dll|shell32\.dll' || true)
if [ -n "$bad" ]; then
    echo "exe-imports: $exe imports $(echo $bad): its console handler would miss CTRL_SHUTDOWN_EVENT (a HostProcess container's stop); see scripts/exe-imports.sh" >&2
    exit 1
fi
echo "exe-imports: $exe imports none of user32.dll, gdi32.dll, shell32.dll ($(echo $dlls | wc -w) DLLs)"
