#!/usr/bin/env bash
# npm run check:platforms — Windows and macOS from this Linux machine
# (docs/PLATFORMS.md has what each step proves and what it cannot):
#
#   x86_64-pc-windows-gnu   builds local-mcp-server.exe and the desktop
#                           local-mcp.exe; runs the engine's unit and
#                           integration tests under Wine (Cargo's target
#                           runner, scripts/wine/run.sh) but those named in
#                           wine_skip_list, each with why; one end-to-end run
#                           (the server under Wine, the Linux Python MCP SDK
#                           in a get_user_request loop, its page in Chromium);
#                           the NSIS installer (installed, run, uninstalled)
#                           and the portable zip (unpacked, run) under Wine.
#   aarch64-apple-darwin,   type-checks the engine (library, binary, tests) and
#   x86_64-apple-darwin     the desktop; C sources (bundled SQLite, …) are not
#                           compiled (no Apple SDK here) and are listed.
#
# Then prints a table: target × built/checked × tests passed, and each step's
# time. Debian's second toolchain (rustc-web, 1.96) builds the standard
# library for those targets from source (-Zbuild-std, RUSTC_BOOTSTRAP=1);
# the machine's own toolchain is left to the Linux build. One build folder
# serves all three targets, outside the clone like Cargo's in .ci/run:
# $LOCAL_MCP_CACHE/x86_64-pc-windows-gnu (default ~/.cache/local-mcp), so a
# second run builds only what changed, and the host's build scripts and
# proc-macros are built once for every target.
#
# PLATFORM_STEPS picks steps (default: all, in this order):
#   windows-build windows-desktop apple windows-tests windows-e2e windows-package actionlint
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cache="${LOCAL_MCP_CACHE:-$HOME/.cache/local-mcp}"
win=x86_64-pc-windows-gnu
win_dir="$cache/$win"
apple_dir="$win_dir" # one folder for every target (see apple())
win_out="$win_dir/$win/debug"
steps="${PLATFORM_STEPS:-windows-build windows-desktop apple windows-tests windows-e2e windows-package actionlint}"
mkdir -p "$cache/logs"
logs="$cache/logs"

step() { printf '\n==> %s\n' "$*"; }
wants() { [[ " $steps " == *" $1 "* ]]; }

# Results for the table, filled as steps finish.
declare -A built=() tests=() took=()
failed=()

# Run one named step, timing it; a failure is recorded and the next steps still run
# (the table says which), but the script fails at the end. Called after `||`,
# a step runs without errexit: each step function returns its commands' failures itself.
run_step() {
  local name="$1"
  shift
  wants "$name" || return 0
  step "$name"
  local start=$SECONDS rc=0
  "$@" || rc=$?
  took[$name]=$((SECONDS - start))
  if [ "$rc" != 0 ]; then
    failed+=("$name")
    echo "step $name failed (exit $rc)" >&2
  fi
}

bash scripts/setup-system.sh platforms
for tool in /usr/bin/rustc /usr/bin/cargo x86_64-w64-mingw32-gcc wine makensis; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/setup-system.sh platforms" >&2; exit 1; }
done
[ -d /usr/lib/rustlib/src/rust/library ] || { echo "missing rust-web-src (the standard library's sources)" >&2; exit 1; }

# Cargo for another target: Debian's rustc-web, the standard library built from source.
xcargo() {
  local dir="$1"
  shift
  RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR="$dir" \
    CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$root/scripts/wine/run.sh" \
    /usr/bin/cargo -Zbuild-std=std,panic_abort --locked "$@"
}
export -f xcargo
export root
# The engine and the crates it is made of (crates/*): each one's unit tests,
# and the engine's integration tests (`--test it`).
engine_packages="-p local-mcp-engine -p local-mcp-core -p local-mcp-queue -p local-mcp-clients -p local-mcp-serve -p local-mcp-cli"
export engine_packages

