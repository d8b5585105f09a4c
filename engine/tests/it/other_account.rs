//! Another account of this machine, for real: `nobody`, reached with
//! `setpriv` (util-linux), which needs root — as CI runs. Elsewhere the tests
//! that need it say so and stop (CI must not: there they always run).

use std::process::Command;

pub const NOBODY: &str = "65534";

pub fn root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
}

/// Skip (loudly) where no second account can be used; CI runs as root, so
/// there the tests always run.
#[macro_export]
macro_rules! need_root {
    () => {
        if !$crate::other_account::root() {
            assert!(std::env::var_os("CI").is_none(), "CI must run these as root");
            eprintln!("skipped: switching to another account needs root");
            return;
        }
    };
}

/// `program args…` run as `nobody`.
pub fn as_nobody(program: &str, args: &[&str]) -> Command {
    let mut c = Command::new("setpriv");
    c.args(["--reuid", NOBODY, "--regid", NOBODY, "--clear-groups", program])
        .args(args);
    c
}

/// The HTTP status `nobody` gets for a request (curl; 000 when there is no answer).
pub fn nobody_status(method: &str, url: &str, body: Option<&str>, bearer: Option<&str>) -> String {
    nobody_curl(
        method,
        url,
        body,
        &bearer
            .map(|t| format!("Authorization: Bearer {t}"))
            .into_iter()
            .collect::<Vec<_>>(),
    )
}

/// The HTTP status `nobody` gets for a request with extra headers.
pub fn nobody_curl(method: &str, url: &str, body: Option<&str>, headers: &[String]) -> String {
    let mut args = vec![
        "-s",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "--max-time",
        "3",
        "-X",
        method,
    ];
    for h in headers {
        args.extend(["-H", h.as_str()]);
    }
    if let Some(body) = body {
        args.extend([
            "-H",
            "Content-Type: application/json",
            "-H",
            "Accept: application/json, text/event-stream",
            "--data",
            body,
        ]);
    }
    args.push(url);
    let out = as_nobody("curl", &args).output().expect("setpriv and curl run");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}
