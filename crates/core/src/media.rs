//! What an uploaded file is, decided from its bytes, and the copy an agent
//! gets of it.
//!
//! The declared type and the file name are never trusted: a file is an
//! image when its magic number names one of the accepted formats *and* it
//! decodes; it is text when it is valid UTF-8 without NUL characters and not
//! an SVG (which is markup that can run script, and is never accepted).
//! Decoding is bounded — the header's size is checked against
//! [`MAX_PIXELS`] and [`MAX_SIDE`], and the decoder runs under the `image` crate's `Limits` —
//! so a decompression bomb is refused before any large allocation.
//!
//! An image's delivery copy is what vision models take without rescaling:
//! its EXIF orientation applied (then every piece of metadata dropped by the
//! re-encode), the long edge at most [`LONG_EDGE`] pixels, PNG while that
//! stays within [`KEEP_PNG_BYTES`], otherwise JPEG at quality 85, and never
//! more than [`MAX_DELIVERY_BYTES`].

use std::io::Cursor;

use fast_image_resize::{FilterType, IntoImageView, MulDiv, ResizeAlg, ResizeOptions, Resizer};
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits};
use sha2::{Digest, Sha256};

use crate::Error;

/// The largest image accepted, in pixels (width × height, from the header).
pub const MAX_PIXELS: u64 = 50_000_000;
/// The longest side accepted, in pixels: JPEG's and GIF's own limit, far
/// beyond any screen. Scaling precomputes a filter table of (6 × the scale
/// factor) weights for each pixel of the copy's edge; a 50-megapixel image
/// one pixel high would have asked for 2.4 GB of it.
pub const MAX_SIDE: u32 = 65_535;
/// The long edge of a delivery copy: what current vision models take as is.
pub const LONG_EDGE: u32 = 1568;
/// A scaled image stays PNG (lossless: screenshots of text) up to this size.
pub const KEEP_PNG_BYTES: usize = 1024 * 1024;
/// No delivery copy is larger (Anthropic's 5 MB limit on base64 is 3.75 MiB raw).
pub const MAX_DELIVERY_BYTES: usize = 3 * 1024 * 1024 + 768 * 1024;
/// The largest decoded buffer: 50 megapixels of 16-bit RGBA.
const MAX_ALLOC: u64 = MAX_PIXELS * 8;

/// What is accepted, as every refusal says it.
pub const ACCEPTED: &str = "PNG, JPEG, WebP, GIF, BMP or TIFF images, or UTF-8 text files";

/// Image or text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Image,
    Text,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Image => "image",
            Kind::Text => "text",
        }
    }
}

/// An encoded image or a text file, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    pub mime_type: &'static str,
    /// File-name extension for this type, without the dot.
    pub ext: &'static str,
    pub width: Option<u32>,
    pub height: Option<u32>,
}

/// An accepted upload: what the original is, and the delivery copy's bytes
/// (`None` for text: the original is what an agent gets).
#[derive(Debug)]
pub struct Prepared {
    pub kind: Kind,
    pub original: Encoded,
    pub sha256: String,
    pub delivery: Option<(Encoded, Vec<u8>)>,
}

/// What a decode whose pixels take `pixel_bytes` may allocate: its pixels,
/// the decoders' own buffers and the copies made on the way, measured up to
/// 2.3× the pixels (WebP lossless, a TIFF's strips, an EXIF rotation's copy),
/// so 2.5× them, and 1 MiB for the decoders' small buffers. A decode runs
/// with this as its limit, so it takes no more than it was weighed at: a
/// GIF whose first frame is larger than the screen its header declares is
/// refused rather than decoded at the frame's size.
pub const fn decode_allowance(pixel_bytes: u64) -> u64 {
    pixel_bytes.saturating_mul(5) / 2 + (1 << 20)
}

