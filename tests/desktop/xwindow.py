"""Close an X window the way its title bar's close button does.

`python3 xwindow.py close TITLE` sends WM_DELETE_WINDOW (the request a
window manager sends when the person clicks ×) to every window titled TITLE;
`python3 xwindow.py list` prints the titled windows, one per line (mapped
ones marked "*"); `python3 xwindow.py watch TITLE` prints "ready", then
"shown" or "hidden" each time a window titled TITLE is mapped or the last
one goes, as the X server says it (one process for a whole bench: spawning
one per look would take CPU from the app it times); `python3 xwindow.py colors TITLE` prints how many colours
a grid of the shown window TITLE's pixels has, as the X server holds them
(1 for a window nothing was drawn in, dozens for a page with text). The desktop tests and the footprint bench run under Xvfb,
where no window manager would send it, and without WebDriver, which would
add its own processes to what they measure. Only libX11, through ctypes.
"""

import ctypes
import ctypes.util
import sys

x11 = ctypes.cdll.LoadLibrary(ctypes.util.find_library("X11") or "libX11.so.6")
Window = ctypes.c_ulong
Atom = ctypes.c_ulong

x11.XOpenDisplay.restype = ctypes.c_void_p
x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
x11.XDefaultRootWindow.restype = Window
x11.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
x11.XInternAtom.restype = Atom
x11.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
x11.XQueryTree.argtypes = [
    ctypes.c_void_p,
    Window,
    ctypes.POINTER(Window),
    ctypes.POINTER(Window),
    ctypes.POINTER(ctypes.POINTER(Window)),
    ctypes.POINTER(ctypes.c_uint),
]
x11.XFetchName.argtypes = [ctypes.c_void_p, Window, ctypes.POINTER(ctypes.c_char_p)]
x11.XFree.argtypes = [ctypes.c_void_p]
x11.XSendEvent.argtypes = [ctypes.c_void_p, Window, ctypes.c_int, ctypes.c_long, ctypes.c_void_p]
x11.XFlush.argtypes = [ctypes.c_void_p]
x11.XCloseDisplay.argtypes = [ctypes.c_void_p]


class XWindowAttributes(ctypes.Structure):
    # Only map_state is read; the rest pads the struct to its real size.
    _fields_ = [
        ("x", ctypes.c_int), ("y", ctypes.c_int), ("width", ctypes.c_int), ("height", ctypes.c_int),
        ("border_width", ctypes.c_int), ("depth", ctypes.c_int), ("visual", ctypes.c_void_p),
        ("root", Window), ("class_", ctypes.c_int), ("bit_gravity", ctypes.c_int),
        ("win_gravity", ctypes.c_int), ("backing_store", ctypes.c_int),
        ("backing_planes", ctypes.c_ulong), ("backing_pixel", ctypes.c_ulong),
        ("save_under", ctypes.c_int), ("colormap", ctypes.c_ulong), ("map_installed", ctypes.c_int),
        ("map_state", ctypes.c_int), ("all_event_masks", ctypes.c_long),
        ("your_event_mask", ctypes.c_long), ("do_not_propagate_mask", ctypes.c_long),
        ("override_redirect", ctypes.c_int), ("screen", ctypes.c_void_p),
    ]


x11.XGetWindowAttributes.argtypes = [ctypes.c_void_p, Window, ctypes.POINTER(XWindowAttributes)]
x11.XGetImage.restype = ctypes.c_void_p
x11.XGetImage.argtypes = [
    ctypes.c_void_p, Window, ctypes.c_int, ctypes.c_int, ctypes.c_uint, ctypes.c_uint, ctypes.c_ulong, ctypes.c_int,
]
x11.XGetPixel.restype = ctypes.c_ulong
x11.XGetPixel.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
x11.XDestroyImage.argtypes = [ctypes.c_void_p]
ALL_PLANES = 0xFFFFFFFF
Z_PIXMAP = 2


class XClientMessageEvent(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("serial", ctypes.c_ulong),
        ("send_event", ctypes.c_int),
        ("display", ctypes.c_void_p),
        ("window", Window),
        ("message_type", Atom),
        ("format", ctypes.c_int),
        ("data", ctypes.c_long * 5),
    ]


class XEvent(ctypes.Union):
    # XEvent is a union padded to 24 longs.
    _fields_ = [("xclient", XClientMessageEvent), ("pad", ctypes.c_long * 24)]


