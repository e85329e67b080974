//! [`launch`]: starting the processes of a named system on this host, as
//! `tutti launch -n P -- <command>` does, and removing the segments they
//! leave behind.

use super::system;

/// Starts `processes` copies of `command` as one named system on this host
/// (what `tutti launch -n P -- <command>` does): each gets `TUTTI_SYSTEM` (a
/// fresh name), `TUTTI_RANKS`, `TUTTI_RANK` and `TUTTI_TRANSPORT=shm`, so a
/// [`World`](crate::world::World) it builds from the environment is rank
/// `TUTTI_RANK` of a shared-memory world. Waits for all and returns their exit
/// statuses in rank order; segments a crashed run left behind are removed.
///
/// ```no_run
/// let status = tutti::world::launch(2, std::process::Command::new("my-spmd-program")).unwrap();
/// assert!(status.iter().all(|s| s.success()));
/// ```
pub fn launch(
    processes: usize,
    mut command: std::process::Command,
) -> std::io::Result<Vec<std::process::ExitStatus>> {
    use std::io::{Error, ErrorKind};
    if processes == 0 || processes > system::MAX_MEMBERS {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "a system has 1 to {} processes, not {processes}",
                system::MAX_MEMBERS
            ),
        ));
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!("launch-{}-{nanos:x}", std::process::id());
    command
        .env("TUTTI_SYSTEM", &name)
        .env("TUTTI_RANKS", processes.to_string())
        .env("TUTTI_TRANSPORT", "shm");
    let mut children = Vec::with_capacity(processes);
    for rank in 0..processes {
        command.env("TUTTI_RANK", rank.to_string());
        match command.spawn() {
            Ok(c) => children.push(c),
            Err(e) => {
                for mut c in children {
                    let _ = c.kill();
                    let _ = c.wait();
                }
                sys_cleanup(&name);
                return Err(e);
            }
        }
    }
    let statuses: std::io::Result<Vec<_>> = children.iter_mut().map(|c| c.wait()).collect();
    sys_cleanup(&name);
    statuses
}

/// Removes what a system left behind (every member gone).
fn sys_cleanup(name: &str) {
    system::remove_all(name);
}
