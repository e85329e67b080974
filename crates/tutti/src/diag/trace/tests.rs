use super::clock::{best_offset, Sample};
use super::file::short_type;
use super::per_rank_path;
use std::path::Path;

#[test]
fn type_names_lose_their_paths() {
    let mut s = String::new();
    short_type("app::bench::Pinger<core::option::Option<alloc::string::String>>", &mut s);
    assert_eq!(s, "Pinger<Option<String>>");
    s.clear();
    short_type("(u64, my::Msg)", &mut s);
    assert_eq!(s, "(u64, Msg)");
}

#[test]
fn ranks_get_their_own_files() {
    assert_eq!(per_rank_path(Path::new("/t/run.json"), None), Path::new("/t/run.json"));
    assert_eq!(
        per_rank_path(Path::new("/t/run.json"), Some((3, 4))),
        Path::new("/t/run.rank3.json")
    );
    assert_eq!(per_rank_path(Path::new("run"), Some((0, 2))), Path::new("run.rank0"));
}

#[test]
fn the_offset_comes_from_the_shortest_round_trip() {
    // Rank 0's clock is 1000 ns ahead; the slow sample would say otherwise.
    let samples = [
        Sample { sent: 100, remote: 1900, back: 900 }, // rtt 800, says 1400
        Sample { sent: 2000, remote: 3050, back: 2100 }, // rtt 100, says 1000
        Sample { sent: 5000, remote: 6600, back: 5400 }, // rtt 400, says 1400
    ];
    assert_eq!(best_offset(&samples), Some((1000, 100)));
    assert_eq!(best_offset(&[]), None);
}
