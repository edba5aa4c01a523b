//! API keys never reach a log or the screen: keys planted in the variables named by
//! `api_key_env`, a real `handoff exec` session that uses them (the servers check they were
//! sent), a model that goes looking for them with `run`, and a server that echoes one back
//! in an error; then the log, the terminal output and every frame of a TUI render of the
//! session are searched for any piece of either key.

use std::process::Stdio;

use handoff::demo::script::{confident, hesitant, join, reply};
use handoff::demo::server::{Reply, Script, ScriptedServer};
use handoff::demo::sse;
use handoff::log::LogReader;
use handoff::tui::{AppState, UiOptions, ui};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use serde_json::json;

const JUNIOR_VAR: &str = "HANDOFF_TEST_JUNIOR_KEY";
const SENIOR_VAR: &str = "HANDOFF_TEST_SENIOR_KEY";

/// A key nobody could guess and no UI text contains by chance.
fn key(prefix: &str) -> String {
    let tail: String = (0..32)
        .map(|_| {
            let i = rand::random_range(0..62u8);
            char::from(match i {
                0..=9 => b'0' + i,
                10..=35 => b'a' + i - 10,
                _ => b'A' + i - 36,
            })
        })
        .collect();
    format!("{prefix}-{tail}")
}

/// Where any 10-character piece of `key` occurs in `text`, if anywhere.
fn leak(text: &str, key: &str) -> Option<String> {
    let chars: Vec<char> = key.chars().collect();
    chars.windows(10).find_map(|w| {
        let piece: String = w.iter().collect();
        text.find(&piece)
            .map(|at| text[at.saturating_sub(40)..(at + 60).min(text.len())].to_string())
    })
}

fn screen(buf: &Buffer) -> String {
    let mut out = String::new();
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            out.push_str(buf[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

fn junior(echo_key: &str) -> Script {
    let lost = "I am not sure which file this is about or what the format should be, ".repeat(8);
    Script::new(vec![
        reply(
            confident("Looking at the environment."),
            Some((
                "c1",
                "run",
                json!({"command": format!("env; echo junior=${JUNIOR_VAR} senior=${SENIOR_VAR}")}),
            )),
        ),
        // Some servers quote the key they were sent in their error messages.
        Reply::error(500, &format!("upstream refused the key {echo_key}")),
        reply(join([confident("Then"), hesitant(&lost)]), None),
    ])
}

fn senior(echo_key: &str) -> Script {
    let quoted =
        json!({"error": {"message": format!("key {echo_key} is over its quota"), "code": 503}});
    Script::new(vec![
        // The same, inside an HTTP-200 stream.
        Reply::sse([sse::data(&quoted)], std::time::Duration::ZERO),
        reply(
            confident("Let me look."),
            Some((
                "s1",
                "run",
                json!({"command": format!("printenv {SENIOR_VAR} {JUNIOR_VAR}; cat /proc/self/environ | tr '\\0' '\\n'")}),
            )),
        ),
        reply(
            confident("Done."),
            Some(("s2", "finish", json!({"summary": "looked around"}))),
        ),
    ])
}

async fn start(script: Script) -> ScriptedServer {
    ScriptedServer::start(script).await.expect("server")
}

#[tokio::test]
async fn planted_keys_reach_neither_the_log_nor_the_terminal_nor_the_tui() {
    let junior_key = key("sk-junior");
    let senior_key = key("sk-senior");
    let j = start(junior(&junior_key)).await;
    let s = start(senior(&senior_key)).await;
    let dir = crate::agent::support::repo(&[("notes.txt", "hello\n")]);
    let mut cfg = handoff::config::Config::default();
    cfg.junior.base_url = j.base_url();
    cfg.junior.api_key_env = Some(JUNIOR_VAR.into());
    cfg.senior.base_url = s.base_url();
    cfg.senior.api_key_env = Some(SENIOR_VAR.into());
    cfg.senior.max_retries = 1;
    cfg.policy.threshold = handoff::config::ThresholdKind::Constant;
    cfg.policy.constant = 0.45;
    cfg.policy.route = handoff::config::RouteMode::Senior;
    cfg.policy.handoff = handoff::config::HandoffMode::Rest;
    cfg.agent.approval = handoff::config::Approval::Never;
    let work = tempfile::tempdir().expect("tempdir");
    let cfg_path = work.path().join("config.toml");
    let cfg_text = toml::to_string(&cfg).expect("toml");
    std::fs::write(&cfg_path, &cfg_text).expect("write config");
    let log = work.path().join("s.jsonl");
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
        .arg("exec")
        .arg("--repo")
        .arg(dir.path())
        .arg("--config")
        .arg(&cfg_path)
        .arg("--log")
        .arg(&log)
        .arg("look around")
        .env(JUNIOR_VAR, &junior_key)
        .env(SENIOR_VAR, &senior_key)
        .stdin(Stdio::null())
        .output()
        .await
        .expect("run handoff");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");

    // The keys were really in use: each endpoint received its own.
    let sent = |server: &ScriptedServer| -> Vec<Option<String>> {
        server
            .requests()
            .into_iter()
            .map(|r| r.authorization)
            .collect()
    };
    assert!(
        sent(&j)
            .iter()
            .all(|a| a.as_deref() == Some(format!("Bearer {junior_key}").as_str())),
        "{:?}",
        sent(&j)
    );
    assert_eq!(
        sent(&s),
        vec![Some(format!("Bearer {senior_key}")); 3],
        "the senior took over with its own key"
    );
    // The model's own look at the environment ran, and came back without the keys.
    let text = std::fs::read_to_string(&log).expect("log");
    assert!(
        text.contains("junior= senior="),
        "the `run` output is logged"
    );
    assert!(
        text.contains("upstream refused the key"),
        "the fault is logged"
    );
    assert!(
        text.contains("is over its quota"),
        "the senior's fault is logged"
    );

    for k in [&junior_key, &senior_key] {
        for (what, haystack) in [
            ("log", text.as_str()),
            ("stdout", &stdout),
            ("stderr", &stderr),
            ("config", &cfg_text),
        ] {
            assert_eq!(leak(haystack, k), None, "a key in the {what}");
        }
    }

    // Every frame a TUI would draw while the session is replayed, at two sizes.
    let mut state = AppState::new(&UiOptions {
        log_path: Some(log.display().to_string()),
        ..UiOptions::default()
    });
    let (wide, narrow) = (Rect::new(0, 0, 200, 60), Rect::new(0, 0, 80, 24));
    let mut frames = 0;
    for item in LogReader::open(&log).expect("log reads") {
        state.apply(&item.expect("every line an event"));
        for area in [wide, narrow] {
            let mut buf = Buffer::empty(area);
            ui::render(&state, area, &mut buf);
            let shown = screen(&buf);
            for k in [&junior_key, &senior_key] {
                assert_eq!(
                    leak(&shown, k),
                    None,
                    "a key on screen after frame {frames}"
                );
            }
            frames += 1;
        }
    }
    assert!(frames > 20, "{frames} frames");
}
