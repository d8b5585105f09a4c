//! The service on Windows: none is written. A per-user service needs the
//! Task Scheduler, whose entry a person can make with one command; saying
//! it is more honest than a task we cannot test here (Wine has no Task
//! Scheduler). Verified: built for Windows by `npm run check:platforms`.

use super::Manager;
use crate::cli::Failure;

pub(super) fn manager() -> Result<Manager, Failure> {
    Err(Failure(
        "on Windows, start it at login with the Task Scheduler: \
         schtasks /Create /SC ONLOGON /TN local-mcp /TR \"<path>\\local-mcp-server.exe\" (see the README)"
            .into(),
        1,
    ))
}