/// What decoding `bytes` may allocate ([`decode_allowance`]), read from the
/// header alone (nothing large is allocated): 0 for what is not an image, or
/// whose header does not read (it fails before any decode); at most
/// [`MAX_DECODE_COST`]. What a caller weighs uploads by before it lets them
/// decode side by side (`queue::uploads::DECODING`).
pub fn decode_cost(bytes: &[u8]) -> u64 {
    let Some(format) = image_format(bytes) else {
        return 0;
    };
    header(bytes, format)
        .map(|d| decode_allowance(d.total_bytes().min(MAX_ALLOC)))
        .unwrap_or(0)
}

/// A decoder of `bytes` with their header read, under the limits every
/// decode starts with: what `decode_cost` weighs is what `image` decodes.
fn header(bytes: &[u8], format: ImageFormat) -> image::ImageResult<impl ImageDecoder + '_> {
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    let mut limits = Limits::default();
    limits.max_alloc = Some(MAX_ALLOC);
    reader.limits(limits);
    reader.into_decoder()
}

/// The most [`decode_cost`] can say: for 50 megapixels of 16-bit RGBA.
pub const MAX_DECODE_COST: u64 = decode_allowance(MAX_ALLOC);

/// Where a file comes from: what is checked of it besides its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Sent now: also refused when it is not whole yet — empty, or a JPEG cut
    /// short (a file still being written, a download that stopped).
    New,
    /// From an archive of an earlier version, which took it: kept as it is,
    /// so an import is not refused for a file that was accepted once.
    Restored,
}

/// Inspect an upload and, for an image, make its delivery copy. CPU-bound
/// (a decode and an encode): call it off the async threads.
pub fn prepare(bytes: &[u8], arrival: Arrival) -> Result<Prepared, Error> {
    if arrival == Arrival::New && bytes.is_empty() {
        return Err(Error::Invalid(
            "the file is empty (0 bytes); there is nothing in it to attach".into(),
        ));
    }
    let sha256 = hex::encode(Sha256::digest(bytes));
    if let Some(format) = image_format(bytes) {
        if arrival == Arrival::New && format == ImageFormat::Jpeg && jpeg_cut_off(bytes) {
            return Err(Error::Invalid(
                "not a readable JPEG image (it is cut off: the file ends before the marker that ends \
                 the picture; was it still being written?)"
                    .into(),
            ));
        }
        let (original, delivery) = image(bytes, format)?;
        return Ok(Prepared {
            kind: Kind::Image,
            original,
            sha256,
            delivery: Some(delivery),
        });
    }
    text(bytes)?;
    Ok(Prepared {
        kind: Kind::Text,
        original: Encoded {
            mime_type: "text/plain; charset=utf-8",
            ext: "txt",
            width: None,
            height: None,
        },
        sha256,
        delivery: None,
    })
}

/// The accepted image format the magic number names, if any.
fn image_format(bytes: &[u8]) -> Option<ImageFormat> {
    let format = image::guess_format(bytes).ok()?;
    matches!(
        format,
        ImageFormat::Png
            | ImageFormat::Jpeg
            | ImageFormat::WebP
            | ImageFormat::Gif
            | ImageFormat::Bmp
            | ImageFormat::Tiff
    )
    .then_some(format)
}

fn describe(format: ImageFormat) -> (&'static str, &'static str, &'static str) {
    match format {
        ImageFormat::Png => ("PNG", "image/png", "png"),
        ImageFormat::Jpeg => ("JPEG", "image/jpeg", "jpg"),
        ImageFormat::WebP => ("WebP", "image/webp", "webp"),
        ImageFormat::Gif => ("GIF", "image/gif", "gif"),
        ImageFormat::Bmp => ("BMP", "image/bmp", "bmp"),
        _ => ("TIFF", "image/tiff", "tiff"),
    }
}

