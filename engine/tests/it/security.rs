//! The security rules (`docs/ARCHITECTURE.md`, "Security"): foreign Host/Origin,
//! non-JSON writes, CORS, bearer token, bind rules.

use crate::common;

use std::time::Duration;

use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::json;

const ROUTES: [&str; 5] = ["/", "/healthz", "/api/status", "/api/instructions", "/api/events"];

#[tokio::test]
async fn foreign_host_and_origin_are_refused_on_every_route() {
    let s = common::start(|_| {}).await;
    let port = s.engine.addr.port();
    let mcp_body = common::raw_call_body(1, "x");
    for route in ROUTES.iter().chain(["/mcp"].iter()) {
        let post = *route == "/mcp";
        let req = |extra: (&'static str, String)| {
            let r = if post {
                s.http
                    .post(s.api(route))
                    .header("content-type", "application/json")
                    .header("accept", "application/json, text/event-stream")
                    .body(mcp_body.clone())
            } else {
                s.http.get(s.api(route))
            };
            r.header(extra.0, extra.1)
        };
        for host in [
            "evil.example".to_owned(),
            format!("evil.example:{port}"),
            format!("127.0.0.1:{}", port + 1),
            "localhost.evil.example".into(),
        ] {
            let r = req(("host", host.clone())).send().await.unwrap();
            assert_eq!(r.status(), 403, "{route} with Host {host}");
            let body: serde_json::Value = r.json().await.unwrap();
            assert_eq!(body["error"]["code"], "forbidden");
        }
        for origin in [
            "http://evil.example".to_owned(),
            "null".into(),
            format!("https://127.0.0.1:{port}"),
            format!("http://127.0.0.1:{}", port + 1),
        ] {
            let r = req(("origin", origin.clone())).send().await.unwrap();
            assert_eq!(r.status(), 403, "{route} with Origin {origin}");
        }
        // The page's own origin is fine.
        let r = req(("origin", format!("http://127.0.0.1:{port}")))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{route} from its own origin: {}", r.status());
        assert!(
            r.headers().get("access-control-allow-origin").is_none(),
            "no CORS grants"
        );
    }
    s.stop().await;
}

/// The guard's Host, Origin and Sec-Fetch-Site rules read one value each: a
/// second value (which something behind the guard might read instead) is
/// refused, whichever order they come in, and nothing is consumed. Sent on a raw socket: HTTP clients send each of these once.
#[tokio::test]
async fn a_header_the_guard_reads_sent_twice_is_refused() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    s.add("not for a forged request").await;
    let port = s.engine.addr.port();
    let own = format!("127.0.0.1:{port}");
    let pairs = [
        ("Host", own.clone(), "evil.example".to_owned()),
        ("Origin", format!("http://{own}"), "http://evil.example".to_owned()),
        ("Sec-Fetch-Site", "none".to_owned(), "cross-site".to_owned()),
    ];
    let body = common::raw_call_body(1, "forger");
    for (name, good, bad) in &pairs {
        for (first, second) in [(good, bad), (bad, good), (good, good)] {
            let host = if *name == "Host" {
                String::new()
            } else {
                format!("Host: {own}\r\n")
            };
            let request = format!(
                "POST /mcp HTTP/1.1\r\n{host}{name}: {first}\r\n{name}: {second}\r\n\
                 Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let mut tcp = tokio::net::TcpStream::connect(s.engine.addr).await.unwrap();
            tcp.write_all(request.as_bytes()).await.unwrap();
            let mut answer = String::new();
            tokio::time::timeout(Duration::from_secs(10), tcp.read_to_string(&mut answer))
                .await
                .expect("an answer within 10 s")
                .unwrap();
            let status = answer.split_whitespace().nth(1).unwrap_or("");
            assert_eq!(status, "400", "{name}: {first} then {second}: {answer}");
        }
    }
    let status = s.get_json("/api/status").await;
    assert_eq!(status["queue"]["pending_count"], 1, "nothing consumed: {status}");
    s.stop().await;
}

