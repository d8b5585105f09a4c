#!/usr/bin/env bash
# Windows packages, built on Linux (docs/PLATFORMS.md): the installer from our
# own NSIS script (packaging/windows/local-mcp.nsi, Debian's makensis) and a
# portable zip, each holding the desktop app local-mcp.exe and the headless
# local-mcp-server.exe for x86_64-pc-windows-gnu. Written to
# ~/.cache/local-mcp/packages/ with a file listing beside each.
#
#   --debug   package the debug builds `npm run check:platforms` made
#             (stripped of debug info) instead of building release ones
#   --check   then, under Wine: install silently, run the installed server,
#             check the Start-menu entry and the uninstall entry, uninstall
#             silently and check that nothing is left
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cache="${LOCAL_MCP_CACHE:-$HOME/.cache/local-mcp}"
win=x86_64-pc-windows-gnu
profile=release
check=0
for arg in "$@"; do
  case "$arg" in
    --debug) profile=debug ;;
    --check) check=1 ;;
    *) echo "usage: $0 [--debug] [--check]" >&2; exit 2 ;;
  esac
done
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
bin="$cache/$win/$win/$profile"
out="$cache/packages"
stage="$out/stage"

if [ "$profile" = release ]; then
  bash scripts/setup-system.sh platforms
  for p in local-mcp-engine:local-mcp-server local-mcp:local-mcp; do
    RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR="$cache/$win" /usr/bin/cargo build --release --locked \
      -Zbuild-std=std,panic_abort --target "$win" -p "${p%%:*}" --bin "${p##*:}"
  done
fi
for exe in local-mcp.exe local-mcp-server.exe; do
  [ -f "$bin/$exe" ] || { echo "missing $bin/$exe: build it first (npm run check:platforms)" >&2; exit 1; }
done

rm -rf "$stage"
mkdir -p "$stage"
for exe in local-mcp.exe local-mcp-server.exe; do
  x86_64-w64-mingw32-strip --strip-debug -o "$stage/$exe" "$bin/$exe"
done
cat >"$stage/README.txt" <<EOF
local-mcp $version for Windows (x86_64)

local-mcp.exe         the desktop app: tray icon, the queue window, quick add
                      (needs Microsoft's WebView2 Runtime, part of Windows 11 and of current Windows 10)
local-mcp-server.exe  the headless server and the command line:
                      local-mcp-server.exe            serve on http://127.0.0.1:8000
                      local-mcp-server.exe --help     every command and setting

Your queue lives in %APPDATA%\\local-mcp; uninstalling leaves it.
EOF
# Windows line endings for Notepad.
sed -i 's/$/\r/' "$stage/README.txt"

setup="$out/local-mcp-$version-setup.exe"
zip="$out/local-mcp-$version-windows-x86_64.zip"
rm -f "$setup" "$zip"
compressor=()
[ "$profile" = debug ] && compressor=(-DCOMPRESSOR=zlib)
makensis -V2 "${compressor[@]}" -DVERSION="$version" -DSOURCE="$stage" -DICON="$root/icons/icon.ico" -DOUTFILE="$setup" \
  packaging/windows/local-mcp.nsi
(cd "$stage" && python3 -m zipfile -c "$zip" local-mcp.exe local-mcp-server.exe README.txt)
python3 -m zipfile -l "$zip" >"$zip.txt"
echo "installer: $setup ($(du -h "$setup" | cut -f1))"
echo "zip:       $zip ($(du -h "$zip" | cut -f1))"
cat "$zip.txt"

[ "$check" = 1 ] || exit 0

# Under Wine, in our prefix: install, run, uninstall.
run="$root/scripts/wine/run.sh"
export WINEPREFIX="$cache/wine"
"$run" cmd /c exit 0 # the prefix exists before we look into it
drive_c="$WINEPREFIX/drive_c"
user_dir="$(ls -d "$drive_c/users/$(id -un)" 2>/dev/null || ls -d "$drive_c"/users/* | grep -v Public | head -1)"
installed="$user_dir/AppData/Local/Programs/local-mcp"
shortcut="$user_dir/AppData/Roaming/Microsoft/Windows/Start Menu/Programs/local-mcp.lnk"
fail() { echo "installer check: $*" >&2; exit 1; }

timeout 120 "$run" "$setup" /S || fail "the silent install failed"
for f in local-mcp.exe local-mcp-server.exe README.txt uninstall.exe; do
  [ -f "$installed/$f" ] || fail "$f is not in $installed"
done
[ -f "$shortcut" ] || fail "no Start-menu entry at $shortcut"
timeout 60 "$run" reg query 'HKCU\Software\Microsoft\Windows\CurrentVersion\Uninstall\local-mcp' /v UninstallString \
  | grep -q uninstall.exe || fail "no uninstall entry in the registry"
v="$(timeout 60 "$run" "$installed/local-mcp-server.exe" --version | tr -d '\r')"
[ "$v" = "local-mcp-server $version" ] || fail "the installed server says '$v'"
(cd "$installed" && find . -type f | sort) >"$setup.txt"
echo "installed under Wine: $installed"
cat "$setup.txt"
echo "Start-menu entry: $shortcut"

# _?= runs the uninstaller in place, so the call returns when it is done.
timeout 120 "$run" "$installed/uninstall.exe" /S "_?=$(winepath -w "$installed" 2>/dev/null || echo 'C:\users\'"$(basename "$user_dir")"'\AppData\Local\Programs\local-mcp')" ||
  fail "the silent uninstall failed"
rm -f "$installed/uninstall.exe" # it cannot delete itself when run in place
for f in local-mcp.exe local-mcp-server.exe README.txt; do
  [ ! -e "$installed/$f" ] || fail "$f is still installed after uninstalling"
done
[ ! -e "$shortcut" ] || fail "the Start-menu entry is still there after uninstalling"
if timeout 60 "$run" reg query 'HKCU\Software\Microsoft\Windows\CurrentVersion\Uninstall\local-mcp' >/dev/null 2>&1; then
  fail "the uninstall entry is still in the registry"
fi
rmdir "$installed" 2>/dev/null || true
echo "uninstalled under Wine: nothing left"

# The portable zip: unpacked into any folder, its server runs from there.
portable="$(mktemp -d)"
python3 -m zipfile -e "$zip" "$portable"
v="$(timeout 60 "$run" "$portable/local-mcp-server.exe" --version | tr -d '\r')"
rm -rf "$portable"
[ "$v" = "local-mcp-server $version" ] || fail "the portable zip's server says '$v'"
echo "portable zip unpacked and run under Wine: $v"