fn image(bytes: &[u8], format: ImageFormat) -> Result<(Encoded, (Encoded, Vec<u8>)), Error> {
    let (label, mime_type, ext) = describe(format);
    // The decoder's own words are for the log; the person is told what is wrong with the file.
    let unreadable = |e: image::ImageError| {
        tracing::debug!(error = %e, "an upload's image cannot be decoded");
        let why = match e {
            image::ImageError::Limits(_) => "it is too large to decode",
            image::ImageError::Unsupported(_) => "it uses a variant of the format that is not supported",
            _ => "its data is damaged or cut off",
        };
        Error::Invalid(format!("not a readable {label} image ({why})"))
    };
    let mut decoder = header(bytes, format).map_err(unreadable)?;
    let (width, height) = decoder.dimensions();
    // The header is read; nothing large is allocated yet.
    let pixels = u64::from(width) * u64::from(height);
    if pixels > MAX_PIXELS || decoder.total_bytes() > MAX_ALLOC {
        return Err(Error::TooLarge(format!(
            "the image is {width}×{height} pixels; the limit is {} megapixels",
            MAX_PIXELS / 1_000_000
        )));
    }
    if width.max(height) > MAX_SIDE {
        return Err(Error::TooLarge(format!(
            "the image is {width}×{height} pixels; a side may be at most {MAX_SIDE} pixels"
        )));
    }
    if width == 0 || height == 0 {
        return Err(Error::Invalid(format!("this {label} image has no pixels")));
    }
    // From here the decode may take what it is weighed at, no more (`decode_allowance`).
    // A GIF's canvas (its screen) is allocated outside the limit; its frames' buffers within it.
    let pixel_bytes = decoder.total_bytes();
    let allowed = match format {
        ImageFormat::Gif => decode_allowance(pixel_bytes) - pixel_bytes,
        _ => decode_allowance(pixel_bytes),
    };
    let mut limits = Limits::default();
    limits.max_alloc = Some(allowed);
    decoder.set_limits(limits).map_err(unreadable)?;
    let orientation = decoder
        .orientation()
        .unwrap_or(image::metadata::Orientation::NoTransforms);
    // GIF: the first frame.
    let mut img = DynamicImage::from_decoder(decoder).map_err(unreadable)?;
    img.apply_orientation(orientation);
    let original = Encoded {
        mime_type,
        ext,
        width: Some(img.width()),
        height: Some(img.height()),
    };
    Ok((original, delivery_copy(img)?))
}

/// Whether a JPEG ends before its picture does (a file still being written,
/// a download that stopped). The decoder `image` uses fills what is missing
/// with grey and says nothing, so the agent would get the top of the picture
/// and a grey rest, and the person no word of it. Not left to the decoder:
/// even strictly it decodes a file that lost only its last bytes (the
/// missing bits read as zeros), and a progressive file cut between scans
/// looks whole to it. So the file's markers are walked from its start: each
/// segment skipped by its length, each scan's compressed data to the next
/// marker (in it, `FF` is followed by `00` or a restart marker only), until
/// the end-of-image marker. A file that runs out first is cut off; what
/// follows the marker (a phone's motion-photo video, a second picture) is
/// not looked at. A file whose markers do not follow that structure is left
/// to the decoder's judgement.
fn jpeg_cut_off(bytes: &[u8]) -> bool {
    const MARKER: u8 = 0xFF;
    const END_OF_IMAGE: u8 = 0xD9;
    const START_OF_SCAN: u8 = 0xDA;
    let is_restart = |m: u8| (0xD0..=0xD7).contains(&m);
    if !bytes.starts_with(&[MARKER, 0xD8]) {
        return false;
    }
    let mut at = 2;
    loop {
        // A marker: FF, perhaps more FF as fill, then its code.
        if bytes.get(at) != Some(&MARKER) {
            return at >= bytes.len(); // out of bytes: cut off; anything else: not our call
        }
        while bytes.get(at) == Some(&MARKER) {
            at += 1;
        }
        let Some(&code) = bytes.get(at) else {
            return true;
        };
        at += 1;
        match code {
            END_OF_IMAGE => return false,
            0x01 => continue,
            c if is_restart(c) => continue,
            0x00 | 0xD8 => return false, // not a marker where one belongs: the decoder judges
            _ => {}
        }
        // A segment: its length counts itself, not the marker.
        let Some(length) = bytes
            .get(at..at + 2)
            .map(|l| usize::from(u16::from_be_bytes([l[0], l[1]])))
        else {
            return true;
        };
        if length < 2 {
            return false;
        }
        at += length;
        if at > bytes.len() {
            return true;
        }
        if code == START_OF_SCAN {
            // Compressed data up to the next marker that is not a restart or a stuffed FF.
            loop {
                match bytes.get(at..at + 2) {
                    None => return true,
                    Some([MARKER, next]) if *next == 0x00 || is_restart(*next) => at += 2,
                    Some([MARKER, _]) => break,
                    Some(_) => at += 1,
                }
            }
        }
    }
}

