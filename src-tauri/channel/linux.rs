//! The channel on Linux: the session bus name `<identifier>.SingleInstance`,
//! whose owner the bus names and can ping (`channel.rs` says why it is asked).

use super::{Handed, Holder};

/// How long each question to the bus may take.
const ASK: std::time::Duration = std::time::Duration::from_secs(3);

/// The owner of the channel of the app `identifier`. Asked on a thread of
/// its own and waited for at most a few seconds: a bus that does not answer
/// at all (zbus bounds method calls, not its handshake) makes it `Unknown`.
pub fn holder(identifier: &str) -> Holder {
    let identifier = identifier.to_owned();
    holder_within(move || match zbus::blocking::connection::Builder::session() {
        Ok(bus) => holder_on(bus, &identifier),
        Err(e) => Holder::Unknown(format!("the session bus: {e}")),
    })
}

/// `ask`'s answer within the time its questions may take (its own
/// connection, two questions and a ping); `Unknown` past that.
fn holder_within(ask: impl FnOnce() -> Holder + Send + 'static) -> Holder {
    bounded(ASK * 4, ask).unwrap_or_else(|unasked| match unasked {
        Unasked::NoThread(e) => Holder::Unknown(format!("could not ask the session bus: {e}")),
        Unasked::Late(within) => Holder::Unknown(format!("the session bus did not answer in {} s", within.as_secs())),
    })
}

/// Why a question to the bus got no answer (`bounded`).
enum Unasked {
    /// There was no thread to ask it on.
    NoThread(std::io::Error),
    /// It was asked, and not answered within this long.
    Late(std::time::Duration),
}

/// `ask`'s answer, asked on a thread of its own and waited for at most
/// `within`: zbus bounds method calls, not the bus's handshake.
fn bounded<T: Send + 'static>(
    within: std::time::Duration,
    ask: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Unasked> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("channel-ask".into())
        .spawn(move || {
            let _ = tx.send(ask());
        })
        .map_err(Unasked::NoThread)?;
    rx.recv_timeout(within).map_err(|_| Unasked::Late(within))
}

/// The session bus name of the plugin's channel for the app `identifier`.
fn bus_name(identifier: &str) -> String {
    format!("{identifier}.SingleInstance")
}

/// The owner of the channel of the app `identifier` on the bus `bus` leads to.
fn holder_on(bus: zbus::blocking::connection::Builder<'_>, identifier: &str) -> Holder {
    use zbus::names::BusName;

    let name = bus_name(identifier);
    let Ok(name) = BusName::try_from(name.as_str()) else {
        return Holder::Unknown(format!("{name} is not a bus name"));
    };
    let connection = match bus.method_timeout(ASK).build() {
        Ok(c) => c,
        Err(e) => return Holder::Unknown(format!("the session bus: {e}")),
    };
    let bus = match zbus::blocking::fdo::DBusProxy::new(&connection) {
        Ok(bus) => bus,
        Err(e) => return Holder::Unknown(format!("the session bus: {e}")),
    };
    let owner = match bus.get_name_owner(name.clone()) {
        Ok(owner) => owner,
        Err(zbus::fdo::Error::NameHasNoOwner(_)) => return Holder::Nobody,
        Err(e) => return Holder::Unknown(format!("the session bus: {e}")),
    };
    match bus.get_connection_unix_process_id(owner.clone().into()) {
        Ok(pid) if pid == std::process::id() => Holder::This,
        Ok(pid) => Holder::Other {
            pid,
            answers: answers(&connection, owner.as_str()),
        },
        // It left between the two questions.
        Err(zbus::fdo::Error::NameHasNoOwner(_)) => Holder::Nobody,
        Err(e) => Holder::Unknown(format!("the session bus: {e}")),
    }
}

/// Whether the connection `owner` answers a ping (`org.freedesktop.DBus.Peer`)
/// within `ASK`. Any reply counts, an error too (it came from the process);
/// the bus's own "no reply" (the process left or stopped) and a timeout do not.
fn answers(connection: &zbus::blocking::Connection, owner: &str) -> bool {
    match connection.call_method(Some(owner), "/", Some("org.freedesktop.DBus.Peer"), "Ping", &()) {
        Ok(_) => true,
        Err(zbus::Error::MethodError(name, _, _)) => name.as_str() != "org.freedesktop.DBus.Error.NoReply",
        Err(_) => false,
    }
}

