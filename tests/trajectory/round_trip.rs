//! Every event variant survives the writers and the reader unchanged.

use handoff::log::{LogReader, LogWriter, spawn_writer};
use handoff::protocol::Stamped;
use pretty_assertions::assert_eq;

use super::fixtures::{every_variant, stamped};

fn read_all(path: &std::path::Path) -> Vec<Stamped> {
    let reader = LogReader::open(path).expect("open");
    assert_eq!(reader.header().v, 1);
    assert_eq!(reader.header().config_digest, "digest");
    assert_eq!(reader.header().handoff, env!("CARGO_PKG_VERSION"));
    reader.map(|item| item.expect("clean line")).collect()
}

#[test]
fn every_variant_round_trips_through_the_synchronous_writer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sessions/one.jsonl");
    let events = stamped(every_variant());
    let mut writer = LogWriter::new(&path, "digest");
    for e in &events {
        writer.append(e).expect("append");
    }
    writer.close().expect("close");
    assert_eq!(read_all(&path), events);
}

#[tokio::test]
async fn every_variant_round_trips_through_the_writer_task() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("one.jsonl");
    let events = stamped(every_variant());
    let handle = spawn_writer(LogWriter::new(&path, "digest"), 4);
    for e in &events {
        handle.send(e.clone()).await.expect("send");
    }
    assert!(handle.close().await.expect("close").is_empty());
    assert_eq!(read_all(&path), events);
}
