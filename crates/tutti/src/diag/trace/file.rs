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

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::clock::Timebase;
use super::event::{Event, What};

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
    names: Names,
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
            names: Names::new(),
        };
        t.finish()?;
        Ok(t)
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `events` of thread `tid` and rewrites the closing part.
    pub(super) fn append(
        &mut self,
        tid: u32,
        events: impl IntoIterator<Item = Event>,
        tb: &Timebase,
    ) -> io::Result<()> {
        self.append_events(tid, events, tb)?;
        self.finish()
    }

    /// Appends `events` of thread `tid` (the file is incomplete until
    /// [`finish`](Self::finish)), their times converted by `tb` (marked after
    /// they were recorded).
    pub(super) fn append_events(
        &mut self,
        tid: u32,
        events: impl IntoIterator<Item = Event>,
        tb: &Timebase,
    ) -> io::Result<()> {
        self.file.seek(SeekFrom::Start(self.end))?;
        let mut w = BufWriter::with_capacity(256 * 1024, &mut self.file);
        let pid = self.meta.rank;
        for e in events {
            let mut e = e;
            let what = e.what();
            let ts = tb.ns(e.ts);
            if !matches!(what, What::WorldOut | What::WorldIn) {
                // (Otherwise not a duration: the location pair.)
                e.dur = tb.ns(e.ts.saturating_add(e.dur)).saturating_sub(ts);
            }
            e.ts = ts;
            write_event(&mut w, pid, tid, &e, what, &mut self.names)?;
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

/// The flow id of an event, as written.
struct FlowId<'a>(&'a Event, usize);

impl std::fmt::Display for FlowId<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let e = self.0;
        match e.what() {
            What::WorldOut | What::WorldIn => {
                write!(f, "w{}.{}.{}", e.dur >> 32, e.dur & 0xffff_ffff, e.id)
            }
            _ => write!(f, "p{}.{:x}", self.1, e.id),
        }
    }
}

/// A slice's category and its name as a JSON string literal.
fn slice_name(what: What) -> (&'static str, String) {
    let mut name = String::new();
    let cat = match what {
        What::Task(ty) => {
            short_type(ty, &mut name);
            "task"
        }
        What::NamedTask(given) => {
            name.push_str(given);
            "task"
        }
        What::BlockOn(ty) => {
            name.push_str("block_on ");
            short_type(ty, &mut name);
            "task"
        }
        What::Turn { actor, message } => {
            short_type(actor(), &mut name);
            name.push_str(": ");
            short_type(message(), &mut name);
            "actor"
        }
        What::Method(ty) => {
            name.push_str("rmi ");
            short_type(ty, &mut name);
            "rmi"
        }
        What::Act(actor) => {
            name.push_str("act ");
            name.push_str(actor);
            "graph"
        }
        What::FlowOut | What::FlowIn | What::WorldOut | What::WorldIn => {
            name.push_str("message");
            "flow"
        }
    };
    (cat, json_str(&name))
}

/// Names already formatted, by the addresses of the `'static` strings they
/// come from.
pub(super) type Names = HashMap<(u64, usize, usize), (&'static str, String)>;

fn write_event(
    w: &mut impl Write,
    pid: usize,
    tid: u32,
    e: &Event,
    what: What,
    names: &mut Names,
) -> io::Result<()> {
    let ts = Us(e.ts);
    let flow = |w: &mut dyn Write, ph: &str| {
        let bp = if ph == "f" { ",\"bp\":\"e\"" } else { "" };
        writeln!(
            w,
            "{{\"ph\":\"{ph}\"{bp},\"cat\":\"flow\",\"name\":\"message\",\"id\":\"{}\",\"pid\":{pid},\"tid\":{tid},\"ts\":{ts}}},",
            FlowId(e, pid)
        )
    };
    match what {
        What::FlowOut | What::WorldOut => return flow(w, "s"),
        What::FlowIn | What::WorldIn => return flow(w, "f"),
        _ => {}
    }
    let (cat, name) = names
        .entry(e.name_key())
        .or_insert_with(|| slice_name(what));
    write!(
        w,
        "{{\"ph\":\"X\",\"cat\":\"{cat}\",\"name\":{name},\"pid\":{pid},\"tid\":{tid},\"ts\":{ts},\"dur\":{}",
        Us(e.dur)
    )?;
    match what {
        What::Method(_) => write!(w, ",\"args\":{{\"requests\":{}}}", e.id)?,
        What::Turn { .. } if e.turns() > 1 => {
            write!(w, ",\"args\":{{\"messages\":{}}}", e.turns())?
        }
        _ => {}
    }
    w.write_all(b"},\n")?;
    if matches!(what, What::Turn { .. }) && e.id != 0 {
        flow(w, "f")?;
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
