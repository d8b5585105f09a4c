//! Who holds the desktop's single-instance channel, asked when a start is
//! late. The single-instance plugin owns the channel for the running app and,
//! in a second launch, calls whoever owns it, with no bound of its own: a
//! holder that neither answers nor leaves keeps that start waiting for ever.
//! A start is also late for reasons of its own (the toolkit's first start on
//! a busy machine), and ending it then would be wrong. So a late start asks
//! who holds the channel before it decides (`relaunch::watch_start`).
//!
//! On Linux the channel is the session bus name `<identifier>.SingleInstance`,
//! and the bus says which process owns it. Elsewhere (a named mutex and a
//! window on Windows, a socket on macOS) there is no owner to ask.

/// Who owns the channel now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    /// Nobody: whatever holds this start up, it is not another app.
    Nobody,
    /// This process: the channel is up.
    This,
    /// Another process, by its pid.
    Other(u32),
    /// Not known here (no session bus to ask, or another platform), and why.
    Unknown(String),
}

/// The owner of the channel of the app `identifier`.
#[cfg(target_os = "linux")]
pub fn holder(identifier: &str) -> Holder {
    match zbus::blocking::connection::Builder::session() {
        Ok(bus) => holder_on(bus, identifier),
        Err(e) => Holder::Unknown(format!("the session bus: {e}")),
    }
}

/// The owner of the channel of the app `identifier` on the bus `bus` leads to.
#[cfg(target_os = "linux")]
fn holder_on(bus: zbus::blocking::connection::Builder<'_>, identifier: &str) -> Holder {
    use std::time::Duration;
    use zbus::names::BusName;

    let name = format!("{identifier}.SingleInstance");
    let Ok(name) = BusName::try_from(name.as_str()) else {
        return Holder::Unknown(format!("{name} is not a bus name"));
    };
    // The bus itself may be what is slow: a bounded question.
    let connection = match bus.method_timeout(Duration::from_secs(5)).build() {
        Ok(c) => c,
        Err(e) => return Holder::Unknown(format!("the session bus: {e}")),
    };
    let bus = match zbus::blocking::fdo::DBusProxy::new(&connection) {
        Ok(bus) => bus,
        Err(e) => return Holder::Unknown(format!("the session bus: {e}")),
    };
    let owner = match bus.get_name_owner(name) {
        Ok(owner) => owner,
        Err(zbus::fdo::Error::NameHasNoOwner(_)) => return Holder::Nobody,
        Err(e) => return Holder::Unknown(format!("the session bus: {e}")),
    };
    match bus.get_connection_unix_process_id(owner.into()) {
        Ok(pid) if pid == std::process::id() => Holder::This,
        Ok(pid) => Holder::Other(pid),
        // It left between the two questions.
        Err(zbus::fdo::Error::NameHasNoOwner(_)) => Holder::Nobody,
        Err(e) => Holder::Unknown(format!("the session bus: {e}")),
    }
}

/// The owner of the channel of the app `identifier`.
#[cfg(not(target_os = "linux"))]
pub fn holder(_identifier: &str) -> Holder {
    Holder::Unknown("this platform's single-instance channel names no owner".into())
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use super::*;
    use engine::process;
    use std::process::{Command, Stdio};
    use std::time::Duration;
    use zbus::blocking::connection::Builder;

    const ID: &str = "dev.local-mcp.test-channel";

    /// A private session bus (`dbus-daemon --session`), ended on drop.
    struct Bus {
        daemon: std::process::Child,
        address: String,
    }

    impl Bus {
        fn start() -> Bus {
            let mut daemon = Command::new("dbus-daemon")
                .args(["--session", "--nofork", "--print-address=1"])
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("dbus-daemon (package dbus) runs");
            let mut line = String::new();
            let out = daemon.stdout.take().unwrap();
            std::io::BufRead::read_line(&mut std::io::BufReader::new(out), &mut line).unwrap();
            Bus {
                daemon,
                address: line.trim().to_string(),
            }
        }

        fn ask(&self) -> Holder {
            holder_on(Builder::address(self.address.as_str()).unwrap(), ID)
        }

        /// A connection of this process that owns the channel's name.
        fn own(&self) -> zbus::blocking::Connection {
            Builder::address(self.address.as_str())
                .unwrap()
                .name(format!("{ID}.SingleInstance"))
                .unwrap()
                .build()
                .unwrap()
        }
    }

    impl Drop for Bus {
        fn drop(&mut self) {
            let _ = self.daemon.kill();
            let _ = self.daemon.wait();
        }
    }

    /// The bus names who owns the channel: nobody, this process, another
    /// process by its pid, and nobody again once that one is gone. A real
    /// dbus-daemon, and a copy of this test binary as the other process.
    #[test]
    fn the_bus_names_who_holds_the_channel() {
        let bus = Bus::start();
        assert_eq!(bus.ask(), Holder::Nobody);

        let mine = bus.own();
        assert_eq!(bus.ask(), Holder::This);
        drop(mine);
        assert!(
            process::wait_until(Duration::from_secs(10), || bus.ask() == Holder::Nobody),
            "the name was not released when its connection closed: {:?}",
            bus.ask()
        );

        let mut other = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "channel::tests::own_the_channel_for_a_test",
                "--ignored",
                "--nocapture",
            ])
            .env(OWN, &bus.address)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let pid = other.id();
        assert!(
            process::wait_until(Duration::from_secs(20), || bus.ask() == Holder::Other(pid)),
            "the other process {pid} was not named: {:?}",
            bus.ask()
        );
        other.kill().unwrap();
        other.wait().unwrap();
        assert!(
            process::wait_until(Duration::from_secs(10), || bus.ask() == Holder::Nobody),
            "the name outlived its owner: {:?}",
            bus.ask()
        );
    }

    /// A bus that does not answer is "unknown", not "nobody": a start never
    /// takes silence for an empty channel.
    #[test]
    fn a_bus_that_cannot_be_reached_is_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let address = format!("unix:path={}", dir.path().join("no-bus").display());
        let asked = holder_on(Builder::address(address.as_str()).unwrap(), ID);
        assert!(matches!(asked, Holder::Unknown(_)), "{asked:?}");
    }

    /// Set on the copy of this test binary that owns the channel on the bus at its value.
    const OWN: &str = "LOCAL_MCP_TEST_OWN_CHANNEL";

    /// Not a test of its own: what the copy of this binary runs.
    #[test]
    #[ignore = "run by the_bus_names_who_holds_the_channel in a child process"]
    fn own_the_channel_for_a_test() {
        let Ok(address) = std::env::var(OWN) else {
            return;
        };
        let _owned = Builder::address(address.as_str())
            .unwrap()
            .name(format!("{ID}.SingleInstance"))
            .unwrap()
            .build()
            .unwrap();
        std::thread::sleep(Duration::from_secs(60));
    }
}
