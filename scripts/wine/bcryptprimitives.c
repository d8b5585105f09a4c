/* A stand-in for Windows 10's bcryptprimitives.dll, for running our Windows
 * builds under Wine 8 only (docs/PLATFORMS.md). Rust's standard library
 * (since 1.78) takes random bytes from ProcessPrng in that DLL, which Wine 8
 * lacks; this one fills the buffer from RtlGenRandom (advapi32's
 * SystemFunction036), which Wine has. Installed into the test Wine prefix's
 * system32 by scripts/wine/run.sh; never shipped: Windows has the real DLL. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
