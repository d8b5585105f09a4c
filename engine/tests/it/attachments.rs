//! Attachments end to end on the real server: multipart uploads, the
//! delivery copy (scaled, upright, re-encoded), delivery to the official
//! Rust SDK client as image blocks and embedded text, the files on disk,
//! hostile uploads refused with nothing stored, pending-only changes, and
//! the start-up sweep of files a crash left without a row.

use crate::common;

use std::io::Cursor;

use base64::Engine as _;
use image::{DynamicImage, ImageEncoder, Rgb, RgbImage};
use reqwest::multipart::{Form, Part};
use rmcp::model::{ContentBlock as RawContent, ReadResourceRequestParams, ResourceContents};
use serde_json::{json, Value};

fn png(width: u32, height: u32) -> Vec<u8> {
    let img = RgbImage::from_fn(width, height, |x, y| Rgb([(x % 251) as u8, (y % 241) as u8, 128]));
    let mut out = Vec::new();
    DynamicImage::ImageRgb8(img)
        .write_to(&mut Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

/// A 40×20 JPEG, red on the left and blue on the right, whose EXIF says
/// "rotate 90° clockwise to show": upright it is 20×40, red on top.
fn rotated_jpeg() -> Vec<u8> {
    let img = RgbImage::from_fn(
        40,
        20,
        |x, _| if x < 20 { Rgb([230, 20, 20]) } else { Rgb([20, 20, 230]) },
    );
    // A minimal little-endian TIFF block: one IFD entry, Orientation (0x0112) = 6.
    let mut exif = b"II*\0\x08\0\0\0\x01\0".to_vec();
    exif.extend_from_slice(&[0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0]);
    exif.extend_from_slice(&[0, 0, 0, 0]);
    let mut out = Vec::new();
    let mut encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 95);
    encoder.set_exif_metadata(exif).unwrap();
    encoder
        .write_image(img.as_raw(), 40, 20, image::ExtendedColorType::Rgb8)
        .unwrap();
    out
}

/// Send a request; its status.
async fn status_of(request: reqwest::RequestBuilder) -> u16 {
    request.send().await.unwrap().status().as_u16()
}

fn file(name: &str, bytes: Vec<u8>, declared: &str) -> Part {
    Part::bytes(bytes)
        .file_name(name.to_owned())
        .mime_str(declared)
        .unwrap()
}

/// Every file under the attachment folder.
fn stored_files(s: &common::Server) -> Vec<std::path::PathBuf> {
    let root = s.db.with_file_name("queue.sqlite3-attachments");
    let mut out = Vec::new();
    for dir in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(dir.path()).into_iter().flatten().flatten() {
            out.push(f.path());
        }
    }
    out
}