/// Hand this launch's arguments and working folder to the app `identifier`
/// that holds the channel, as the single-instance plugin's second launch
/// does, but before the toolkit starts: a second launch that finds its app
/// running is done without opening the display (GTK's start was half of
/// that launch's time), so the window it asks for comes that much sooner.
/// The call is bounded by `patience`, the plugin's is not.
pub fn hand(identifier: &str, patience: std::time::Duration) -> Handed {
    let identifier = identifier.to_owned();
    let argv: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    let cwd = std::env::current_dir()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let handed = bounded(
        patience + ASK,
        move || match zbus::blocking::connection::Builder::session() {
            Ok(bus) => hand_on(bus, &identifier, &argv, &cwd, patience),
            Err(e) => Handed::NotHere(format!("no session bus: {e}")),
        },
    );
    handed.unwrap_or_else(|unasked| match unasked {
        Unasked::NoThread(e) => Handed::NotHere(format!("could not reach the session bus: {e}")),
        Unasked::Late(within) => Handed::NoAnswer(format!(
            "the session bus did not carry a launch's arguments in {} s",
            within.as_secs()
        )),
    })
}

/// `hand`, on the bus `bus` leads to. The plugin's names: the bus name
/// `<identifier>.SingleInstance`, served at that name as a path ('.' → '/',
/// '-' → '_'), method `org.SingleInstance.DBus.ExecuteCallback(argv, cwd)`.
fn hand_on(
    bus: zbus::blocking::connection::Builder<'_>,
    identifier: &str,
    argv: &[String],
    cwd: &str,
    patience: std::time::Duration,
) -> Handed {
    let name = bus_name(identifier);
    let path = format!("/{}", name.replace('.', "/").replace('-', "_"));
    let connection = match bus.method_timeout(patience).build() {
        Ok(c) => c,
        Err(e) => return Handed::NotHere(format!("the session bus: {e}")),
    };
    let called = connection.call_method(
        Some(name.as_str()),
        path.as_str(),
        Some("org.SingleInstance.DBus"),
        "ExecuteCallback",
        &(argv, cwd),
    );
    match called {
        Ok(_) => Handed::Taken,
        Err(zbus::Error::InputOutput(e)) if e.kind() == std::io::ErrorKind::TimedOut => Handed::NoAnswer(format!(
            "it did not take a launch's arguments in {} s",
            patience.as_secs()
        )),
        // The holder left or stopped without answering.
        Err(zbus::Error::MethodError(error, _, _)) if error.as_str() == "org.freedesktop.DBus.Error.NoReply" => {
            Handed::NoAnswer("it did not answer a launch's arguments".into())
        }
        // Nobody holds the channel (the app is starting or leaving), or its
        // holder does not serve the plugin's call: the plugin's own way decides.
        Err(e) => Handed::NotHere(format!("{name}: {e}")),
    }
}

