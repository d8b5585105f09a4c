; The local-mcp installer for Windows, built with NSIS (Debian's `makensis`)
; by scripts/package-windows.sh — Tauri's own NSIS bundler downloads its
; plug-ins at build time, which this project's build machines cannot.
; Per-user (no administrator rights): installs the desktop app and the
; headless server under %LOCALAPPDATA%\Programs\local-mcp, adds a Start-menu
; entry and an uninstaller listed in Apps & features.
;
; Verified on Linux CI under Wine (`npm run check:platforms`): built, run
; silently (/S), the installed server started, the Start-menu entry and the
; uninstall entry present, then uninstalled silently with nothing left.
; Not verified here: the pages' look, and the desktop window itself (WebView2
; does not run under Wine).
;
; Defines from the build script: VERSION, SOURCE (folder with local-mcp.exe,
; local-mcp-server.exe, README.txt), ICON, OUTFILE.

; A 64-bit installer, as the programs it installs are: it also runs under a
; 64-bit-only Wine, where the default 32-bit stub cannot start.
Target amd64-unicode
; LZMA for releases; the build script's --debug check asks for zlib, several
; times faster on unstripped debug builds (the check is of the installer's
; behaviour, not its size).
!ifndef COMPRESSOR
  !define COMPRESSOR "/SOLID lzma"
!endif
SetCompressor ${COMPRESSOR}
RequestExecutionLevel user

!include "MUI2.nsh"
!include "LogicLib.nsh"
!include "x64.nsh"

!define NAME "local-mcp"
!define UNINSTALL_KEY "Software\Microsoft\Windows\CurrentVersion\Uninstall\${NAME}"
; The WebView2 Runtime's client key (Microsoft's documented detection).
!define WEBVIEW2_KEY "SOFTWARE\Microsoft\EdgeUpdate\Clients\{F3017226-FE2A-4295-8BDF-00C3A9A7E4C5}"

Name "${NAME}"
OutFile "${OUTFILE}"
InstallDir "$LOCALAPPDATA\Programs\${NAME}"
InstallDirRegKey HKCU "${UNINSTALL_KEY}" "InstallLocation"
VIProductVersion "${VERSION}.0"
VIAddVersionKey "ProductName" "${NAME}"
VIAddVersionKey "FileDescription" "${NAME} installer"
VIAddVersionKey "ProductVersion" "${VERSION}"
VIAddVersionKey "FileVersion" "${VERSION}"
VIAddVersionKey "LegalCopyright" "MIT licence"

!define MUI_ICON "${ICON}"
!define MUI_UNICON "${ICON}"
!define MUI_ABORTWARNING
!define MUI_FINISHPAGE_RUN "$INSTDIR\local-mcp.exe"
!define MUI_FINISHPAGE_RUN_TEXT "Start local-mcp"
!insertmacro MUI_PAGE_DIRECTORY
!insertmacro MUI_PAGE_INSTFILES
!insertmacro MUI_PAGE_FINISH
!insertmacro MUI_UNPAGE_CONFIRM
!insertmacro MUI_UNPAGE_INSTFILES
!insertmacro MUI_LANGUAGE "English"

Function .onInit
  ${IfNot} ${RunningX64}
    MessageBox MB_ICONSTOP "local-mcp needs 64-bit Windows." /SD IDOK
    Abort
  ${EndIf}
  SetRegView 64
FunctionEnd

Section "local-mcp" SecMain
  SectionIn RO
  SetOutPath "$INSTDIR"
  File "${SOURCE}\local-mcp.exe"
  File "${SOURCE}\local-mcp-server.exe"
  File "${SOURCE}\README.txt"
  WriteUninstaller "$INSTDIR\uninstall.exe"

  CreateShortcut "$SMPROGRAMS\${NAME}.lnk" "$INSTDIR\local-mcp.exe" "" "$INSTDIR\local-mcp.exe" 0

  WriteRegStr HKCU "${UNINSTALL_KEY}" "DisplayName" "${NAME}"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "DisplayVersion" "${VERSION}"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "Publisher" "local-mcp"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "DisplayIcon" "$INSTDIR\local-mcp.exe"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "InstallLocation" "$INSTDIR"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "UninstallString" '"$INSTDIR\uninstall.exe"'
  WriteRegStr HKCU "${UNINSTALL_KEY}" "QuietUninstallString" '"$INSTDIR\uninstall.exe" /S'
  WriteRegDWORD HKCU "${UNINSTALL_KEY}" "NoModify" 1
  WriteRegDWORD HKCU "${UNINSTALL_KEY}" "NoRepair" 1

  ; The desktop window needs the WebView2 Runtime (part of Windows 11 and of
  ; current Windows 10); the headless server does not. Say so rather than
  ; download it: this installer fetches nothing.
  ReadRegStr $0 HKLM "${WEBVIEW2_KEY}" "pv"
  ${If} $0 == ""
    ReadRegStr $0 HKCU "${WEBVIEW2_KEY}" "pv"
  ${EndIf}
  ${If} $0 == ""
  ${OrIf} $0 == "0.0.0.0"
    MessageBox MB_ICONINFORMATION "The local-mcp window needs Microsoft's WebView2 Runtime, which this PC lacks: get it from https://developer.microsoft.com/microsoft-edge/webview2/ . The headless server (local-mcp-server.exe) works without it." /SD IDOK
  ${EndIf}
SectionEnd

Section "Uninstall"
  SetRegView 64
  Delete "$INSTDIR\local-mcp.exe"
  Delete "$INSTDIR\local-mcp-server.exe"
  Delete "$INSTDIR\README.txt"
  Delete "$INSTDIR\uninstall.exe"
  RMDir "$INSTDIR"
  Delete "$SMPROGRAMS\${NAME}.lnk"
  DeleteRegKey HKCU "${UNINSTALL_KEY}"
  ; Start at login (Settings → desktop): the autostart entry the app wrote.
  DeleteRegValue HKCU "Software\Microsoft\Windows\CurrentVersion\Run" "${NAME}"
  ; The queue's database, settings and logs stay: they are the person's.
SectionEnd