CLIENT_MESSAGE = 33
IS_VIEWABLE = 2
UNMAP_NOTIFY, MAP_NOTIFY = 18, 19
DESTROY_NOTIFY = 17
SUBSTRUCTURE_NOTIFY_MASK = 1 << 19
x11.XSelectInput.argtypes = [ctypes.c_void_p, Window, ctypes.c_long]
x11.XNextEvent.argtypes = [ctypes.c_void_p, ctypes.c_void_p]


def windows(display, parent):
    """Every window under `parent`, depth first."""
    root, up = Window(), Window()
    children = ctypes.POINTER(Window)()
    count = ctypes.c_uint()
    if not x11.XQueryTree(display, parent, ctypes.byref(root), ctypes.byref(up), ctypes.byref(children), ctypes.byref(count)):
        return
    found = [children[i] for i in range(count.value)]
    if children:
        x11.XFree(children)
    for w in found:
        yield w
        yield from windows(display, w)


def titled(display):
    """(window, title, mapped) for every window that has a title."""
    for w in windows(display, x11.XDefaultRootWindow(display)):
        name = ctypes.c_char_p()
        if x11.XFetchName(display, w, ctypes.byref(name)) and name.value is not None:
            # WM_NAME is a STRING property: Latin-1 by definition.
            title = name.value.decode("latin-1")
            x11.XFree(name)
            attrs = XWindowAttributes()
            x11.XGetWindowAttributes(display, w, ctypes.byref(attrs))
            yield w, title, attrs.map_state == IS_VIEWABLE


def close(display, title):
    protocols = x11.XInternAtom(display, b"WM_PROTOCOLS", 0)
    delete = x11.XInternAtom(display, b"WM_DELETE_WINDOW", 0)
    sent = 0
    for w, name, _mapped in list(titled(display)):
        if name != title:
            continue
        event = XEvent()
        event.xclient.type = CLIENT_MESSAGE
        event.xclient.window = w
        event.xclient.message_type = protocols
        event.xclient.format = 32
        event.xclient.data[0] = delete
        event.xclient.data[1] = 0  # CurrentTime
        x11.XSendEvent(display, w, 0, 0, ctypes.byref(event))
        sent += 1
    x11.XFlush(display)
    return sent


def colors(display, window, step=6):
    """How many colours every `step`-th pixel of `window` has."""
    attributes = XWindowAttributes()
    x11.XGetWindowAttributes(display, window, ctypes.byref(attributes))
    image = x11.XGetImage(display, window, 0, 0, attributes.width, attributes.height, ALL_PLANES, Z_PIXMAP)
    if not image:
        return 0
    try:
        return len({
            x11.XGetPixel(image, x, y)
            for y in range(0, attributes.height, step)
            for x in range(0, attributes.width, step)
        })
    finally:
        x11.XDestroyImage(image)


def watch(display, title):
    """Say "shown"/"hidden" as windows titled `title` come and go (top-level
    windows are children of the root: its substructure events tell of them)."""
    x11.XSelectInput(display, x11.XDefaultRootWindow(display), SUBSTRUCTURE_NOTIFY_MASK)
    x11.XFlush(display)
    shown = False

    def look():
        nonlocal shown
        now = any(mapped and name == title for _w, name, mapped in titled(display))
        if now != shown:
            shown = now
            print("shown" if now else "hidden", flush=True)

    look()
    print("ready", flush=True)
    event = XEvent()
    while True:
        x11.XNextEvent(display, ctypes.byref(event))
        if event.xclient.type in (MAP_NOTIFY, UNMAP_NOTIFY, DESTROY_NOTIFY):
            look()


def main():
    display = x11.XOpenDisplay(None)
    if not display:
        print("cannot open the X display (is DISPLAY set?)", file=sys.stderr)
        return 2
    try:
        if sys.argv[1:2] == ["list"]:
            for _w, name, mapped in titled(display):
                print(("* " if mapped else "  ") + name)
            return 0
        if sys.argv[1:2] == ["colors"] and len(sys.argv) == 3:
            shown = [w for w, name, mapped in titled(display) if mapped and name == sys.argv[2]]
            if not shown:
                print(f"no shown window titled {sys.argv[2]!r}", file=sys.stderr)
                return 1
            print(colors(display, shown[0]))
            return 0
        if sys.argv[1:2] == ["watch"] and len(sys.argv) == 3:
            watch(display, sys.argv[2])
            return 0
        if sys.argv[1:2] == ["close"] and len(sys.argv) == 3:
            if close(display, sys.argv[2]) == 0:
                print(f"no window titled {sys.argv[2]!r}", file=sys.stderr)
                return 1
            return 0
        print(__doc__, file=sys.stderr)
        return 2
    finally:
        x11.XCloseDisplay(display)


if __name__ == "__main__":
    sys.exit(main())
