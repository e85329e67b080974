//! RPC by interface: services declared with `#[tutti::service]`, called through their
//! generated clients, remote and local; and the errors a client gets from a server of
//! another version, a server that is gone, a withdrawn object or another object type.

mod watchdog;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tutti::rpc::{Rpc, RpcError, Vendor};

/// The first version of a key-value store.
mod v1 {
    use super::Entry;

    #[tutti::service(name = "test.Store")]
    pub trait Store {
        /// Stores `value` under `key`; the value it replaced.
        async fn put(&mut self, key: String, value: Entry) -> Option<Entry>;
        async fn get(&self, key: String) -> Option<Entry>;
        async fn len(&self) -> usize;
        async fn clear(&mut self);
        async fn fail(&self, why: String) -> Result<(), String>;
        async fn explode(&self);
    }
}

/// A second version: `get` takes a default now, `count` is new; `len` and `clear`
/// are unchanged.
mod v2 {
    use super::Entry;

    #[tutti::service(name = "test.Store")]
    pub trait Store {
        async fn get(&self, key: String, default: Entry) -> Entry;
        async fn count(&self) -> u64;
        async fn len(&self) -> usize;
        async fn clear(&mut self);
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    text: String,
    hits: u32,
}

fn entry(text: &str) -> Entry {
    Entry {
        text: text.into(),
        hits: 0,
    }
}

#[derive(Default)]
struct MapStore(std::collections::BTreeMap<String, Entry>);

impl v1::Store for MapStore {
    async fn put(&mut self, key: String, value: Entry) -> Option<Entry> {
        self.0.insert(key, value)
    }
    async fn get(&self, key: String) -> Option<Entry> {
        // An await inside, as a real server has.
        tutti::yield_now().await;
        self.0.get(&key).cloned()
    }
    async fn len(&self) -> usize {
        self.0.len()
    }
    async fn clear(&mut self) {
        self.0.clear();
    }
    async fn fail(&self, why: String) -> Result<(), String> {
        Err(why)
    }
    async fn explode(&self) {
        panic!("the store exploded");
    }
}

fn endpoints() -> (Rpc, Rpc) {
    let server = Rpc::builder().cookie("svc").build().unwrap();
    let client = Rpc::builder()
        .cookie("svc")
        .client_only()
        .deadline(Duration::from_secs(20))
        .build()
        .unwrap();
    (server, client)
}

#[test]
fn a_remote_client_calls_every_method() {
    let (server, client) = endpoints();
    let url = server
        .publish(
            "test/store/a",
            v1::StoreServer::new(MapStore::default()),
            Vendor::Sequential,
        )
        .unwrap();
    // The URL value, a reference to it and its text are all accepted.
    let store: v1::StoreClient = client.client(&url).unwrap();
    let again: v1::StoreClient = client.client(url.to_string()).unwrap();
    assert!(!store.proxy().is_local());
    assert_eq!(store.put_blocking("a".into(), entry("x")).unwrap(), None);
    assert_eq!(
        store.put_blocking("a".into(), entry("y")).unwrap(),
        Some(entry("x"))
    );
    let (got, len) = tutti::block_on(async {
        (
            store.get("a".into()).await.unwrap(),
            again.len().await.unwrap(),
        )
    });
    assert_eq!((got, len), (Some(entry("y")), 1));
    assert_eq!(
        store.fail_blocking("no".into()).unwrap(),
        Err("no".to_string())
    );
    store.clear_blocking().unwrap();
    assert_eq!(store.len_blocking().unwrap(), 0);
    // A panicking method is a fault at the caller; the server goes on.
    match store.explode_blocking() {
        Err(RpcError::Fault { why, .. }) => assert!(why.contains("no reply"), "{why}"),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(store.len_blocking().unwrap(), 0);
}

#[test]
fn the_servers_own_client_is_local() {
    let (server, _) = endpoints();
    let url = server
        .publish(
            "test/store/local",
            v1::StoreServer::new(MapStore::default()),
            Vendor::Sequential,
        )
        .unwrap();
    let store: v1::StoreClient = server.client(url).unwrap();
    assert!(store.proxy().is_local());
    store.put_blocking("k".into(), entry("v")).unwrap();
    assert_eq!(store.get_blocking("k".into()).unwrap(), Some(entry("v")));
    // Oneway through the generated message type.
    store.proxy().oneway(v1::StoreClear {}).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while store.len_blocking().unwrap() != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the oneway clear never ran"
        );
        std::thread::yield_now();
    }
}