/// Scale, then PNG if small enough, else JPEG at falling quality until it fits.
fn delivery_copy(img: DynamicImage) -> Result<(Encoded, Vec<u8>), Error> {
    let img = scaled(img);
    let encoding = |e: image::ImageError| Error::internal("encoding an image's delivery copy", e);
    let (width, height) = (Some(img.width()), Some(img.height()));
    let mut png = Vec::new();
    let rgba = img.has_alpha();
    let flat = if rgba {
        DynamicImage::ImageRgba8(img.to_rgba8())
    } else {
        DynamicImage::ImageRgb8(img.to_rgb8())
    };
    flat.write_with_encoder(PngEncoder::new(&mut png)).map_err(encoding)?;
    if png.len() <= KEEP_PNG_BYTES {
        let encoded = Encoded {
            mime_type: "image/png",
            ext: "png",
            width,
            height,
        };
        return Ok((encoded, png));
    }
    // JPEG has no alpha: transparent parts go on white, as a viewer shows them.
    let rgb = if rgba { on_white(&flat) } else { flat.to_rgb8() };
    for quality in [85, 70, 55, 40] {
        let mut jpeg = Vec::new();
        JpegEncoder::new_with_quality(&mut jpeg, quality)
            .encode_image(&rgb)
            .map_err(encoding)?;
        if jpeg.len() <= MAX_DELIVERY_BYTES {
            let encoded = Encoded {
                mime_type: "image/jpeg",
                ext: "jpg",
                width,
                height,
            };
            return Ok((encoded, jpeg));
        }
    }
    Err(Error::TooLarge(format!(
        "this image does not fit in {MAX_DELIVERY_BYTES} bytes even as a JPEG at quality 40"
    )))
}

/// `img` with its long edge at most [`LONG_EDGE`], the aspect ratio kept
/// (each side rounded as the `image` crate's `resize` rounds it).
///
/// Lanczos3 either way; `fast_image_resize` does it with the CPU's vector
/// instructions, and alpha weighted (no dark fringes at transparent edges).
/// It was the `image` crate's own resampler that took most of the time to
/// queue a screenshot (`perf`: ~57 % of the server's CPU for a 4-megapixel
/// PNG). Every pixel type `image` decodes to has a counterpart there; should
/// one ever not, the `image` crate's resampler still scales it.
fn scaled(mut img: DynamicImage) -> DynamicImage {
    let (w, h) = (img.width(), img.height());
    let long = w.max(h);
    if long <= LONG_EDGE {
        return img;
    }
    let ratio = f64::from(LONG_EDGE) / f64::from(long);
    // Within 1..=LONG_EDGE, so the cast cannot truncate.
    let side = |s: u32| (f64::from(s) * ratio).round().clamp(1.0, f64::from(LONG_EDGE)) as u32;
    let (nw, nh) = (side(w), side(h));
    let mut out = DynamicImage::new(nw, nh, img.color());
    // Colour weighted by alpha, in place: the resizer's own weighting copies
    // the whole decoded image first, the largest buffer of an upload (a
    // 50-megapixel 16-bit RGBA PNG: the server's peak 882 MiB that way, 501
    // in place, 589 with the `image` crate's resampler).
    let mul_div = MulDiv::new();
    let premultiplied =
        img.pixel_type().is_some_and(|t| mul_div.is_supported(t)) && mul_div.multiply_alpha_inplace(&mut img).is_ok();
    let options = ResizeOptions::new()
        .resize_alg(ResizeAlg::Convolution(FilterType::Lanczos3))
        .use_alpha(false);
    match Resizer::new().resize(&img, &mut out, &options) {
        Ok(()) => {
            if premultiplied {
                if let Err(e) = mul_div.divide_alpha_inplace(&mut out) {
                    tracing::debug!(error = %e, "could not undo the alpha weighting of a delivery copy");
                }
            }
            out
        }
        Err(e) => {
            tracing::debug!(error = %e, "scaling with the image crate's resampler instead");
            if premultiplied {
                let _ = mul_div.divide_alpha_inplace(&mut img);
            }
            img.resize_exact(nw, nh, image::imageops::FilterType::Lanczos3)
        }
    }
}