#[tokio::test]
async fn images_and_text_reach_the_agent_scaled_upright_and_on_disk() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    let notes = "line one\nline two\n".repeat(10);
    let form = Form::new()
        .text("content", "What is wrong here?")
        .part("files", file("big.png", png(6000, 4000), "image/png"))
        .part("files", file("phone.jpg", rotated_jpeg(), "image/jpeg"))
        // The declared type lies both ways: the bytes decide.
        .part("files", file("notes.md", notes.clone().into_bytes(), "image/png"));
    let (status, body) = s.upload(form).await;
    assert_eq!(status, 201, "{body}");
    let item = &body["item"];
    let a = item["attachments"].as_array().unwrap();
    assert_eq!(a.len(), 3);
    assert_eq!(
        (a[0]["kind"].as_str(), a[0]["mime_type"].as_str()),
        (Some("image"), Some("image/png"))
    );
    assert_eq!(
        (a[0]["width"].as_u64(), a[0]["height"].as_u64()),
        (Some(6000), Some(4000))
    );
    assert_eq!(
        (a[0]["delivery"]["width"].as_u64(), a[0]["delivery"]["height"].as_u64()),
        (Some(1568), Some(1045))
    );
    assert_eq!(
        (a[1]["width"].as_u64(), a[1]["height"].as_u64()),
        (Some(20), Some(40)),
        "upright"
    );
    assert_eq!(
        (a[2]["kind"].as_str(), a[2]["mime_type"].as_str()),
        (Some("text"), Some("text/plain; charset=utf-8"))
    );
    assert_eq!(a[2]["sha256"].as_str().unwrap().len(), 64);

    // The agent gets the JSON first, then one image block per image, then the text.
    let client = s.mcp().await;
    let result = common::call(&client, Some("eyes")).await;
    let json = common::result_json(&result);
    assert_eq!(json["instruction"]["content"], "What is wrong here?");
    let delivered = json["instruction"]["attachments"].as_array().unwrap();
    assert_eq!(delivered.len(), 3);
    assert_eq!(result.content.len(), 4, "{:?}", result.content);
    for (n, block) in result.content[1..3].iter().enumerate() {
        let RawContent::Image(img) = block else {
            panic!("block {} is not an image: {block:?}", n + 1)
        };
        let bytes = base64::engine::general_purpose::STANDARD.decode(&img.data).unwrap();
        let path = delivered[n]["path"].as_str().unwrap();
        assert!(std::path::Path::new(path).is_absolute());
        assert_eq!(bytes, std::fs::read(path).unwrap(), "the block is the file at path");
        assert_eq!(img.mime_type, delivered[n]["mime_type"].as_str().unwrap());
        assert_eq!(delivered[n]["inline"], true);
    }
    let RawContent::Image(big) = &result.content[1] else {
        unreachable!()
    };
    let big = image::load_from_memory(&base64::engine::general_purpose::STANDARD.decode(&big.data).unwrap()).unwrap();
    assert_eq!((big.width(), big.height()), (1568, 1045));
    let RawContent::Image(phone) = &result.content[2] else {
        unreachable!()
    };
    let phone = image::load_from_memory(&base64::engine::general_purpose::STANDARD.decode(&phone.data).unwrap())
        .unwrap()
        .to_rgb8();
    assert_eq!((phone.width(), phone.height()), (20, 40));
    let (top, bottom) = (phone.get_pixel(10, 5).0, phone.get_pixel(10, 35).0);
    assert!(top[0] > 150 && top[2] < 100, "red on top: {top:?}");
    assert!(bottom[2] > 150 && bottom[0] < 100, "blue below: {bottom:?}");
    let RawContent::Resource(text) = &result.content[3] else {
        panic!("not a resource: {:?}", result.content[3])
    };
    let ResourceContents::TextResourceContents { uri, text, .. } = &text.resource else {
        panic!("not text")
    };
    assert_eq!(*text, notes);
    assert_eq!(
        *uri,
        format!("local-mcp://attachments/{}", delivered[2]["id"].as_str().unwrap())
    );

    // The same copies by resource, and over HTTP with safe headers.
    let read = client
        .read_resource(ReadResourceRequestParams::new(format!(
            "local-mcp://attachments/{}",
            delivered[0]["id"].as_str().unwrap()
        )))
        .await
        .unwrap();
    let ResourceContents::BlobResourceContents { blob, mime_type, .. } = &read.contents[0] else {
        panic!("not a blob")
    };
    assert_eq!(mime_type.as_deref(), Some("image/png"));
    assert_eq!(
        base64::engine::general_purpose::STANDARD.decode(blob).unwrap(),
        std::fs::read(delivered[0]["path"].as_str().unwrap()).unwrap()
    );
    let original = s
        .http
        .get(s.api(&format!("/api/attachments/{}", a[1]["id"].as_str().unwrap())))
        .send()
        .await
        .unwrap();
    assert_eq!(original.status(), 200);
    let h = original.headers().clone();
    assert_eq!(h["content-type"], "image/jpeg");
    assert_eq!(h["content-security-policy"], "sandbox");
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert!(h["content-disposition"].to_str().unwrap().starts_with("inline"));
    assert_eq!(
        original.bytes().await.unwrap(),
        rotated_jpeg(),
        "the original, byte for byte"
    );
    let text_file = s
        .http
        .get(s.api(&format!(
            "/api/attachments/{}?variant=delivery",
            a[2]["id"].as_str().unwrap()
        )))
        .send()
        .await
        .unwrap();
    assert!(text_file.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .starts_with("attachment"));

    // The ledger keeps them.
    let consumed = s.get_json("/api/instructions?status=consumed").await;
    assert_eq!(consumed["items"][0]["attachments"].as_array().unwrap().len(), 3);
    s.stop().await;
}

