#!/usr/bin/env bash
# The Windows exe's import table holds no user32.dll, gdi32.dll or shell32.dll. Microsoft's
# HandlerRoutine and SetConsoleCtrlHandler documentation (Remarks): a console process that
# loads gdi32.dll or user32.dll, itself or through a function that does (the Shell functions),
# is taken for a Windows application, and its handler is not called for CTRL_LOGOFF_EVENT or
# CTRL_SHUTDOWN_EVENT, the event a HostProcess container's stop sends (src/host/stop.rs); the
# stopped run would then not delete what it made. shell32.dll loads user32.dll.
# It reads the exe's own imports (objdump -p); what the DLLs it imports load in turn is not
# seen here (docs/commands/fleet.md, "Stopping the pods").
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
