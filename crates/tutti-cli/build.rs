//! Embeds the git commit the `tutti` binary is built from (`TUTTI_GIT_COMMIT`,
//! shown in `--json` reports), or "unknown" outside a git checkout.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// Reruns this script when `path` changes (a path that does not exist would
/// make cargo rerun it on every build, so only existing ones).
fn watch(path: Option<String>) {
    if let Some(p) = path.filter(|p| std::path::Path::new(p).exists()) {
        println!("cargo:rerun-if-changed={p}");
    }
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]);
    let shown = commit.as_deref().unwrap_or("unknown");
    println!("cargo:rustc-env=TUTTI_GIT_COMMIT={shown}");
    // Rebuild when HEAD moves (a commit, a checkout) or the branch it names does.
    if commit.is_some() {
        for path in ["HEAD", "packed-refs"] {
            watch(git(&["rev-parse", "--git-path", path]));
        }
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watch(git(&["rev-parse", "--git-path", &branch]));
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
