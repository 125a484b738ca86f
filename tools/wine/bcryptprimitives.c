/* A stand-in for bcryptprimitives.dll, which Wine 8.0 (Debian 12) lacks. Rust's standard
 * library (1.78+) imports ProcessPrng from it, so without this no Rust exe starts under that
 * Wine. Test-only: it is copied into the throw-away Wine prefix, never shipped. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length); /* RtlGenRandom, advapi32 */

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