/// PNG bytes of raw 8-bit RGBA pixels (a clipboard image), for an upload.
pub fn png_from_rgba(width: u32, height: u32, rgba: Vec<u8>) -> Result<Vec<u8>, Error> {
    let img = image::RgbaImage::from_raw(width, height, rgba)
        .ok_or_else(|| Error::Invalid(format!("{width}×{height} RGBA pixels do not match their buffer")))?;
    let mut out = Vec::new();
    DynamicImage::ImageRgba8(img)
        .write_with_encoder(PngEncoder::new(&mut out))
        .map_err(|e| Error::internal("encoding a clipboard image", e))?;
    Ok(out)
}

fn on_white(img: &DynamicImage) -> image::RgbImage {
    let rgba = img.to_rgba8();
    image::RgbImage::from_fn(rgba.width(), rgba.height(), |x, y| {
        let [r, g, b, a] = rgba.get_pixel(x, y).0;
        let over = |c: u8| ((u16::from(c) * u16::from(a) + 255 * (255 - u16::from(a))) / 255) as u8;
        image::Rgb([over(r), over(g), over(b)])
    })
}

fn text(bytes: &[u8]) -> Result<(), Error> {
    let refused = |why: &str| Error::Unsupported(format!("{why}; accepted: {ACCEPTED}"));
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err(refused("this file is neither an accepted image nor UTF-8 text"));
    };
    if text.contains('\0') {
        return Err(refused("this file is binary (it contains NUL bytes)"));
    }
    if is_svg(text) {
        return Err(refused("SVG images are not accepted (they can carry script)"));
    }
    Ok(())
}

