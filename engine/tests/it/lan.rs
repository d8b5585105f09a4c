//! The machine's own LAN address (issue 38, finding 5). With `--host
//! 0.0.0.0` the account check, the connection caps, the header timeout and
//! the cookie rule keyed on "is loopback": another account of this machine
//! that came in on the machine's own LAN address passed as a remote peer,
//! and the person's page cookie let it in. "This machine" is now what the
//! kernel's socket table says, whatever the address.

use std::net::{IpAddr, Ipv4Addr};

use serde_json::json;

use crate::common;
use crate::need_root;
use crate::other_account::{nobody_curl, nobody_status};

const TOKEN: &str = "lan-token-0123456789";

/// A non-loopback IPv4 address of this machine; one is added to `lo` for
/// the test where the machine has none (root can).
fn lan_address() -> Ipv4Addr {
    let out = std::process::Command::new("ip")
        .args(["-o", "-4", "addr", "show"])
        .output()
        .expect("ip (iproute2) runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let found = text
        .split_whitespace()
        .filter_map(|w| w.split('/').next()?.parse::<Ipv4Addr>().ok())
        .find(|a| !a.is_loopback());
    if let Some(a) = found {
        return a;
    }
    let alias = Ipv4Addr::new(10, 254, 0, 1);
    let added = std::process::Command::new("ip")
        .args(["addr", "add", "10.254.0.1/32", "dev", "lo"])
        .status()
        .unwrap();
    assert!(added.success(), "no LAN address here, and none could be added to lo");
    alias
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_account_on_the_machines_own_lan_address_is_another_account() {
    need_root!();
    let lan = lan_address();
    let s = common::start(|c| {
        c.host = IpAddr::from([0, 0, 0, 0]);
        c.api_token = Some(TOKEN.into());
    })
    .await;
    let base = format!("http://{lan}:{}", s.engine.addr.port());

    // The person signs the page in over the LAN address: their browser now holds the cookie.
    let r = s
        .http
        .post(format!("{base}/api/session"))
        .json(&json!({ "token": TOKEN }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let set = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    let cookie = set.split(';').next().unwrap().to_owned();
    let status = |c: Option<&str>| {
        let mut request = s.http.get(format!("{base}/api/status"));
        if let Some(c) = c {
            request = request.header("cookie", c);
        }
        request
    };
    assert_eq!(
        status(Some(&cookie)).send().await.unwrap().status(),
        200,
        "the person's own page"
    );
    assert_eq!(status(None).send().await.unwrap().status(), 401, "no cookie, no token");

    // Another account of this machine, on the same address, replaying that cookie: refused.
    let replayed = nobody_curl(
        "GET",
        &format!("{base}/api/status"),
        None,
        &[format!("Cookie: {cookie}")],
    );
    assert_eq!(replayed, "403", "another account on the LAN address is another account");
    // It may come in with the token (a deliberate second account), as on loopback.
    assert_eq!(
        nobody_status("GET", &format!("{base}/api/status"), None, Some(TOKEN)),
        "200"
    );
    // Nothing it sent without the token was taken.
    let queued = nobody_status(
        "POST",
        &format!("{base}/api/instructions"),
        Some(r#"{"content":"from nobody"}"#),
        None,
    );
    assert_eq!(queued, "403");
    let pending: serde_json::Value = s
        .http
        .get(s.api("/api/instructions?status=pending"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(pending["items"].as_array().unwrap().len(), 0, "{pending}");
    s.stop().await;
}