windows_build() {
  # The integration tests need the server binary, so this one build makes
  # local-mcp-server.exe too (a separate `cargo build` of it would compile the
  # engine once more, with the dev-dependencies' features left out).
  # shellcheck disable=SC2086 # the package list is words
  xcargo "$win_dir" test --no-run --target "$win" $engine_packages --lib --test it || return
  [ -f "$win_out/local-mcp-server.exe" ] || { echo "no $win_out/local-mcp-server.exe" >&2; return 1; }
  built[$win]="local-mcp-server.exe"
}

windows_desktop() {
  xcargo "$win_dir" build --target "$win" -p local-mcp --bin local-mcp || return
  built[$win]="${built[$win]:-} local-mcp.exe"
}

apple() {
  # Both targets in one invocation per package, in the Windows build's target
  # folder: the host's build scripts and proc-macros are built once for all.
  local list="$apple_dir/apple-cc-sources.txt" targets=() t c
  mkdir -p "$apple_dir"
  touch "$list"
  for t in aarch64-apple-darwin x86_64-apple-darwin; do
    targets+=(--target "$t")
    local var="${t//-/_}"
    local -x "CC_$var=$root/scripts/platforms/apple-cc.sh" "CXX_$var=$root/scripts/platforms/apple-cc.sh" "AR_$var=ar"
  done
  # The stand-in compiler notes each C source it is asked for. A source is
  # asked for once per target folder (a later run reuses the build script's
  # output), so the list is kept in that folder and only ever added to.
  APPLE_CC_LOG="$list" xcargo "$apple_dir" check "${targets[@]}" $engine_packages --lib --bins --tests || return 1
  APPLE_CC_LOG="$list" xcargo "$apple_dir" check "${targets[@]}" -p local-mcp --lib --bins || return 1
  c="$(sort -u "$list" | xargs -rn1 basename | sort -u | paste -sd, -)"
  for t in aarch64-apple-darwin x86_64-apple-darwin; do
    built[$t]="checked: engine (lib, bin, tests), desktop${c:+; C not compiled: $c}"
  done
}

# "test result: ok. 95 passed; 0 failed; 12 ignored" per test binary → "95 passed, 12 ignored" summed.
count_results() {
  awk '/^test result:/ {
        for (i = 1; i <= NF; i++) {
          if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i; if ($(i+1) ~ /^ignored/) g += $i
        }
      } END { printf "%d passed, %d failed, %d ignored", p, f, g }' "$1"
}

# Tests not run under Wine, each with why. They run on Linux in `npm test`;
# docs/PLATFORMS.md lists them too. Names are exact (`--skip … --exact`).
slow="slow under Wine's single-threaded wineserver; runs on Linux"
wine_skip_list=(
  # Stress and property tests: each is thousands of connections or steps, minutes under Wine.
  "hostile::extreme_values_in_every_field_never_get_a_5xx|$slow (142 s there)"
  "mcp::a_thousand_disconnects_mid_wait_consume_nothing_stateless|$slow (233 s there)"
  "mcp::disconnects_mid_wait_consume_nothing_with_sessions_250_times|$slow (57 s there)"
  "mcp::eight_agents_share_8000_instructions_exactly_once|$slow (8000 deliveries)"
  "mcp::thirty_two_agents_share_10000_instructions_exactly_once|$slow (10000 deliveries)"
  "queues::contention_across_queues_loses_duplicates_and_misroutes_nothing|$slow (over 60 s there)"
  "backup::a_backup_under_write_load_restores_every_acknowledged_write|$slow (over 60 s there); backup and restore run under Wine in cli and import"
  "model::the_queue_behaves_like_its_model|$slow (33 s there); a property test of the queue's logic, no platform code"
  # Checks of the source tree: the same files whatever the platform.
  "layers::every_module_imports_only_downward_and_there_is_no_cycle|reads the source tree, not the platform; runs on Linux"
  "layers::only_private_fs_creates_files|reads the source tree, not the platform; runs on Linux"
  "layers::the_queue_name_rule_is_spelled_once|reads the source tree, not the platform; runs on Linux"
  "layers::no_source_file_is_over_500_lines|reads the source tree, not the platform; runs on Linux"
  # Unix only by what it does.
  "storage::a_full_disk_refuses_with_507_loses_nothing_and_recovers|fills a 3 MiB tmpfs in a private mount namespace (unshare, mount): Linux only"
  "storage::the_database_folder_removed_while_running_is_written_back|Windows refuses to delete a folder whose files are open (a sharing violation), so what it recovers from cannot happen there"
  "cli::a_first_run_prints_no_error|moves the first run's folders with HOME and XDG_*; Windows takes ours from the shell's known folders, which a test cannot move, so it would run in the Wine prefix's real profile"
  "one_engine::a_second_server_on_one_database_refuses_and_the_first_keeps_serving|stops the first server with kill -TERM, a Unix signal Windows has no counterpart of; the refusal itself runs under Wine in one_engine::an_engine_in_process_holds_its_database_until_stopped"
)
wine_skips=()
for entry in "${wine_skip_list[@]}"; do
  wine_skips+=(--skip "${entry%%|*}")
