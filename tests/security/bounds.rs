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
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("cstr");
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
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
