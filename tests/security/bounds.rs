//! Inputs with no sane bound: a calibration that would make the judge write NaN, logs that
//! are not files, an HTTP error body that never ends.

use std::io::Write as _;
use std::time::Duration;

use handoff::competence::calibration::Calibration;

#[test]
fn a_tempering_that_overflows_the_belief_is_refused() {
    let mut value: serde_json::Value =
        serde_json::from_str(&Calibration::prior().to_json()).expect("json");
    value["tempering"] = serde_json::json!(1e308);
    let err = Calibration::from_json(&value.to_string()).expect_err("refused");
    assert!(err.to_string().contains("tempering"), "{err}");
    value["tempering"] = serde_json::json!(0.5);
    Calibration::from_json(&value.to_string()).expect("a sane tempering is accepted");
}

#[tokio::test]
async fn report_refuses_a_fifo_and_a_device_instead_of_hanging() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("b.jsonl");
    crate::agent::support::mkfifo(&fifo);
    for (cmd, input) in [
        ("report", fifo.as_path()),
        ("report", dir.path()),
        ("report", std::path::Path::new("/dev/zero")),
        ("calibrate", std::path::Path::new("/dev/zero")),
    ] {
        let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
            .arg(cmd)
            .arg(input)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(Duration::from_secs(20), run)
            .await
            .unwrap_or_else(|_| panic!("{cmd} {} hung", input.display()))
            .expect("run");
        let stderr = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if cmd == "report" {
            assert!(
                stderr.contains("not a regular file"),
                "{cmd} {}: {stderr}",
                input.display()
            );
        } else {
            // `calibrate` ends with "no data to fit"; its loader says why.
            assert!(!out.status.success(), "{stderr}");
            let corpus = handoff::analysis::calibrate::load(&[input.to_path_buf()], false);
            assert!(
                corpus
                    .warnings
                    .iter()
                    .any(|w| w.contains("not a regular file")),
                "{:?}",
                corpus.warnings
            );
        }
    }
}

/// A server that answers 500 with a body that never ends: the client keeps 16 KiB of it
/// and gives up on the rest, instead of reading until memory runs out.
#[tokio::test]
async fn an_endless_error_body_is_not_read_to_the_end() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let server = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            listener.set_nonblocking(true).expect("nonblocking");
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let Ok((mut s, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let _ = s.set_nonblocking(false);
                    let mut req = [0u8; 65536];
                    let _ = std::io::Read::read(&mut s, &mut req);
                    let _ = s.write_all(
                        b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n",
                    );
                    let chunk = format!("{:x}\r\n{}\r\n", 65536, "e".repeat(65536));
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        if s.write_all(chunk.as_bytes()).is_err() {
                            break;
                        }
                    }
                });
            }
        })
    };
    let mut cfg = handoff::config::ModelConfig {
        base_url: format!("http://{addr}/v1"),
        max_retries: 0,
        ..handoff::config::ModelConfig::default()
    };
    cfg.idle_timeout_s = 30.0;
    let client = handoff::llm::client::Client::with_api_key(&cfg, None).expect("client");
    let started = std::time::Instant::now();
    let result = tokio::time::timeout(Duration::from_secs(20), client.list_models()).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = server.join();
    let result = result.expect("the client read the endless body");
    assert!(result.is_err(), "a 500 is an error");
    assert!(started.elapsed() < Duration::from_secs(20));
}

/// A FIFO, a device or a directory as `--config` (or `$HANDOFF_CONFIG`) is refused with the
/// kind named, at once, and exits as bad input (4): nothing waits for a writer.
#[tokio::test]
async fn a_fifo_or_a_device_as_the_config_is_refused_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("config.toml");
    crate::agent::support::mkfifo(&fifo);
    for (path, kind, by_env) in [
        (fifo.as_path(), "a FIFO", false),
        (std::path::Path::new("/dev/zero"), "a device", false),
        (dir.path(), "a directory", false),
        (fifo.as_path(), "a FIFO", true),
    ] {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_handoff"));
        if by_env {
            cmd.env("HANDOFF_CONFIG", path);
        } else {
            cmd.arg("--config").arg(path);
        }
        let run = cmd
            .arg("doctor")
            .env("HOME", dir.path())
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(Duration::from_secs(20), run)
            .await
            .unwrap_or_else(|_| panic!("--config {} hung", path.display()))
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{}: {stderr}", path.display());
        assert!(
            stderr.contains("not a regular file") && stderr.contains(kind),
            "{}: {stderr}",
            path.display()
        );
    }
}

/// A log whose tick jumps to 10¹⁵ would make `calibrate` fill a trajectory tick by tick
/// until memory runs out; the reader skips the line as malformed, naming file and line, and
/// the rest of the session is read.
#[test]
fn a_forged_tick_is_skipped_not_allocated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("forged.jsonl");
    let lines = [
        r#"{"v":1,"handoff":"0.1.0","config_digest":"x"}"#,
        r#"{"t_ms":0,"type":"session_started","session_id":"s","task":"t","repo":"/r","junior_model":"j","senior_model":"s","shadow":true,"config_digest":"x"}"#,
        r#"{"t_ms":1,"type":"belief_updated","tick":1,"belief":0.5,"log_odds":0.0,"threshold":0.1,"policy":"constant","terms":[]}"#,
        r#"{"t_ms":2,"type":"belief_updated","tick":1000000000000000,"belief":0.5,"log_odds":0.0,"threshold":0.1,"policy":"constant","terms":[]}"#,
        r#"{"t_ms":3,"type":"session_ended","outcome":"success","censored":false,"steps":1,"ticks":1,"usd":0.0,"ask":{"tp":0,"fp":0,"fn":0}}"#,
    ];
    std::fs::write(&log, lines.join("\n") + "\n").expect("write");
    let corpus = handoff::analysis::calibrate::load(std::slice::from_ref(&log), false);
    assert!(
        corpus
            .warnings
            .iter()
            .any(|w| w.contains(":4") && w.contains("tick 1000000000000000")),
        "{:?}",
        corpus.warnings
    );
    assert_eq!(corpus.sessions.len(), 1);
    assert!(corpus.sessions[0].trajectory.ticks() <= 2);
    assert!(corpus.sessions[0].ended, "{:?}", corpus.warnings);
}
