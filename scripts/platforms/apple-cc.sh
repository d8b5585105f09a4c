#!/usr/bin/env bash
# A stand-in C compiler for Apple targets, for `cargo check` only: Apple's
# compiler and SDK are not on Linux, and type-checking Rust needs no C
# object. cc-rs (bundled SQLite, mac-notification-sys's Objective-C) asks it
# what it is — it answers as clang does — and then to compile: it writes an
# empty object and notes the source in $APPLE_CC_LOG, so
# scripts/check-platforms.sh can say exactly which C was not compiled.
# Nothing built with it can link; it is never used for a build.
set -euo pipefail
out=""
source=""
prev=""
for arg in "$@"; do
  case "$arg" in
    -\?) exit 1 ;; # cc-rs's MSVC probe: not MSVC
  esac
  if [ "$prev" = "-o" ]; then out="$arg"; fi
  case "$arg" in
    *detect_compiler_family.c)
      # cc-rs preprocesses this probe and looks for the family's name in quotes.
      echo '#pragma message "clang"'
      exit 0
      ;;
    *.c | *.m | *.cc | *.cpp | *.mm | *.S | *.s) source="$arg" ;;
  esac
  prev="$arg"
done
if [ -n "$source" ] && [ -n "${APPLE_CC_LOG:-}" ]; then
  echo "$source" >>"$APPLE_CC_LOG"
fi
if [ -n "$out" ]; then
  : >"$out"
fi
