"""Test images made with Pillow: a screenshot larger than models take, and a
phone photo whose EXIF says to rotate it."""

import io

from PIL import Image


def big_png(width: int = 6000, height: int = 4000) -> bytes:
    img = Image.new("RGB", (width, height), (40, 90, 160))
    img.paste((240, 240, 240), (0, 0, width // 2, height // 2))
    out = io.BytesIO()
    img.save(out, "PNG", compress_level=1)
    return out.getvalue()


def rotated_jpeg() -> bytes:
    """40×20, red left and blue right, stored sideways: EXIF Orientation 6
    (rotate 90° clockwise to show), so upright it is 20×40 with red on top."""
    img = Image.new("RGB", (40, 20), (20, 20, 230))
    img.paste((230, 20, 20), (0, 0, 20, 20))
    exif = Image.Exif()
    exif[0x0112] = 6
    out = io.BytesIO()
    img.save(out, "JPEG", quality=95, exif=exif.tobytes())
    return out.getvalue()


def size_and_top_left(data: bytes) -> tuple[tuple[int, int], tuple[int, int, int]]:
    img = Image.open(io.BytesIO(data)).convert("RGB")
    return img.size, img.getpixel((5, 5))


def upload_screenshot_photo_and_notes(server) -> dict:
    return server.add_with_files("What is wrong here?", [
        ("big.png", big_png(), "image/png"),
        ("phone.jpg", rotated_jpeg(), "image/jpeg"),
        ("notes.md", b"# notes\n", "image/png"),  # a lying type: the bytes decide
    ])


def check_delivery(result, data: dict) -> None:
    """The result of taking that instruction, as either SDK line parsed it:
    the JSON first, two image blocks that are the files at their paths
    (scaled, upright), then the text file embedded."""
    import base64
    import pathlib

    attachments = data["instruction"]["attachments"]
    assert [a["name"] for a in attachments] == ["big.png", "phone.jpg", "notes.md"]
    assert [b.type for b in result.content] == ["text", "image", "image", "resource"]
    for block, a in zip(result.content[1:3], attachments):
        raw = base64.b64decode(block.data)
        assert raw == pathlib.Path(a["path"]).read_bytes(), "the block is the delivery copy at path"
        mime = getattr(block, "mime_type", None) or getattr(block, "mimeType")
        assert mime == a["mime_type"]
    size, _ = size_and_top_left(base64.b64decode(result.content[1].data))
    assert size == (1568, 1045)
    size, pixel = size_and_top_left(base64.b64decode(result.content[2].data))
    assert size == (20, 40)
    assert pixel[0] > 150 and pixel[2] < 100, f"red on top: {pixel}"
    resource = result.content[3].resource
    assert resource.text == "# notes\n"
    assert str(resource.uri) == f"local-mcp://attachments/{attachments[2]['id']}"