done

windows_tests() {
  local log="$logs/wine-tests.log" rc=0
  # In a private network namespace (scripts/platforms/netns.sh: Wine's socket
  # table is slow when many connections linger); built already, so offline.
  # Two threads: wineserver is single-threaded and serves every test's sockets.
  timeout --kill-after=30 "${WINE_TEST_TIMEOUT:-2400}" scripts/platforms/netns.sh bash -c \
    'xcargo "$0" test --offline --target "$1" $engine_packages --lib --test it --no-fail-fast -- --test-threads=2 --exact -Zunstable-options --report-time "${@:2}"' \
    "$win_dir" "$win" "${wine_skips[@]}" >"$log" 2>&1 || rc=$?
  grep -E '^test .* (FAILED|ignored)|^test result:|^     Running|skipped' "$log" || true
  tests[$win]="Wine: $(count_results "$log"), ${#wine_skip_list[@]} skipped by name"
  [ "$rc" = 0 ] || { echo "tests under Wine failed (exit $rc): $log" >&2; return "$rc"; }
}

windows_e2e() {
  bash scripts/platforms/windows-e2e.sh "$win_out/local-mcp-server.exe" || return
  tests[$win]="${tests[$win]:-}; e2e: passed"
}

windows_package() {
  bash scripts/package-windows.sh --debug --check || return
  built[packages]="local-mcp-<version>-setup.exe (NSIS), local-mcp-<version>-windows-x86_64.zip"
  tests[packages]="installer: installed, run, uninstalled; zip: unpacked, run (Wine)"
}

actionlint() {
  bash scripts/platforms/actionlint.sh || return
  built[workflows]=".github/workflows checked by actionlint"
}

run_step windows-build windows_build
run_step windows-desktop windows_desktop
run_step apple apple
run_step windows-tests windows_tests
run_step windows-e2e windows_e2e
run_step windows-package windows_package
run_step actionlint actionlint
# Our Wine prefix's processes end with the run (the prefix is ours alone).
WINEPREFIX="$cache/wine" wineserver -k 2>/dev/null || true

step "platforms"
printf '%-24s | %-70s | %s\n' target "built / checked" "tests"
printf '%-24s-+-%-70s-+-%s\n' "------------------------" "----------------------------------------------------------------------" "------------------------------"
for t in $win aarch64-apple-darwin x86_64-apple-darwin packages workflows; do
  [ -n "${built[$t]:-}${tests[$t]:-}" ] || continue
  what="${built[$t]:-}"
  [ "$t" = "$win" ] && [ -n "$what" ] && what="built: $(echo "$what" | xargs | sed 's/ /, /g')"
  none="-"
  [[ "$t" == *apple* ]] && none="not run (no Mac here; the release workflow's macOS job runs peer's)"
  printf '%-24s | %-70s | %s\n' "$t" "$what" "${tests[$t]:-$none}"
done
echo
for s in $steps; do
  [ -n "${took[$s]:-}" ] && printf 'step %-16s %5d s\n' "$s" "${took[$s]}"
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "failed: ${failed[*]}" >&2
  exit 1
fi