#[tokio::test]
async fn an_image_only_instruction_and_what_does_not_fit_goes_by_path() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    // Blank text is fine beside a file; not without one.
    let (status, body) = s
        .upload(
            Form::new()
                .text("content", "  ")
                .part("files", file("a.png", png(8, 8), "image/png")),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["item"]["content"], "");
    let (status, _) = s.upload(Form::new().text("content", "  ")).await;
    assert_eq!(status, 400);
    // A text file over 64 KiB rides by path only.
    let big = "x".repeat(70 * 1024);
    let (status, _) = s
        .upload(
            Form::new()
                .text("content", "log")
                .part("files", file("big.log", big.into_bytes(), "text/plain")),
        )
        .await;
    assert_eq!(status, 201);
    let client = s.mcp().await;
    let first = common::call(&client, Some("p")).await;
    assert_eq!(first.content.len(), 2);
    let second = common::call(&client, Some("p")).await;
    let json = common::result_json(&second);
    assert_eq!(json["instruction"]["attachments"][0]["inline"], false);
    assert_eq!(second.content.len(), 1, "by path only");
    assert!(std::path::Path::new(json["instruction"]["attachments"][0]["path"].as_str().unwrap()).exists());
    s.stop().await;
}

#[tokio::test]
async fn hostile_uploads_are_refused_and_nothing_is_stored() {
    let s = common::start(|_| {}).await;
    // A valid PNG header declaring 100000×100000 (the IHDR's CRC recomputed), and no pixels.
    let mut bomb = png(1, 1);
    bomb[16..20].copy_from_slice(&100_000u32.to_be_bytes());
    bomb[20..24].copy_from_slice(&100_000u32.to_be_bytes());
    let crc = crc32(&bomb[12..29]);
    bomb[29..33].copy_from_slice(&crc.to_be_bytes());
    let whole = png(300, 300);
    let zip = b"PK\x03\x04\x14\x00\x00\x00\x08\x00\x00\x00!\x00 fake zip with \xff\xfe binary".to_vec();
    let svg = br#"<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script></svg>"#.to_vec();
    let cases: Vec<(&str, Form, u16, &str)> = vec![
        (
            "bomb",
            Form::new()
                .text("content", "x")
                .part("files", file("bomb.png", bomb, "image/png")),
            413,
            "50 megapixels",
        ),
        (
            "truncated",
            Form::new().text("content", "x").part(
                "files",
                file("half.png", whole[..whole.len() / 3].to_vec(), "image/png"),
            ),
            400,
            "half.png",
        ),
        (
            "zip",
            Form::new()
                .text("content", "x")
                .part("files", file("photo.png", zip, "image/png")),
            415,
            "accepted",
        ),
        (
            "svg",
            Form::new()
                .text("content", "x")
                .part("files", file("logo.svg", svg, "image/svg+xml")),
            415,
            "SVG",
        ),
        (
            "nine",
            (0..9).fold(Form::new().text("content", "x"), |f, n| {
                f.part("files", file(&format!("{n}.png"), png(4, 4), "image/png"))
            }),
            413,
            "at most 8",
        ),
        (
            "21 MiB",
            Form::new()
                .text("content", "x")
                .part("files", file("huge.txt", vec![b'a'; 21 * 1024 * 1024], "text/plain")),
            413,
            "20 MiB",
        ),
    ];
    for (what, form, want, says) in cases {
        let (status, body) = s.upload(form).await;
        assert_eq!(status, want, "{what}: {body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{what}: {message}");
    }
    assert_eq!(s.get_json("/api/instructions").await["items"], json!([]));
    assert!(stored_files(&s).is_empty(), "{:?}", stored_files(&s));

    // The security layer: a cross-site form, a form without a boundary, a form on another route.
    let form = || Form::new().text("content", "from a web page");
    assert_eq!(
        status_of(
            s.http
                .post(s.api("/api/instructions"))
                .header("origin", "http://evil.example")
                .multipart(form())
        )
        .await,
        403
    );
    assert_eq!(
        status_of(
            s.http
                .post(s.api("/api/instructions"))
                .header("sec-fetch-site", "cross-site")
                .multipart(form())
        )
        .await,
        403
    );
    let r = s
        .http
        .post(s.api("/api/instructions"))
        .header("content-type", "multipart/form-data")
        .body("--x\r\nContent-Disposition: form-data; name=\"content\"\r\n\r\nhi\r\n--x--\r\n")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 415, "no boundary, no form");
    assert_eq!(
        status_of(
            s.http
                .post(s.api("/api/queues"))
                .multipart(Form::new().text("name", "q"))
        )
        .await,
        415,
        "only the upload routes take forms"
    );
    assert_eq!(
        status_of(
            s.http
                .post(s.api("/api/instructions"))
                .header("content-type", "text/plain")
                .body("content=hi")
        )
        .await,
        415
    );
    assert_eq!(s.get_json("/api/instructions").await["items"], json!([]));
    s.stop().await;
}