/// A client of another version: methods whose signature changed, or that the server
/// lacks, fail naming the method; unchanged ones work. Remote and local alike.
#[test]
fn a_client_of_another_version_gets_a_clear_error() {
    let (server, client) = endpoints();
    let url = server
        .publish(
            "test/store/v1",
            v1::StoreServer::new(MapStore::default()),
            Vendor::Sequential,
        )
        .unwrap();
    let old: v1::StoreClient = client.client(&url).unwrap();
    old.put_blocking("a".into(), entry("x")).unwrap();
    // Locally the service types differ, so there the client itself is refused (below).
    {
        let new = client.client::<v2::StoreClient>(&url).unwrap();
        assert_eq!(new.len_blocking().unwrap(), 1);
        match new.get_blocking("a".into(), entry("none")) {
            Err(RpcError::Fault { why, .. }) => {
                assert!(
                    why.contains("does not offer the method `test.Store.get(String,Entry)->Entry`"),
                    "{why}"
                );
            }
            other => panic!("unexpected {other:?}"),
        }
        match new.count_blocking() {
            Err(RpcError::Fault { why, .. }) => {
                assert!(why.contains("`test.Store.count()->u64`"), "{why}")
            }
            other => panic!("unexpected {other:?}"),
        }
        new.clear_blocking().unwrap();
    }
    assert_eq!(old.len_blocking().unwrap(), 0);
    // On the server's own endpoint, a client of another service type is refused at once.
    match server.client::<v2::StoreClient>(&url) {
        Err(RpcError::WrongType { published, .. }) => {
            assert!(published.contains("StoreServer"), "{published}")
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn a_server_that_is_gone_is_an_error() {
    let (server, client) = endpoints();
    let url = server
        .publish(
            "test/store/gone",
            v1::StoreServer::new(MapStore::default()),
            Vendor::Sequential,
        )
        .unwrap();
    let store: v1::StoreClient = client.client(&url).unwrap();
    assert_eq!(store.len_blocking().unwrap(), 0);
    // Withdrawn: no object there.
    assert!(server.withdraw("test/store/gone"));
    assert!(matches!(
        store.len_blocking(),
        Err(RpcError::NoObject { .. })
    ));
    // Closed: the connection is lost, and the next call cannot connect.
    server.close();
    let e = store.len_blocking().unwrap_err();
    assert!(
        matches!(
            e,
            RpcError::ConnectionLost { .. } | RpcError::Connect { .. }
        ),
        "{e:?}"
    );
    let e = store.len_blocking().unwrap_err();
    assert!(matches!(e, RpcError::Connect { .. }), "{e:?}");
    // A bad URL is an error too.
    assert!(matches!(
        client.client::<v1::StoreClient>("tcp:/nope"),
        Err(RpcError::BadUrl(_))
    ));
}

/// A private service (no `name`: its wire names start with the trait's name).
#[tutti::service]
trait Slow {
    async fn nap(&self, ms: u64) -> u64;
}

struct Sleeper;

impl Slow for Sleeper {
    async fn nap(&self, ms: u64) -> u64 {
        tutti::sleep(Duration::from_millis(ms)).await;
        ms
    }
}

/// A deadline on the client applies to each call.
#[test]
fn the_client_deadline_applies() {
    let (server, client) = endpoints();
    let url = server
        .publish("test/slow/1", SlowServer::new(Sleeper), Vendor::Sequential)
        .unwrap();
    let slow = client
        .client::<SlowClient>(&url)
        .unwrap()
        .with_deadline(Duration::from_millis(50));
    assert_eq!(slow.nap_blocking(1).unwrap(), 1);
    assert!(matches!(
        slow.nap_blocking(2_000),
        Err(RpcError::Timeout { .. })
    ));
}
