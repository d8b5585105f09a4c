"""Type into an X window as a person at the keyboard would.

`python3 xkeys.py type TITLE TEXT` gives the input focus to the shown window
titled TITLE (what a click on it does; under Xvfb no window manager does it)
and types TEXT through the XTEST extension: the X server makes the key
presses and releases, and the window's toolkit gets them as it gets a
keyboard's. TEXT may hold lower-case letters, digits, spaces, "-", "." and
"\\n" (Return). Exits 1 when no such window is shown. Only libX11 and libXtst,
through ctypes (the window lookup is xwindow.py's).
"""

import ctypes
import ctypes.util
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ beside the tests
from xwindow import Window, titled, x11  # noqa: E402

xtst = ctypes.cdll.LoadLibrary(ctypes.util.find_library("Xtst") or "libXtst.so.6")
xtst.XTestFakeKeyEvent.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_ulong]
x11.XStringToKeysym.restype = ctypes.c_ulong
x11.XStringToKeysym.argtypes = [ctypes.c_char_p]
x11.XKeysymToKeycode.restype = ctypes.c_ubyte
x11.XKeysymToKeycode.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
x11.XSetInputFocus.argtypes = [ctypes.c_void_p, Window, ctypes.c_int, ctypes.c_ulong]
x11.XRaiseWindow.argtypes = [ctypes.c_void_p, Window]
x11.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]

REVERT_TO_PARENT = 2
NAMES = {" ": "space", "\n": "Return", "-": "minus", ".": "period"}


def keycode(display, char):
    name = NAMES.get(char, char)
    if not (char in NAMES or char.isdigit() or ("a" <= char <= "z")):
        raise ValueError(f"cannot type {char!r}: only a-z, 0-9, space, '-', '.' and newline")
    code = x11.XKeysymToKeycode(display, x11.XStringToKeysym(name.encode()))
    if not code:
        raise ValueError(f"no key for {char!r} in this keymap")
    return code


def type_into(display, title, text):
    shown = [w for w, name, mapped in titled(display) if mapped and name == title]
    if not shown:
        return False
    codes = [keycode(display, c) for c in text]
    x11.XRaiseWindow(display, shown[0])
    x11.XSetInputFocus(display, shown[0], REVERT_TO_PARENT, 0)
    x11.XSync(display, 0)
    time.sleep(0.2)  # the toolkit's FocusIn before the first key
    for code in codes:
        xtst.XTestFakeKeyEvent(display, code, 1, 0)
        xtst.XTestFakeKeyEvent(display, code, 0, 0)
        x11.XSync(display, 0)
        time.sleep(0.03)
    return True


def main():
    if sys.argv[1:2] != ["type"] or len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    display = x11.XOpenDisplay(None)
    if not display:
        print("cannot open the X display (is DISPLAY set?)", file=sys.stderr)
        return 2
    try:
        if not type_into(display, sys.argv[2], sys.argv[3]):
            print(f"no shown window titled {sys.argv[2]!r}", file=sys.stderr)
            return 1
        return 0
    finally:
        x11.XCloseDisplay(display)


if __name__ == "__main__":
    sys.exit(main())