#[tokio::test]
async fn writes_must_be_json_and_no_cors_is_granted() {
    let s = common::start(|_| {}).await;
    for (ct, body) in [
        ("text/plain", "{\"content\":\"x\"}"),
        ("application/x-www-form-urlencoded", "content=x"),
        ("multipart/form-data; boundary=x", "--x--"),
    ] {
        for path in ["/api/instructions", "/mcp"] {
            let r = s
                .http
                .post(s.api(path))
                .header("content-type", ct)
                .body(body)
                .send()
                .await
                .unwrap();
            // The upload route reads a real form (this one is empty: nothing
            // to queue); a cross-site one never gets there (Origin,
            // Sec-Fetch-Site: `tests/attachments.rs`).
            let want = if path == "/api/instructions" && ct.starts_with("multipart/") {
                400
            } else {
                415
            };
            assert_eq!(r.status(), want, "{path} {ct}");
        }
    }
    let r = s
        .http
        .post(s.api("/api/instructions"))
        .body("{\"content\":\"x\"}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 415, "no content type");
    assert_eq!(
        s.get_json("/api/instructions").await["items"],
        json!([]),
        "nothing was queued"
    );
    let r = s
        .http
        .request(reqwest::Method::OPTIONS, s.api("/api/instructions"))
        .header("origin", "http://evil.example")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert!(r.headers().get("access-control-allow-origin").is_none());
    let r = s.http.get(s.api("/")).send().await.unwrap();
    let csp = r.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(
        csp.contains("default-src 'self'") && csp.contains("script-src 'self'"),
        "{csp}"
    );
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    s.stop().await;
}

/// Each route brings its body policy (`http/body.rs`), and it covers the
/// route's 405 answer too: a method a route lacks is answered only past the
/// policy, as when the guard applied it to every request.
#[tokio::test]
async fn a_routes_body_policy_comes_before_its_405() {
    let s = common::start(|_| {}).await;
    let send = |method: reqwest::Method, path: &str, ct: &str, body: Vec<u8>| {
        s.http
            .request(method, s.api(path))
            .header("content-type", ct)
            .body(body)
            .send()
    };
    // A JSON-only route, a method it lacks: the text body is refused first.
    let r = send(reqwest::Method::PUT, "/api/status", "text/plain", b"x".to_vec())
        .await
        .unwrap();
    assert_eq!(r.status(), 415);
    let r = send(reqwest::Method::PUT, "/api/status", "application/json", b"{}".to_vec())
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    // An upload route takes its form whatever the method: the missing one is 405.
    let form = "multipart/form-data; boundary=x";
    let r = send(reqwest::Method::PUT, "/api/instructions", form, b"--x--".to_vec())
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    // Its form may be larger than JSON; a JSON body there may not.
    let big = vec![b' '; 2 * 1024 * 1024];
    let r = send(reqwest::Method::PUT, "/api/instructions", form, big.clone())
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    let r = send(reqwest::Method::PUT, "/api/instructions", "application/json", big)
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    // The page and MCP take JSON as the API does.
    let r = send(reqwest::Method::POST, "/", "text/plain", b"x".to_vec())
        .await
        .unwrap();
    assert_eq!(r.status(), 415);
    let r = send(reqwest::Method::POST, "/mcp/q/other", "text/plain", b"x".to_vec())
        .await
        .unwrap();
    assert_eq!(r.status(), 415);
    s.stop().await;
}

#[tokio::test]
async fn a_token_guards_the_api_and_mcp_but_not_health() {
    let token = "correct-horse-battery-staple";
    let s = common::start(|c| {
        c.api_token = Some(token.into());
        c.settings.default_wait_seconds = 0;
    })
    .await;
    let h = s.http.get(s.api("/healthz")).send().await.unwrap();
    assert_eq!(h.status(), 200, "health stays open for probes");
    for route in ["/api/status", "/api/instructions", "/api/events", "/api/config"] {
        for auth in [
            None,
            Some("Bearer wrong"),
            Some("Bearer "),
            Some("Basic Y29ycmVjdA=="),
            Some(&format!("Bearer {token}x")[..]),
        ] {
            let mut r = s.http.get(s.api(route));
            if let Some(a) = auth {
                r = r.header("authorization", a);
            }
            let r = r.send().await.unwrap();
            assert_eq!(r.status(), 401, "{route} with {auth:?}");
            assert_eq!(r.headers()["www-authenticate"], "Bearer");
        }
        let r = s
            .http
            .get(s.api(&format!("{route}?token={token}&access_token={token}")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401, "a token in the query string is never read");
    }
    let r = s
        .http
        .post(s.api("/mcp"))
        .header("content-type", "application/json")
        .body(common::raw_call_body(1, "x"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);

    let r = s
        .http
        .post(s.api("/api/instructions"))
        .bearer_auth(token)
        .json(&json!({"content": "with a token"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    // The official client with the header gets through.
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", s.url)).auth_header(token),
    );
    let client = ().serve(transport).await.unwrap();
    let r = common::get_user_request(&client, Some("authed")).await;
    assert_eq!(r["instruction"]["content"], "with a token");
    s.stop().await;
}

#[tokio::test]
async fn a_non_loopback_bind_needs_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = engine::Config::for_db(dir.path().join("q.sqlite3"));
    config.host = "0.0.0.0".parse().unwrap();
    let err = engine::start(config, Default::default()).await.err().expect("refused");
    assert!(err.to_string().contains("API_TOKEN"), "{err}");
}

#[tokio::test]
async fn a_taken_port_falls_back_to_the_next_free_one() {
    let taken = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = taken.local_addr().unwrap().port();
    let s = common::start(|c| {
        c.port = port;
        c.port_fallback = true;
    })
    .await;
    assert_ne!(s.engine.addr.port(), port);
    assert_eq!(s.engine.port_fallback_from, Some(port));
    assert!(s.get_json("/healthz").await["status"] == "ok");
    s.stop().await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = engine::Config::for_db(dir.path().join("q.sqlite3"));
    config.port = port;
    let err = tokio::time::timeout(Duration::from_secs(5), engine::start(config, Default::default()))
        .await
        .unwrap()
        .err()
        .expect("no fallback: refused");
    assert!(err.to_string().contains("in use"), "{err}");
}

#[tokio::test]
async fn the_page_signs_in_with_a_cookie_never_a_url() {
    let token = "cookie-flow-token";
    let s = common::start(|c| c.api_token = Some(token.into())).await;
    let info = s.get_json("/api/session").await;
    assert_eq!(info, json!({"token_required": true, "authenticated": false}));
    let wrong = s
        .http
        .post(s.api("/api/session"))
        .json(&json!({"token": "nope"}))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    assert!(wrong.headers().get("set-cookie").is_none());
    let right = s
        .http
        .post(s.api("/api/session"))
        .json(&json!({"token": token}))
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), 204);
    let cookie = right.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    assert!(!cookie.contains(token), "the cookie does not carry the token itself");
    let pair = cookie.split(';').next().unwrap().to_owned();
    let ok = s
        .http
        .get(s.api("/api/status"))
        .header("cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200, "the cookie stands for the token");
    let sse = s
        .http
        .get(s.api("/api/events"))
        .header("cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(
        sse.status(),
        200,
        "EventSource cannot send headers; the cookie is enough"
    );
    drop(sse);
    let forged = s
        .http
        .get(s.api("/api/status"))
        .header("cookie", "local_mcp_session=00ff")
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 401);
    let info: serde_json::Value = s
        .http
        .get(s.api("/api/session"))
        .header("cookie", &pair)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(info["authenticated"], true);
    s.stop().await;
}

#[tokio::test]
async fn page_files_are_embedded_revalidated_and_confined() {
    let s = common::start(|_| {}).await;
    let index = s.http.get(s.api("/")).send().await.unwrap();
    assert_eq!(index.status(), 200);
    assert!(index.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert_eq!(index.headers()["cache-control"], "no-cache");
    let html = index.text().await.unwrap();
    assert!(
        html.contains("js/app.js") && !html.contains("<script>"),
        "no inline script"
    );
    for (path, mime) in [
        ("/css/tokens.css", "text/css"),
        ("/js/app.js", "javascript"),
        ("/fonts/fraunces-latin-600-normal.woff2", "font/woff2"),
    ] {
        let r = s.http.get(s.api(path)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        assert!(r.headers()["content-type"].to_str().unwrap().contains(mime), "{path}");
        let etag = r.headers()["etag"].to_str().unwrap().to_owned();
        let again = s
            .http
            .get(s.api(path))
            .header("if-none-match", &etag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 304, "{path} revalidates");
    }
    for path in [
        "/nope.js",
        "/../Cargo.toml",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/css/../../engine/Cargo.toml",
    ] {
        let r = s.http.get(s.api(path)).send().await.unwrap();
        assert_eq!(r.status(), 404, "{path}");
    }
    s.stop().await;
}

/// The token never reaches the log, whatever a client does with it — even at
/// the most verbose log level.
#[cfg(unix)]
#[tokio::test]
async fn the_token_is_never_logged() {
    let dir = tempfile::tempdir().unwrap();
    let token = "tok-7c1f9e2b-never-log-me";
    let mut b = common::spawn_binary(
        &dir.path().join("q.sqlite3"),
        &[("API_TOKEN", token), ("LOG_LEVEL", "trace")],
    )
    .await;
    let http = reqwest::Client::new();
    let url = &b.url;
    let right = http
        .get(format!("{url}/api/status"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), 200);
    let near = format!("{token}x");
    let wrong = http
        .get(format!("{url}/api/status"))
        .bearer_auth(&near)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let in_query = http
        .get(format!("{url}/api/status?token={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(in_query.status(), 401);
    let session = http
        .post(format!("{url}/api/session"))
        .json(&json!({ "token": near }))
        .send()
        .await
        .unwrap();
    assert_eq!(session.status(), 401);
    let mcp = http
        .post(format!("{url}/mcp"))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(common::raw_call_body(1, "logged"))
        .send()
        .await
        .unwrap();
    assert_eq!(mcp.status(), 200);
    let _ = mcp.text().await;
    // A clean stop flushes everything it would log.
    let pid = b.child.id().unwrap().to_string();
    let term = tokio::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .unwrap();
    assert!(term.success());
    assert!(b.child.wait().await.unwrap().success(), "a clean exit");
    let log = b.log.lock().unwrap().join("\n");
    assert!(log.len() > 200, "trace logging produced output: {log}");
    assert!(!log.contains("never-log-me"), "the token leaked into the log:\n{log}");
}

/// Settings → access token: require one, regenerate it, stop requiring it —
/// effective at once, published to the connection-info file, kept across a
/// restart, and refused when API_TOKEN owns the token.
#[tokio::test]
async fn the_page_can_require_regenerate_and_remove_the_token() {
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let token_file = dir.path().join("token");
    let connection_file = dir.path().join("connection.json");
    let (tf, cf) = (token_file.clone(), connection_file.clone());
    let s = common::start_in(dir.clone(), move |c| {
        c.token_file = Some(tf);
        c.connection_file = Some(cf);
    })
    .await;
    let state = s.get_json("/api/token").await;
    assert_eq!(state, json!({"required": false, "changeable": true, "source": "file"}));

    let change = |action: &'static str, bearer: Option<String>| {
        let mut r = s.http.post(s.api("/api/token")).json(&json!({ "action": action }));
        if let Some(t) = bearer {
            r = r.bearer_auth(t);
        }
        r.send()
    };
    let r = change("regenerate", None).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["cache-control"], "no-store");
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cookie.starts_with("local_mcp_session_") && cookie.contains("HttpOnly") && cookie.contains("Max-Age="),
        "this server's own, expiring: {cookie}"
    );
    let first = r.json::<serde_json::Value>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(std::fs::read_to_string(&token_file).unwrap().trim(), first);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    let published: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&connection_file).unwrap()).unwrap();
    assert_eq!(
        published["token"],
        first.as_str(),
        "the CLI and the bridge follow the change"
    );

    // In force at once: without it 401, with it (or the new page cookie) 200.
    assert_eq!(s.get_status("/api/status", None, None).await, 401);
    assert_eq!(s.get_status("/api/status", Some(&first), None).await, 200);
    let session = cookie.split(';').next().unwrap().to_owned();
    assert_eq!(s.get_status("/api/status", None, Some(&session)).await, 200);
    // Changing it needs the token too.
    assert_eq!(change("remove", None).await.unwrap().status(), 401);

    let r = change("regenerate", Some(first.clone())).await.unwrap();
    let second = r.json::<serde_json::Value>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(first, second);
    assert_eq!(
        s.get_status("/api/status", Some(&first), None).await,
        401,
        "the old token stops working"
    );

    // A restart keeps requiring the token from the file.
    let dir = s.stop().await;
    let (tf, cf) = (token_file.clone(), connection_file.clone());
    let s = common::start_in(dir, move |c| {
        c.token_file = Some(tf);
        c.connection_file = Some(cf);
    })
    .await;
    assert_eq!(s.get_status("/api/status", None, None).await, 401);
    let r = s
        .http
        .post(s.api("/api/token"))
        .bearer_auth(&second)
        .json(&json!({"action": "remove"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(!token_file.exists());
    assert_eq!(s.get_json("/api/token").await["required"], false);
    assert_eq!(s.get_status("/api/status", None, None).await, 200);
    let bad = s
        .http
        .post(s.api("/api/token"))
        .json(&json!({"action": "steal"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 422);
    s.stop().await;

    // API_TOKEN owns the token: the page may not change it.
    let fixed = common::start(|c| {
        c.api_token = Some("fixed-token".into());
        c.token_file = Some(std::env::temp_dir().join("never-written-token"));
    })
    .await;
    let r = fixed
        .http
        .post(fixed.api("/api/token"))
        .bearer_auth("fixed-token")
        .json(&json!({"action": "remove"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 409);
    assert!(r.text().await.unwrap().contains("API_TOKEN"));
    fixed.stop().await;
}