#[cfg(test)]
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
            self.owner().build().unwrap()
        }

        /// The same, serving `served` where the plugin serves its object.
        fn own_serving(&self, served: impl zbus::object_server::Interface) -> zbus::blocking::Connection {
            self.owner().serve_at(PATH, served).unwrap().build().unwrap()
        }

        fn owner(&self) -> Builder<'_> {
            Builder::address(self.address.as_str())
                .unwrap()
                .name(format!("{ID}.SingleInstance"))
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

        let mut other = crate::test_child("channel::linux::tests::own_the_channel_for_a_test", OWN, &bus.address);
        let pid = other.id();
        assert!(
            process::wait_until(Duration::from_secs(20), || bus.ask()
                == Holder::Other { pid, answers: true }),
            "the other process {pid} was not named: {:?}",
            bus.ask()
        );
        // Stopped, it still owns the name, and answers nothing.
        // SAFETY: kill(2) on the child this test started.
        unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
        assert_eq!(bus.ask(), Holder::Other { pid, answers: false });
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

    /// A bus that takes a connection but never answers (its daemon stopped)
    /// is "unknown" within the bound, not a question that never returns.
    #[test]
    fn a_bus_that_does_not_answer_is_unknown_in_time() {
        let bus = Bus::start();
        // SAFETY: kill(2) on the daemon this test started (ended on drop).
        unsafe { libc::kill(bus.daemon.id() as i32, libc::SIGSTOP) };
        let address = bus.address.clone();
        let began = std::time::Instant::now();
        let asked = holder_within(move || holder_on(Builder::address(address.as_str()).unwrap(), ID));
        assert!(matches!(asked, Holder::Unknown(_)), "{asked:?}");
        assert!(began.elapsed() < ASK * 5, "{:?}", began.elapsed());
        unsafe { libc::kill(bus.daemon.id() as i32, libc::SIGCONT) };
    }

    /// A launch's arguments are handed to the app holding the channel, as
    /// the plugin's own second launch hands them: the holder's callback gets
    /// them, word for word, with the folder.
    #[test]
    fn a_launch_hands_its_arguments_to_the_holder() {
        let bus = Bus::start();
        let argv = vec![
            "local-mcp".to_string(),
            "--quick-add".to_string(),
            "é ünïcode".to_string(),
        ];
        let patience = Duration::from_secs(5);
        let hand = |argv: &[String]| {
            hand_on(
                Builder::address(bus.address.as_str()).unwrap(),
                ID,
                argv,
                "/a folder",
                patience,
            )
        };
        assert!(
            matches!(hand(&argv), Handed::NotHere(_)),
            "nobody holds the channel yet"
        );

        let (tx, rx) = std::sync::mpsc::channel();
        let _holder = bus.own_serving(Plugin(tx));
        assert_eq!(hand(&argv), Handed::Taken);
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5))
                .expect("the holder's callback ran"),
            (argv, "/a folder".to_string())
        );
    }

    /// A holder in another process that stops answering is told apart from
    /// one that answers, within the patience given: the launch then takes
    /// over instead of waiting on it for ever. One that holds the name but
    /// serves no such call is not blamed: the plugin's own way decides.
    #[test]
    fn a_holder_that_does_not_answer_is_told_apart() {
        let bus = Bus::start();
        let argv = vec!["local-mcp".to_string()];
        let patience = Duration::from_secs(2);
        let hand = || {
            hand_on(
                Builder::address(bus.address.as_str()).unwrap(),
                ID,
                &argv,
                "/",
                patience,
            )
        };
        let mut other = crate::test_child("channel::linux::tests::own_the_channel_for_a_test", OWN, &bus.address);
        let pid = other.id();
        assert!(
            process::wait_until(Duration::from_secs(20), || hand() == Handed::Taken),
            "the other process {pid} never took the arguments: {:?}",
            hand()
        );
        // SAFETY: kill(2) on the child this test started (killed below).
        unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
        let began = std::time::Instant::now();
        let handed = hand();
        assert!(matches!(handed, Handed::NoAnswer(_)), "{handed:?}");
        assert!(
            began.elapsed() < patience + Duration::from_secs(2),
            "{:?}",
            began.elapsed()
        );
        other.kill().unwrap();
        other.wait().unwrap();

        // A holder serving something else at the plugin's path.
        let _foreign = bus.own_serving(Served);
        let handed = hand();
        assert!(matches!(handed, Handed::NotHere(_)), "{handed:?}");
    }

    /// Where the plugin serves its object for the app `ID`.
    const PATH: &str = "/dev/local_mcp/test_channel/SingleInstance";

    /// The plugin's object: it gives the callback each launch's arguments.
    struct Plugin(std::sync::mpsc::Sender<(Vec<String>, String)>);

    #[zbus::interface(name = "org.SingleInstance.DBus")]
    impl Plugin {
        fn execute_callback(&mut self, argv: Vec<String>, cwd: String) {
            let _ = self.0.send((argv, cwd));
        }
    }

    /// The object the copy serves, as the plugin serves its own.
    struct Served;

    #[zbus::interface(name = "dev.local_mcp.TestChannel")]
    impl Served {
        fn hello(&self) {}
    }

    /// Set on the copy of this test binary that owns the channel on the bus at its value.
    const OWN: &str = "LOCAL_MCP_TEST_OWN_CHANNEL";

    /// Not a test of its own: what the copy of this binary runs.
    #[test]
    #[ignore = "run by the tests above in a child process"]
    fn own_the_channel_for_a_test() {
        let Ok(address) = std::env::var(OWN) else {
            return;
        };
        // As the single-instance plugin does: the name, and an object served on it.
        let _owned = Builder::address(address.as_str())
            .unwrap()
            .name(format!("{ID}.SingleInstance"))
            .unwrap()
            .serve_at(PATH, Served)
            .unwrap()
            .serve_at(PATH, Plugin(std::sync::mpsc::channel().0))
            .unwrap()
            .build()
            .unwrap();
        std::thread::sleep(Duration::from_secs(60));
    }
}