fn crc32(data: &[u8]) -> u32 {
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

#[tokio::test]
async fn an_empty_file_is_refused_and_the_rest_of_the_request_with_it() {
    let s = common::start(|_| {}).await;
    // Beside text, beside a good file, or alone: a 0-byte file (one still being
    // written, a failed save) would reach an agent as nothing.
    for form in [
        Form::new()
            .text("content", "see the log")
            .part("files", file("x.jpg", Vec::new(), "image/jpeg")),
        Form::new()
            .part("files", file("shot.png", png(8, 8), "image/png"))
            .part("files", file("notes.txt", Vec::new(), "text/plain")),
    ] {
        let (status, body) = s.upload(form).await;
        assert_eq!(status, 400, "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(": the file is empty (0 bytes)"), "{message}");
        assert!(
            message.starts_with("x.jpg") || message.starts_with("notes.txt"),
            "names the file: {message}"
        );
    }
    assert_eq!(s.get_json("/api/instructions").await["items"], json!([]));
    assert!(stored_files(&s).is_empty(), "{:?}", stored_files(&s));
    // Added to a pending instruction: refused, and the instruction is as it was.
    let item = s.add("look at this").await;
    let id = item["id"].as_str().unwrap().to_owned();
    let r = s
        .http
        .post(s.api(&format!("/api/instructions/{id}/attachments")))
        .multipart(Form::new().part("files", file("empty.log", Vec::new(), "text/plain")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert_eq!(
        s.get_json(&format!("/api/instructions/{id}")).await["item"],
        item,
        "unchanged"
    );
}

#[tokio::test]
async fn files_of_a_pending_instruction_change_until_it_is_taken() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    let item = s.add("look at these").await;
    let id = item["id"].as_str().unwrap().to_owned();
    let attach = |form: Form| {
        let url = s.api(&format!("/api/instructions/{id}/attachments"));
        let http = s.http.clone();
        async move {
            let r = http.post(url).multipart(form).send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let (status, body) = attach(Form::new().part("files", file("one.png", png(10, 10), "image/png"))).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = attach(Form::new().part("files", file("two.txt", b"two".to_vec(), "text/plain"))).await;
    assert_eq!(status, 200, "{body}");
    let files = body["item"]["attachments"].as_array().unwrap().clone();
    assert_eq!(
        files.iter().map(|f| f["name"].as_str().unwrap()).collect::<Vec<_>>(),
        ["one.png", "two.txt"]
    );
    assert_eq!(
        stored_files(&s).len(),
        3,
        "original and copy of the image, the text once"
    );
    // Remove the image: its two files go.
    assert_eq!(
        status_of(s.http.delete(s.api(&format!(
            "/api/instructions/{id}/attachments/{}",
            files[0]["id"].as_str().unwrap()
        ))))
        .await,
        200
    );
    assert_eq!(stored_files(&s).len(), 1);
    // Eight is the most.
    let eight = (0..8).fold(Form::new(), |f, n| {
        f.part("files", file(&format!("{n}.txt"), b"x".to_vec(), "text/plain"))
    });
    let (status, body) = attach(eight).await;
    assert_eq!(status, 413, "{body}");

    // Taken: no more changes, and "send again" brings the files along.
    let client = s.mcp().await;
    let got = common::get_user_request(&client, Some("t")).await;
    assert_eq!(got["instruction"]["attachments"][0]["name"], "two.txt");
    let (status, _) = attach(Form::new().part("files", file("late.png", png(4, 4), "image/png"))).await;
    assert_eq!(status, 409);
    assert_eq!(
        status_of(s.http.delete(s.api(&format!(
            "/api/instructions/{id}/attachments/{}",
            files[1]["id"].as_str().unwrap()
        ))))
        .await,
        409
    );
    let (status, again) = s.post(&format!("/api/instructions/{id}/requeue"), json!({})).await;
    assert_eq!(status, 201);
    let copy = &again["item"]["attachments"][0];
    assert_eq!(copy["sha256"], files[1]["sha256"]);
    assert_ne!(copy["id"], files[1]["id"]);
    let got = common::get_user_request(&client, Some("t")).await;
    let path = got["instruction"]["attachments"][0]["path"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(std::fs::read(&path).unwrap(), b"two");

    // Deleting a pending instruction removes its files.
    let (status, again) = s.post(&format!("/api/instructions/{id}/requeue"), json!({})).await;
    assert_eq!(status, 201);
    let before = stored_files(&s).len();
    assert_eq!(
        status_of(
            s.http
                .delete(s.api(&format!("/api/instructions/{}", again["item"]["id"].as_str().unwrap())))
        )
        .await,
        204
    );
    assert_eq!(stored_files(&s).len(), before - 1);
    s.stop().await;
}

#[tokio::test]
async fn files_left_without_a_row_are_swept_at_start() {
    let s = common::start(|_| {}).await;
    let (status, body) = s
        .upload(
            Form::new()
                .text("content", "keep")
                .part("files", file("k.png", png(5, 5), "image/png")),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let root = s.db.with_file_name("queue.sqlite3-attachments");
    let dir = s.stop().await;
    // What a crash between writing files and committing their row leaves.
    std::fs::create_dir_all(root.join("crashed-upload")).unwrap();
    std::fs::write(root.join("crashed-upload").join("x.png"), b"half").unwrap();
    std::fs::write(root.join("stray.tmp"), b"tmp").unwrap();
    let s = common::start_in(dir, |_| {}).await;
    assert!(!root.join("crashed-upload").exists());
    assert!(!root.join("stray.tmp").exists());
    assert_eq!(stored_files(&s).len(), 2, "the kept instruction's original and copy");
    let item = &s.get_json("/api/instructions").await["items"][0];
    let id = item["attachments"][0]["id"].as_str().unwrap();
    assert_eq!(s.get_status(&format!("/api/attachments/{id}"), None, None).await, 200);
    s.stop().await;
}
