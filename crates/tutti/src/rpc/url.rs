//! Blip's addresses: `tcp://host:port/group/obj/name` (or `stcp://…`) names a
//! published object; `tcp://host:port` names a host (an RPC endpoint). URL
//! patterns (`*` matches any run of characters) select hosts for failure
//! callbacks.

use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::str::FromStr;

use super::RpcError;

/// The address of a published object, `tcp://host:port/group/obj/name`
/// (Blip's `stcp://` is accepted as the same scheme).
///
/// ```
/// use tutti::rpc::Url;
///
/// let url: Url = "stcp://localhost:7000/chem/work/server".parse().unwrap();
/// assert_eq!((url.host(), url.port(), url.path()), ("localhost", 7000, "chem/work/server"));
/// assert_eq!(url.host_url(), "tcp://localhost:7000");
/// assert!("http://localhost:7000/x".parse::<Url>().is_err());
/// assert!("tcp://localhost/x".parse::<Url>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Url {
    host: String,
    port: u16,
    path: String,
}

impl Url {
    /// The host part (a name or an address).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The object's path after the host, without the leading `/`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The host's own URL, `tcp://host:port` (what failure patterns match).
    pub fn host_url(&self) -> String {
        format!("tcp://{}:{}", self.host, self.port)
    }

    /// The URL of the object at `path` on the same host.
    pub fn join(&self, path: &str) -> Result<Url, RpcError> {
        check_path(path)?;
        Ok(Url {
            path: path.to_string(),
            ..self.clone()
        })
    }

    /// The host's socket address; IPv4 preferred when a name has several.
    pub(crate) fn resolve(&self) -> Result<SocketAddr, RpcError> {
        let addrs: Vec<SocketAddr> = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| RpcError::BadUrl(format!("{self}: cannot resolve the host: {e}")))?
            .collect();
        addrs
            .iter()
            .find(|a| a.is_ipv4())
            .or(addrs.first())
            .copied()
            .ok_or_else(|| RpcError::BadUrl(format!("{self}: the host has no address")))
    }

    pub(crate) fn new(host: String, port: u16, path: String) -> Url {
        Url { host, port, path }
    }
}

/// A published object's path: one or more non-empty segments of
/// `[A-Za-z0-9._-]` separated by `/`.
pub(crate) fn check_path(path: &str) -> Result<(), RpcError> {
    let ok = !path.is_empty()
        && path.len() <= 256
        && path.split('/').all(|seg| {
            !seg.is_empty()
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        });
    if ok {
        Ok(())
    } else {
        Err(RpcError::BadUrl(format!(
            "`{path}` is not an object path (segments of letters, digits, `.`, `_`, `-`, separated by `/`)"
        )))
    }
}

impl FromStr for Url {
    type Err = RpcError;

    fn from_str(s: &str) -> Result<Url, RpcError> {
        let bad = |why: &str| RpcError::BadUrl(format!("`{s}`: {why}"));
        let rest = s
            .strip_prefix("tcp://")
            .or_else(|| s.strip_prefix("stcp://"))
            .ok_or_else(|| bad("expected tcp://host:port/path (or stcp://)"))?;
        let (hostport, path) = rest
            .split_once('/')
            .ok_or_else(|| bad("no object path after the host"))?;
        let (host, port) = hostport
            .rsplit_once(':')
            .ok_or_else(|| bad("no port after the host"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let port: u16 = port.parse().map_err(|_| bad("the port is not a number"))?;
        check_path(path)?;
        Ok(Url {
            host: host.to_string(),
            port,
            path: path.to_string(),
        })
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "tcp://[{}]:{}/{}", self.host, self.port, self.path)
        } else {
            write!(f, "tcp://{}:{}/{}", self.host, self.port, self.path)
        }
    }
}

/// Whether `text` matches `pattern`, where `*` matches any run of characters
/// (also none) and every other character itself.
pub(crate) fn matches(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_print() {
        let u: Url = "tcp://127.0.0.1:9/a/b/c".parse().unwrap();
        assert_eq!(u.to_string(), "tcp://127.0.0.1:9/a/b/c");
        let s: Url = "stcp://127.0.0.1:9/a/b/c".parse().unwrap();
        assert_eq!(u, s);
        for bad in [
            "",
            "tcp://",
            "tcp://h:1",
            "tcp://h:1/",
            "tcp://h:x/a",
            "tcp://:1/a",
            "tcp://h:1/a//b",
            "tcp://h:1/a b",
            "tcp://h:70000/a",
        ] {
            assert!(bad.parse::<Url>().is_err(), "{bad}");
        }
        let v6: Url = "tcp://[::1]:5/x".parse().unwrap();
        assert_eq!(
            (v6.host(), v6.to_string().as_str()),
            ("::1", "tcp://[::1]:5/x")
        );
    }

    #[test]
    fn patterns_match() {
        assert!(matches("tcp://127.0.0.1:*", "tcp://127.0.0.1:7000"));
        assert!(matches("*", ""));
        assert!(matches("*:7000", "tcp://h:7000"));
        assert!(!matches("*:7000", "tcp://h:70001"));
        assert!(matches("tcp://*:7*0", "tcp://h:7100"));
        assert!(!matches("tcp://a:*", "tcp://b:1"));
        assert!(matches("a*b*c", "aXbYbZc"));
    }
}