/// An SVG document: markup whose root element is `<svg`, possibly after an
/// XML declaration, comments or a doctype.
fn is_svg(text: &str) -> bool {
    let head: String = text.trim_start_matches('\u{feff}').chars().take(4096).collect();
    let head = head.trim_start().to_ascii_lowercase();
    head.starts_with('<') && head.contains("<svg")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As a file sent now is inspected.
    fn prepare(bytes: &[u8]) -> Result<Prepared, Error> {
        super::prepare(bytes, Arrival::New)
    }

    /// A GIF whose first frame is far larger than the 1×1 screen its header
    /// declares: weighed by its screen, its decode may not take the frame's
    /// size (such a 70-KB file was accepted, holding ~470 MB as it decoded).
    #[test]
    fn a_gif_frame_larger_than_its_screen_is_not_decoded_at_its_size() {
        let (width, height) = (3000u16, 3000u16);
        let mut out = Vec::new();
        {
            let mut gif = gif::Encoder::new(&mut out, 1, 1, &[0, 0, 0, 255, 255, 255]).unwrap();
            let frame = gif::Frame {
                width,
                height,
                buffer: std::borrow::Cow::Owned(vec![0u8; usize::from(width) * usize::from(height)]),
                ..Default::default()
            };
            gif.write_frame(&frame).unwrap();
        }
        assert!(
            decode_cost(&out) < 2 << 20,
            "weighed by its screen: {}",
            decode_cost(&out)
        );
        match prepare(&out) {
            Err(Error::Invalid(m)) => assert!(m.contains("too large to decode"), "{m}"),
            other => panic!("a {width}×{height} frame on a 1×1 screen: {other:?}"),
        }
        // On a large screen too: the canvas (outside the decoder's limit) and the frame
        // together stay within the weight (2.5× the canvas and 1 MiB).
        let on_screen = |screen: u16, frame: u16| {
            let mut out = Vec::new();
            let mut gif = gif::Encoder::new(&mut out, screen, screen, &[0, 0, 0, 255, 255, 255]).unwrap();
            let pixels = vec![0u8; usize::from(frame) * usize::from(frame)];
            gif.write_frame(&gif::Frame {
                width: frame,
                height: frame,
                buffer: std::borrow::Cow::Borrowed(&pixels),
                ..Default::default()
            })
            .unwrap();
            drop(gif);
            prepare(&out)
        };
        assert!(
            matches!(on_screen(1000, 1600), Err(Error::Invalid(_))),
            "a canvas of 4 MB and a frame of 10.2 MB, weighed at 11 MB"
        );
        assert!(on_screen(1000, 1000).is_ok(), "a frame the size of its screen");
    }

    fn png(width: u32, height: u32) -> Vec<u8> {
        let img = image::RgbImage::from_fn(width, height, |x, y| image::Rgb([(x % 256) as u8, (y % 256) as u8, 90]));
        encoded(DynamicImage::ImageRgb8(img))
    }

    fn encoded(img: DynamicImage) -> Vec<u8> {
        let mut out = Vec::new();
        img.write_with_encoder(PngEncoder::new(&mut out)).unwrap();
        out
    }

    #[test]
    fn a_big_png_is_scaled_to_the_long_edge() {
        let p = prepare(&png(3000, 1000)).unwrap();
        assert_eq!(p.kind, Kind::Image);
        assert_eq!((p.original.width, p.original.height), (Some(3000), Some(1000)));
        let (enc, bytes) = p.delivery.unwrap();
        assert_eq!((enc.width, enc.height), (Some(LONG_EDGE), Some(523)));
        let back = image::load_from_memory(&bytes).unwrap();
        assert_eq!((back.width(), back.height()), (LONG_EDGE, 523));
    }

    #[test]
    fn scaling_weighs_colour_by_alpha() {
        // Left half transparent black, right half opaque white: every pixel
        // of the copy that shows at all is white. Resampled channel by
        // channel, the transparent black bleeds in as a grey seam.
        let img = image::RgbaImage::from_fn(3000, 1000, |x, _| {
            if x < 1500 {
                image::Rgba([0, 0, 0, 0])
            } else {
                image::Rgba([255, 255, 255, 255])
            }
        });
        let bytes = encoded(DynamicImage::ImageRgba8(img));
        let (enc, out) = prepare(&bytes).unwrap().delivery.unwrap();
        assert_eq!(
            (enc.mime_type, enc.width, enc.height),
            ("image/png", Some(LONG_EDGE), Some(523))
        );
        let back = image::load_from_memory(&out).unwrap().to_rgba8();
        let seam: Vec<_> = back.pixels().filter(|p| p.0[3] > 0 && p.0[3] < 255).collect();
        assert!(!seam.is_empty(), "the edge between the halves is soft");
        let darkest = back
            .pixels()
            .filter(|p| p.0[3] > 0)
            .map(|p| p.0[0].min(p.0[1]).min(p.0[2]))
            .min();
        assert!(darkest >= Some(250), "a shown pixel as dark as {darkest:?}");
    }

    #[test]
    fn deep_colour_images_are_scaled_too() {
        let img = image::ImageBuffer::<image::Rgba<u16>, _>::from_fn(2400, 600, |x, y| {
            image::Rgba([(x * 27) as u16, (y * 100) as u16, 40_000, 65_535])
        });
        let bytes = encoded(DynamicImage::ImageRgba16(img));
        let (enc, out) = prepare(&bytes).unwrap().delivery.unwrap();
        assert_eq!((enc.width, enc.height), (Some(LONG_EDGE), Some(392)));
        let back = image::load_from_memory(&out).unwrap();
        assert_eq!((back.width(), back.height()), (LONG_EDGE, 392));
    }

    #[test]
    fn a_small_png_stays_png_at_its_size() {
        let p = prepare(&png(40, 30)).unwrap();
        let (enc, bytes) = p.delivery.unwrap();
        assert_eq!(
            (enc.mime_type, enc.width, enc.height),
            ("image/png", Some(40), Some(30))
        );
        assert_eq!(image::guess_format(&bytes).unwrap(), ImageFormat::Png);
    }

    #[test]
    fn noise_too_big_for_png_becomes_jpeg_within_the_cap() {
        let mut seed = 12345u32;
        let img = image::RgbImage::from_fn(1400, 1400, |_, _| {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let b = seed.to_le_bytes();
            image::Rgb([b[1], b[2], b[3]])
        });
        let bytes = encoded(DynamicImage::ImageRgb8(img));
        let (enc, out) = prepare(&bytes).unwrap().delivery.unwrap();
        assert_eq!(enc.mime_type, "image/jpeg");
        assert!(out.len() <= MAX_DELIVERY_BYTES);
    }

    #[test]
    fn a_header_declaring_too_many_pixels_is_refused_before_decoding() {
        let err = prepare(&png_declaring(100_000, 100_000)).unwrap_err();
        assert!(matches!(err, Error::TooLarge(_)), "{err}");
        assert!(err.to_string().contains("50 megapixels"), "{err}");
    }

    #[test]
    fn a_side_longer_than_jpeg_allows_is_refused_before_decoding() {
        // Few pixels, but a side longer than any JPEG's.
        let err = prepare(&png_declaring(100_000, 2)).unwrap_err();
        assert!(matches!(err, Error::TooLarge(_)), "{err}");
        assert!(err.to_string().contains("at most 65535 pixels"), "{err}");
        // The longest side allowed still scales: 65,535×8 → 1568×1.
        let (enc, _) = prepare(&png(MAX_SIDE, 8)).unwrap().delivery.unwrap();
        assert_eq!((enc.width, enc.height), (Some(LONG_EDGE), Some(1)));
    }

    /// A valid PNG signature and IHDR declaring `width`×`height`, with a
    /// 1×1 image's data.
    fn png_declaring(width: u32, height: u32) -> Vec<u8> {
        let mut bytes = png(1, 1);
        bytes[16..20].copy_from_slice(&width.to_be_bytes());
        bytes[20..24].copy_from_slice(&height.to_be_bytes());
        let crc = crc_of(&bytes[12..29]);
        bytes[29..33].copy_from_slice(&crc.to_be_bytes());
        bytes
    }

    fn crc_of(data: &[u8]) -> u32 {
        let mut crc = 0xffff_ffffu32;
        for &b in data {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    (crc >> 1) ^ 0xedb8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    #[test]
    fn broken_and_foreign_files_are_refused() {
        let whole = png(64, 64);
        let truncated = prepare(&whole[..whole.len() / 2]).unwrap_err();
        assert!(matches!(truncated, Error::Invalid(_)), "{truncated}");
        let zip = b"PK\x03\x04\x14\x00\x00\x00\x08\x00\xff\xfe\x00\x01";
        assert!(matches!(prepare(zip).unwrap_err(), Error::Unsupported(_)));
        let svg = "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)</script></svg>";
        let err = prepare(svg.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("SVG"), "{err}");
        assert!(prepare(b"a\0b").is_err());
    }

    /// A baseline JPEG of 256×192 with detail in it (as `image` writes one).
    fn jpeg() -> Vec<u8> {
        let img = image::RgbImage::from_fn(256, 192, |x, y| {
            image::Rgb([(x * 7 % 256) as u8, (y * 13 % 256) as u8, ((x ^ y) % 256) as u8])
        });
        let mut out = Vec::new();
        DynamicImage::ImageRgb8(img)
            .write_with_encoder(JpegEncoder::new_with_quality(&mut out, 90))
            .unwrap();
        out
    }

    /// A JPEG cut short is refused in words; a whole one, with bytes after its
    /// end or not, is taken.
    #[test]
    fn a_jpeg_cut_short_is_refused_and_a_whole_one_taken() {
        // A progressive one, as cameras and browsers save them (libjpeg-turbo's
        // `cjpeg -progressive`, 160×120, ten scans).
        let progressive: &[u8] = include_bytes!("../../../engine/tests/fixtures/progressive.jpg");
        // A baseline one with a restart marker after each row of blocks (`cjpeg -restart 1`).
        let restarts: &[u8] = include_bytes!("../../../engine/tests/fixtures/restarts.jpg");
        for (what, whole) in [
            ("baseline", jpeg()),
            ("progressive", progressive.to_vec()),
            ("restarts", restarts.to_vec()),
        ] {
            assert_eq!(&whole[whole.len() - 2..], [0xFF, 0xD9], "{what}: ends with its marker");
            let p = prepare(&whole).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(
                (p.original.mime_type, p.original.width),
                ("image/jpeg", Some(if what == "baseline" { 256 } else { 160 }))
            );
            for cut in [whole.len() / 2, whole.len() * 9 / 10, whole.len() - 40] {
                match prepare(&whole[..cut]) {
                    Err(Error::Invalid(m)) => assert!(m.contains("cut off"), "{what} cut at {cut}: {m}"),
                    other => panic!("{what} cut at {cut} of {}: {other:?}", whole.len()),
                }
            }
            // Cut anywhere, even by its end marker alone, it is refused in words: never
            // a panic, never a picture with a grey rest.
            for cut in (2..=whole.len() - 2)
                .step_by(29)
                .chain([whole.len() - 12, whole.len() - 2])
            {
                assert!(
                    prepare(&whole[..cut]).is_err(),
                    "{what} cut at {cut} of {}",
                    whole.len()
                );
            }
            // What follows the end is not looked at: a phone's motion photo carries a video
            // there, whose bytes hold every marker's pair.
            let mut motion = whole.clone();
            motion.extend((0..200_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
            motion.extend_from_slice(&[0xFF, 0xDA, 0x00, 0x0C, 0x03]);
            assert!(prepare(&motion).is_ok(), "{what}: a video after its end");
            // From an archive, a file an earlier version took is kept as it was.
            let cut = &whole[..whole.len() / 2];
            assert!(
                super::prepare(cut, Arrival::Restored).is_ok(),
                "{what}: restored as it was"
            );
        }
    }

    /// The marker walk on hostile bytes: it ends, and never panics, whatever
    /// lengths and markers a file claims.
    #[test]
    fn the_marker_walk_survives_any_bytes() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for n in 0..3000 {
            let len = (next() % 600) as usize;
            // Biased toward the bytes the walk looks at.
            let mut bytes: Vec<u8> = (0..len)
                .map(|_| match next() % 6 {
                    0 | 1 => 0xFF,
                    2 => [0xDA, 0xD9, 0xD0, 0x00, 0x01, 0xD8][(next() % 6) as usize],
                    _ => next() as u8,
                })
                .collect();
            bytes.splice(0..0, [0xFF, 0xD8]);
            let _ = jpeg_cut_off(&bytes);
            if n % 10 == 0 {
                let _ = prepare(&bytes);
            }
        }
    }

    #[test]
    fn an_empty_file_is_refused_when_sent_and_kept_when_restored() {
        match prepare(b"") {
            Err(Error::Invalid(m)) => assert!(m.contains("empty (0 bytes)"), "{m}"),
            other => panic!("{other:?}"),
        }
        let kept = super::prepare(b"", Arrival::Restored).unwrap();
        assert_eq!(kept.kind, Kind::Text);
    }

    #[test]
    fn text_is_text_whatever_its_name() {
        let p = prepare("fn main() {}\n// <svg> in a comment is fine\n".as_bytes()).unwrap();
        assert_eq!(p.kind, Kind::Text);
        assert!(p.delivery.is_none());
        assert_eq!(p.sha256.len(), 64);
    }
}
