//! Resident memory of this process, from `/proc/self/status` (Linux).
//!
//! The peak (`VmHWM`) is process-wide and never goes down by itself, so a
//! benchmark that wants the peak of one run resets it first ([`reset_peak`],
//! writing `5` to `/proc/self/clear_refs`) and reads it afterwards
//! ([`peak_rss`]). The allocator keeps memory freed by an earlier run, so
//! [`release_free_memory`] hands it back first and the starting point
//! ([`current_rss`]) is honest. Where these files are missing every function returns
//! `None` / `false` and the caller reports the figure as unknown.

/// The current resident set size in bytes (`VmRSS`).
pub fn current_rss() -> Option<u64> {
    status_kib("VmRSS:").map(|k| k * 1024)
}

/// The peak resident set size in bytes since start or the last
/// [`reset_peak`] (`VmHWM`).
pub fn peak_rss() -> Option<u64> {
    status_kib("VmHWM:").map(|k| k * 1024)
}

/// Resets the peak resident set size to the current one; false where the
/// kernel does not support it.
pub fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Returns freed heap memory to the operating system where the allocator
/// supports it (glibc `malloc_trim`), so that the resident size measured next
/// is what is in use.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases free memory of the allocator; it has no
    // preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

fn status_kib(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_kib(&status, key)
}

/// The value in kB of the line starting with `key` in a `/proc/*/status` text.
fn parse_kib(status: &str, key: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_lines() {
        let s = "Name:\ttutti\nVmHWM:\t  218260 kB\nVmRSS:\t   13596 kB\n";
        assert_eq!(parse_kib(s, "VmHWM:"), Some(218_260));
        assert_eq!(parse_kib(s, "VmRSS:"), Some(13_596));
        assert_eq!(parse_kib(s, "VmSwap:"), None);
        assert_eq!(parse_kib("VmRSS:\tlots kB", "VmRSS:"), None);
    }

    #[test]
    fn peak_follows_an_allocation() {
        if !reset_peak() {
            return; // no procfs: nothing to check
        }
        let before = peak_rss().unwrap();
        let big = vec![1u8; 64 << 20];
        std::hint::black_box(&big);
        let after = peak_rss().unwrap();
        assert!(after >= before + (32 << 20), "{before} -> {after}");
        drop(big);
        assert!(current_rss().unwrap() <= peak_rss().unwrap());
    }
}
