//! What every fault case checks afterwards, and a loopback port that never answers.

use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use handoff::analysis::summarize_file;
use handoff::log::LogReader;
use handoff::protocol::{Actor, Event, Outcome};
use pretty_assertions::assert_eq;
use serde_json::json;

use handoff::demo::script::{confident, reply};
use handoff::demo::server::Reply;

/// One `Fault` event, without its message.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultLine {
    pub actor: Actor,
    pub kind: String,
    pub retryable: bool,
    pub attempt: u32,
}

/// Reads the log back as `report` and `calibrate` would and checks it is whole: a header,
/// every line an event, one `SessionStarted` first, one `SessionEnded` last with `outcome`,
/// and a session summary that agrees.
pub fn intact(log: &Path, outcome: Outcome) -> Vec<Event> {
    let reader = LogReader::open(log).expect("the log opens");
    let mut events = Vec::new();
    for item in reader {
        match item {
            Ok(s) => events.push(s.event),
            Err(w) => panic!("damaged log line: {w}"),
        }
    }
    assert_eq!(events.first().map(Event::kind), Some("session_started"));
    let ended: Vec<Outcome> = events
        .iter()
        .filter_map(|e| match e {
            Event::SessionEnded { outcome, .. } => Some(*outcome),
            _ => None,
        })
        .collect();
    assert_eq!(ended, vec![outcome], "one SessionEnded, the last event");
    assert_eq!(events.last().map(Event::kind), Some("session_ended"));
    let (sessions, warnings) = summarize_file(log).expect("summarised");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].outcome, Some(outcome));
    events
}

/// The faults of a session, in order.
pub fn faults(events: &[Event]) -> Vec<FaultLine> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Fault {
                actor,
                kind,
                retryable,
                attempt,
                ..
            } => Some(FaultLine {
                actor: *actor,
                kind: kind.clone(),
                retryable: *retryable,
                attempt: *attempt,
            }),
            _ => None,
        })
        .collect()
}

pub fn fault(actor: Actor, kind: &str, attempt: u32) -> FaultLine {
    FaultLine {
        actor,
        kind: kind.into(),
        retryable: true,
        attempt,
    }
}

/// Faults never reach the judge: every belief update is driven by signal terms only.
pub fn judge_never_saw_a_fault(events: &[Event]) {
    for e in events {
        if let Event::BeliefUpdated { terms, .. } = e {
            assert!(!terms.is_empty(), "a belief update without evidence: {e:?}");
        }
    }
}

/// A junior (or senior) that writes `done.txt`, then finishes.
pub fn write_then_finish() -> [Reply; 2] {
    [
        reply(
            confident("Writing the file."),
            Some((
                "w1",
                "write_file",
                json!({"path": "done.txt", "content": "done\n"}),
            )),
        ),
        reply(
            confident("Done."),
            Some(("f1", "finish", json!({"summary": "wrote done.txt"}))),
        ),
    ]
}

pub const FILES: [(&str, &str); 1] = [("notes.txt", "hello\n")];
pub const CHECK: &str = "test -f done.txt";

/// A loopback address whose accept queue is full: a SYN to it is dropped and `connect`
/// hangs until the client's connect timeout, like a firewalled host, without leaving the
/// machine. Holds the connections that fill the queue.
pub struct Blackhole {
    addr: SocketAddr,
    _listener: tokio::net::TcpListener,
    _held: Vec<TcpStream>,
}

impl Blackhole {
    pub fn new() -> Blackhole {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket
            .bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .expect("bind");
        let addr = socket.local_addr().expect("addr");
        let listener = socket.listen(0).expect("listen");
        let mut held = Vec::new();
        // Never accepted: each connection stays in the queue until it is full.
        for _ in 0..64 {
            match TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
                Ok(s) => held.push(s),
                Err(_) => {
                    return Blackhole {
                        addr,
                        _listener: listener,
                        _held: held,
                    };
                }
            }
        }
        panic!("the accept queue of {addr} never filled");
    }

    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }
}

/// A loopback port nobody listens on: connections are refused at once.
pub fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    format!("http://{addr}/v1")
}
