//! Platforms where nothing tells who owns a socket (the BSDs, …): every
//! question is an error, and `peer::supported` is false, so the engine warns
//! at start-up and the guard relies on the token.
//!
//! Verified: compiled only where it is used; nothing to run.

use std::io::{Error, ErrorKind, Result};
use std::net::SocketAddr;

/// An account of this machine: a uid.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Account(u32);

impl Account {
    /// An account no socket can have, for failing closed.
    pub const NOBODY: Account = Account(u32::MAX);
}

impl std::fmt::Display for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "uid {}", self.0)
    }
}

const UNSUPPORTED: &str = "telling who owns a socket is implemented on Linux, macOS and Windows only";

pub fn me() -> Result<Account> {
    Err(Error::new(ErrorKind::Unsupported, UNSUPPORTED))
}

pub fn connection(_local: SocketAddr, _remote: SocketAddr) -> Result<Account> {
    Err(Error::new(ErrorKind::Unsupported, UNSUPPORTED))
}

pub fn listener(_addr: SocketAddr) -> Result<Account> {
    Err(Error::new(ErrorKind::Unsupported, UNSUPPORTED))
}

pub fn name(_account: Account) -> Option<String> {
    None
}
