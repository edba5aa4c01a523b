//! What crashes and bad disks leave behind: the reader skips it, says where, and goes on.

use std::fs::OpenOptions;
use std::io::Write;

use handoff::analysis::report::load;
use handoff::log::reader::Damage;
use handoff::log::{LogError, LogReader, log_files};
use handoff::protocol::Stamped;

use super::fixtures::{every_variant, write_log};

fn append_raw(path: &std::path::Path, text: &str) {
    let mut f = OpenOptions::new().append(true).open(path).expect("open");
    f.write_all(text.as_bytes()).expect("write");
}

#[test]
fn a_torn_last_line_is_skipped_with_a_warning_and_the_rest_is_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("torn.jsonl");
    let events = every_variant();
    let n = events.len();
    write_log(&path, events);
    append_raw(&path, r#"{"t_ms":99,"type":"token","actor":"jun"#);
    let items: Vec<_> = LogReader::open(&path).expect("open").collect();
    assert_eq!(items.len(), n + 1);
    assert!(items[..n].iter().all(Result::is_ok));
    let warning = items[n].as_ref().expect_err("torn");
    assert_eq!(warning.damage, Damage::Torn);
    // Header on line 1, events on 2..=n+1, the torn one on n+2.
    assert_eq!(warning.line, n + 2);
}

#[test]
fn a_corrupt_middle_line_is_skipped_and_the_warning_names_file_and_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("corrupt.jsonl");
    let events = every_variant();
    write_log(&path, events[..3].to_vec());
    append_raw(&path, "{\"t_ms\":5,\"type\":\"teleported\"}\n");
    append_raw(&path, "not json at all\n");
    let rest = super::fixtures::stamped(events[3..].to_vec());
    for e in &rest {
        append_raw(&path, &(serde_json::to_string(e).expect("encode") + "\n"));
    }
    let (good, bad): (Vec<_>, Vec<_>) = LogReader::open(&path)
        .expect("open")
        .partition(Result::is_ok);
    assert_eq!(good.len(), events.len());
    let good: Vec<Stamped> = good.into_iter().map(|r| r.expect("ok")).collect();
    assert_eq!(good[3].event, events[3]);
    let bad: Vec<_> = bad.into_iter().map(|r| r.expect_err("bad")).collect();
    assert_eq!(bad.len(), 2);
    assert_eq!(
        bad.iter().map(|w| (w.line, w.damage)).collect::<Vec<_>>(),
        [(5, Damage::Malformed), (6, Damage::Malformed)]
    );
    let message = bad[0].to_string();
    assert!(message.contains("corrupt.jsonl:5:"), "{message}");
}

#[test]
fn a_log_from_a_future_version_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("future.jsonl");
    std::fs::write(
        &path,
        "{\"v\":2,\"handoff\":\"9.0.0\",\"config_digest\":\"d\",\"new\":1}\n{}\n",
    )
    .expect("write");
    let err = LogReader::open(&path).expect_err("future");
    assert!(
        matches!(
            err,
            LogError::UnknownVersion {
                found: 2,
                supported: 1,
                ..
            }
        ),
        "{err}"
    );
    let message = err.to_string();
    assert!(
        message.contains("future.jsonl") && message.contains("version 2"),
        "{message}"
    );
}

#[test]
fn a_file_without_a_header_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("headless.jsonl");
    let line =
        serde_json::to_string(&super::fixtures::stamped(every_variant())[0]).expect("encode");
    std::fs::write(&path, line + "\n").expect("write");
    let err = LogReader::open(&path).expect_err("no header");
    assert!(matches!(err, LogError::NoHeader { .. }), "{err}");
    assert!(err.to_string().contains("headless.jsonl"), "{err}");
}

#[test]
fn a_directory_with_one_bad_file_still_yields_the_others_sorted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::create_dir_all(root.join("nested")).expect("mkdir");
    write_log(&root.join("b.jsonl"), every_variant());
    write_log(&root.join("nested/a.jsonl"), every_variant());
    write_log(&root.join("a.jsonl"), every_variant());
    std::fs::write(root.join("c.jsonl"), "{\"v\":3}\n").expect("write");
    std::fs::write(root.join("notes.txt"), "not a log").expect("write");

    let (files, errors) = log_files(&[root.to_path_buf()]);
    assert!(errors.is_empty());
    let names: Vec<String> = files
        .iter()
        .map(|p| {
            p.strip_prefix(root)
                .expect("under root")
                .display()
                .to_string()
        })
        .collect();
    assert_eq!(names, ["a.jsonl", "b.jsonl", "c.jsonl", "nested/a.jsonl"]);

    let missing = root.join("missing.jsonl");
    let corpus = load(&[root.to_path_buf(), missing]);
    assert_eq!(corpus.files, 4);
    assert_eq!(corpus.sessions.len(), 3);
    assert_eq!(corpus.warnings.len(), 2, "{:?}", corpus.warnings);
    assert!(
        corpus
            .warnings
            .iter()
            .any(|w| w.contains("c.jsonl") && w.contains("version 3"))
    );
    assert!(corpus.warnings.iter().any(|w| w.contains("missing.jsonl")));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Junk anywhere between events costs exactly the junk lines: every event is still read,
    /// in order, and each junk line gets a warning with its own line number.
    #[test]
    fn junk_lines_cost_only_themselves(
        junk in proptest::collection::vec((0usize..20, "[^\n\r]*[^\\s][^\n\r]*"), 0..6)
    ) {
        let events = super::fixtures::stamped(every_variant());
        let mut lines: Vec<(bool, String)> = events
            .iter()
            .map(|e| (true, serde_json::to_string(e).expect("encode")))
            .collect();
        let mut positions: Vec<(usize, String)> = junk;
        positions.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
        for (at, text) in positions {
            lines.insert(at.min(lines.len()), (false, text));
        }
        let mut text = String::from("{\"v\":1,\"handoff\":\"0.1.0\",\"config_digest\":\"d\"}\n");
        for (_, line) in &lines {
            text.push_str(line);
            text.push('\n');
        }
        let reader = LogReader::new(std::path::Path::new("p.jsonl"), text.as_bytes())
            .expect("header");
        let mut good = Vec::new();
        let mut warned = Vec::new();
        for item in reader {
            match item {
                Ok(e) => good.push(e),
                Err(w) => warned.push(w.line),
            }
        }
        proptest::prop_assert_eq!(good, events);
        let junk_lines: Vec<usize> = lines
            .iter()
            .enumerate()
            .filter(|(_, (is_event, _))| !is_event)
            .map(|(i, _)| i + 2)
            .collect();
        proptest::prop_assert_eq!(warned, junk_lines);
    }
}
