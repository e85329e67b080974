//! The trace file: Chrome trace-event JSON in its object form,
//!
//! ```text
//! {"traceEvents":[
//! <event>,            ← appended at `end` by every write
//! …
//! <metadata events>   ← the closing part, rewritten after every write
//! ],"displayTimeUnit":"ns","otherData":{…}}
//! ```
//!
//! so the file is complete JSON after every write-out while it keeps growing.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::event::{Event, Kind};

/// What the closing part says.
#[derive(Default)]
pub(super) struct Meta {
    pub(super) rank: usize,
    pub(super) ranks: usize,
    /// Nanoseconds to add to this rank's clock to read rank 0's, and the round
    /// trip of the sample it came from.
    pub(super) offset: Option<(i64, u64)>,
    pub(super) lost: u64,
    pub(super) threads: BTreeMap<u32, String>,
}

pub(super) struct TraceFile {
    path: PathBuf,
    file: File,
    /// Where the next event goes (the closing part starts here).
    end: u64,
    pub(super) meta: Meta,
}

const HEAD: &str = "{\"traceEvents\":[\n";

impl TraceFile {
    pub(super) fn create(path: &Path, rank: usize) -> io::Result<TraceFile> {
        let mut file = File::create(path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot create trace file {}: {e}", path.display()),
            )
        })?;
        file.write_all(HEAD.as_bytes())?;
        let mut t = TraceFile {
            path: path.to_path_buf(),
            file,
            end: HEAD.len() as u64,
            meta: Meta {
                rank,
                ranks: 1,
                ..Meta::default()
            },
        };
        t.finish()?;
        Ok(t)
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `events` of thread `tid` and rewrites the closing part.
    pub(super) fn append(&mut self, tid: u32, events: &[Event]) -> io::Result<()> {
        self.append_events(tid, events)?;
        self.finish()
    }

    /// Appends `events` of thread `tid` (the file is incomplete until
    /// [`finish`](Self::finish)).
    pub(super) fn append_events(&mut self, tid: u32, events: &[Event]) -> io::Result<()> {
        self.file.seek(SeekFrom::Start(self.end))?;
        let mut w = BufWriter::with_capacity(256 * 1024, &mut self.file);
        let pid = self.meta.rank;
        let mut name = String::new();
        for e in events {
            write_event(&mut w, pid, tid, e, &mut name)?;
        }
        w.flush()?;
        drop(w);
        self.end = self.file.stream_position()?;
        Ok(())
    }

    /// Writes the closing part after the events.
    pub(super) fn finish(&mut self) -> io::Result<()> {
        let m = &self.meta;
        let mut tail = String::new();
        let pid = m.rank;
        tail.push_str(&format!(
            "{{\"ph\":\"M\",\"pid\":{pid},\"tid\":0,\"name\":\"process_name\",\"args\":{{\"name\":\"rank {pid}\"}}}},\n\
             {{\"ph\":\"M\",\"pid\":{pid},\"tid\":0,\"name\":\"process_sort_index\",\"args\":{{\"sort_index\":{pid}}}}}"
        ));
        for (tid, name) in &m.threads {
            tail.push_str(&format!(
                ",\n{{\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"name\":\"thread_name\",\"args\":{{\"name\":{}}}}}",
                json_str(name)
            ));
        }
        let (offset, rtt) = match m.offset {
            Some((o, r)) => (o.to_string(), r.to_string()),
            None => ("0".into(), "null".into()),
        };
        tail.push_str(&format!(
            "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{{\"tutti_trace\":1,\"rank\":{},\"ranks\":{},\
             \"clock\":\"CLOCK_MONOTONIC\",\"clock_offset_ns\":{offset},\"clock_offset_rtt_ns\":{rtt},\
             \"lost_events\":{}}}}}\n",
            m.rank, m.ranks.max(1), m.lost
        ));
        self.file.seek(SeekFrom::Start(self.end))?;
        self.file.write_all(tail.as_bytes())?;
        self.file.set_len(self.end + tail.len() as u64)?;
        self.file.flush()
    }
}

/// `s` as a JSON string literal.
fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"?\"".into())
}

/// A timestamp in microseconds with nanosecond digits.
struct Us(u64);

impl std::fmt::Display for Us {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
    }
}

fn write_event(
    w: &mut impl Write,
    pid: usize,
    tid: u32,
    e: &Event,
    name: &mut String,
) -> io::Result<()> {
    let ts = Us(e.ts);
    let flow = |w: &mut dyn Write, ph: &str, id: &str| {
        let bp = if ph == "f" { ",\"bp\":\"e\"" } else { "" };
        writeln!(
            w,
            "{{\"ph\":\"{ph}\"{bp},\"cat\":\"flow\",\"name\":\"message\",\"id\":\"{id}\",\"pid\":{pid},\"tid\":{tid},\"ts\":{ts}}},"
        )
    };
    let (cat, args) = match e.kind {
        Kind::FlowOut => return flow(w, "s", &format!("p{pid}.{:x}", e.id)),
        Kind::WorldOut | Kind::WorldIn => {
            let id = format!("w{}.{}.{}", e.id2 >> 32, e.id2 & 0xffff_ffff, e.id);
            let ph = if e.kind == Kind::WorldOut { "s" } else { "f" };
            return flow(w, ph, &id);
        }
        Kind::Task => {
            name.clear();
            short_type(e.a, name);
            ("task", String::new())
        }
        Kind::BlockOn => {
            name.clear();
            name.push_str("block_on ");
            short_type(e.a, name);
            ("task", String::new())
        }
        Kind::Turn => {
            name.clear();
            short_type(e.a, name);
            name.push_str(": ");
            short_type(e.b, name);
            ("actor", String::new())
        }
        Kind::Method => {
            name.clear();
            name.push_str("rmi ");
            short_type(e.a, name);
            ("rmi", format!(",\"args\":{{\"requests\":{}}}", e.id))
        }
        Kind::Act => {
            name.clear();
            name.push_str("act ");
            name.push_str(e.a);
            ("graph", String::new())
        }
    };
    writeln!(
        w,
        "{{\"ph\":\"X\",\"cat\":\"{cat}\",\"name\":{},\"pid\":{pid},\"tid\":{tid},\"ts\":{ts},\"dur\":{}{args}}},",
        json_str(name),
        Us(e.dur)
    )?;
    if e.kind == Kind::Turn && e.id != 0 {
        flow(w, "f", &format!("p{pid}.{:x}", e.id))?;
    }
    Ok(())
}

/// Appends `ty` (a `std::any::type_name`) with every module path dropped:
/// `app::Pinger<core::Ping>` → `Pinger<Ping>`.
pub(super) fn short_type(ty: &str, out: &mut String) {
    let mut path_start = out.len();
    let mut chars = ty.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ':' && chars.peek() == Some(&':') {
            chars.next();
            out.truncate(path_start);
            continue;
        }
        if !(c.is_alphanumeric() || c == '_') {
            out.push(c);
            path_start = out.len();
            continue;
        }
        out.push(c);
    }
}
