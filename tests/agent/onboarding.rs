//! The first ten minutes of a new user, through the real binary: `init --preset X`, then
//! `doctor`, then `exec`, against a fake server of that flavour on loopback. The only edit
//! is the port (the fakes cannot take the presets' fixed ones), given the way a user would
//! without touching the file: `-c` for doctor, `HANDOFF_*` variables for exec. Then the
//! doctor verdicts that name the fix for an Ollama user's two common mistakes. One test per
//! preset: llama.cpp, Ollama, vLLM, LM Studio and OpenAI, each fake answering as that
//! server does (its model ids, its 404 for an unknown model, its logprobs or none).

use std::ffi::OsStr;
use std::time::Duration;

use handoff::demo::server::{Reply, Script, ScriptedServer};
use handoff::demo::sse::{self, Tok};
use serde_json::Value;

use super::support::{FILES, bin, repo};

#[derive(Clone, Copy, PartialEq)]
enum Flavour {
    /// Refuses `logprobs` with tools in a stream (400), accepts `n_probs`.
    LlamaCpp,
    /// Tagged model ids; an unknown id is a 404 saying "try pulling it first".
    Ollama,
    /// Hugging Face model ids; an unknown id is vLLM's 404 `NotFoundError`; logprobs with
    /// tools in a stream are fine.
    Vllm,
    /// Never sends logprobs, whatever is asked.
    LmStudio,
    /// An unknown id is OpenAI's `model_not_found`; every request must carry the key
    /// (checked on the recorded requests: the answer sees only the body).
    OpenAi,
}

/// The 404 body each flavour sends for a model it does not serve, or `None` when it
/// serves whatever is asked.
fn unknown_model(flavour: Flavour, model: &str) -> Option<String> {
    match flavour {
        Flavour::Ollama => Some(format!(
            r#"{{"error":{{"message":"model \"{model}\" not found, try pulling it first","type":"api_error"}}}}"#
        )),
        Flavour::Vllm => Some(format!(
            r#"{{"object":"error","message":"The model `{model}` does not exist.","type":"NotFoundError","param":null,"code":404}}"#
        )),
        Flavour::OpenAi => Some(format!(
            r#"{{"error":{{"message":"The model `{model}` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}}}"#
        )),
        Flavour::LlamaCpp | Flavour::LmStudio => None,
    }
}

fn words(body: &Value) -> u64 {
    body["messages"].as_array().map_or(0, |m| {
        m.iter()
            .filter_map(|msg| msg["content"].as_str())
            .map(|c| c.split_whitespace().count() as u64)
            .sum()
    })
}

/// One answer: a confident `finish` when the session offers it, the probe's own tool
/// when doctor offers one, else a word of text; logprobs when asked; usage that grows
/// with the prompt (doctor's context check reads it).
fn answer(flavour: Flavour, listed: &[&str], body: &Value) -> Reply {
    let model = body["model"].as_str().unwrap_or_default();
    if !listed.contains(&model)
        && let Some(body) = unknown_model(flavour, model)
    {
        return Reply::Http {
            status: 404,
            headers: vec![],
            body,
        };
    }
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    let logprobs = body.get("logprobs") == Some(&Value::Bool(true));
    if flavour == Flavour::LlamaCpp && !tools.is_empty() && logprobs {
        return Reply::Http {
            status: 400,
            headers: vec![],
            body: handoff::demo::llamacpp::REJECT_LOGPROBS_WITH_TOOLS.into(),
        };
    }
    let k = body
        .get("top_logprobs")
        .or_else(|| body.get("n_probs"))
        .and_then(Value::as_u64)
        .filter(|_| flavour != Flavour::LmStudio);
    // A junior under the `code` protocol (the local presets) is offered no tools: its
    // prose without code is its "done", and the prose is the summary.
    let writes_code = body["messages"][1]["content"].as_str().is_some_and(|s| {
        s.contains("whole definition") || s.contains("Write the code the task needs")
    });
    let text = if writes_code {
        "nothing needed changing"
    } else if tools.is_empty() {
        "ready"
    } else {
        "Done."
    };
    let mut chunks = vec![match k {
        Some(_) => sse::data(&sse::tokens(&[Tok::new(text, -0.01).top(&[
            (text, -0.01),
            ("Ok", -5.0),
            ("Sure", -6.0),
        ])])),
        None => sse::data(&sse::text(text)),
    }];
    if tools.contains(&"finish") {
        chunks.push(sse::data(&sse::tool_call(
            0,
            Some("c1"),
            Some("finish"),
            r#"{"summary":"nothing needed changing"}"#,
        )));
        chunks.push(sse::data(&sse::finish("tool_calls")));
    } else if let Some(name) = tools.first() {
        chunks.push(sse::data(&sse::tool_call(
            0,
            Some("c1"),
            Some(name),
            r#"{"text":"hi"}"#,
        )));
        chunks.push(sse::data(&sse::finish("tool_calls")));
    } else {
        chunks.push(sse::data(&sse::finish("stop")));
    }
    chunks.push(sse::data(&sse::usage(words(body) + 8, 2)));
    chunks.push(sse::done());
    Reply::sse(chunks, Duration::from_millis(1))
}

async fn fake(flavour: Flavour, listed: &'static [&'static str]) -> ScriptedServer {
    let script = Script::new(vec![])
        .models(listed)
        .respond_with(move |body| answer(flavour, listed, body));
    ScriptedServer::start(script).await.expect("server")
}

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

/// `init --preset NAME`, `doctor`, `exec`; the servers stand in at `junior`/`senior`.
/// A local preset must need no key.
async fn first_ten_minutes(preset: &str, junior: &str, senior: &str) {
    first_ten_minutes_with(preset, junior, senior, &[]).await;
}

/// As [`first_ten_minutes`], with `env` (an API key) for `doctor` and `exec`; a preset
/// given a key names the variable it is read from.
async fn first_ten_minutes_with(preset: &str, junior: &str, senior: &str, env: &[(&str, &str)]) {
    let home = tempfile::tempdir().expect("tempdir");
    let h = home.path();
    let init = bin(h, &[os("init"), os("--preset"), os(preset)], None, &[]).await;
    assert_eq!(init.code, Some(0), "{}", init.stderr);
    let cfg = h.join("config/handoff/config.toml");
    assert!(
        init.stdout.contains(&cfg.display().to_string()),
        "{}",
        init.stdout
    );
    let text = std::fs::read_to_string(&cfg).expect("written where doctor looks");
    let keys: Vec<String> = env
        .iter()
        .map(|(k, _)| format!("api_key_env = \"{k}\""))
        .collect();
    assert!(
        if keys.is_empty() {
            !text.contains("api_key_env =")
        } else {
            keys.iter().all(|k| text.contains(k))
        },
        "a local preset needs no key; a cloud one names its variable:\n{text}"
    );

    let set_j = format!("junior.base_url={junior}");
    let set_s = format!("senior.base_url={senior}");
    let doctor = bin(
        h,
        &[os("doctor"), os("-c"), os(&set_j), os("-c"), os(&set_s)],
        None,
        env,
    )
    .await;
    assert_eq!(
        doctor.code,
        Some(0),
        "{preset}: {}\n{}",
        doctor.stdout,
        doctor.stderr
    );
    assert!(
        doctor.stdout.contains(&cfg.display().to_string()),
        "{}",
        doctor.stdout
    );

    let dir = repo(&FILES);
    let exec = bin(
        h,
        &[
            os("exec"),
            os("--repo"),
            dir.path().as_os_str(),
            os("look around"),
        ],
        None,
        &[
            &[
                ("HANDOFF_JUNIOR__BASE_URL", junior),
                ("HANDOFF_SENIOR__BASE_URL", senior),
            ],
            env,
        ]
        .concat(),
    )
    .await;
    assert_eq!(
        exec.code,
        Some(0),
        "{preset}: {}\n{}",
        exec.stdout,
        exec.stderr
    );
    assert!(
        exec.stdout.contains("finish       nothing needed changing"),
        "{}",
        exec.stdout
    );
}

#[tokio::test]
async fn llamacpp_preset_then_doctor_then_exec() {
    let j = fake(Flavour::LlamaCpp, &["qwen2.5-coder-1.5b-instruct"]).await;
    let s = fake(Flavour::LlamaCpp, &["qwen2.5-coder-7b-instruct"]).await;
    first_ten_minutes("llamacpp", &j.base_url(), &s.base_url()).await;
}

#[tokio::test]
async fn ollama_preset_then_doctor_then_exec() {
    let o = fake(Flavour::Ollama, &["qwen2.5-coder:1.5b", "qwen2.5-coder:7b"]).await;
    first_ten_minutes("ollama", &o.base_url(), &o.base_url()).await;
}

#[tokio::test]
async fn vllm_preset_then_doctor_then_exec() {
    let j = fake(Flavour::Vllm, &["Qwen/Qwen2.5-Coder-1.5B-Instruct"]).await;
    let s = fake(Flavour::Vllm, &["Qwen/Qwen2.5-Coder-7B-Instruct"]).await;
    first_ten_minutes("vllm", &j.base_url(), &s.base_url()).await;
    assert!(
        j.bodies().iter().any(|b| b["logprobs"] == true),
        "the junior on vLLM is judged with logprobs"
    );
}

#[tokio::test]
async fn lmstudio_preset_then_doctor_then_exec() {
    let l = fake(
        Flavour::LmStudio,
        &["qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-7b-instruct"],
    )
    .await;
    first_ten_minutes("lmstudio", &l.base_url(), &l.base_url()).await;
}

#[tokio::test]
async fn openai_preset_then_doctor_then_exec() {
    const KEY: &str = "sk-onboarding-test";
    let o = fake(Flavour::OpenAi, &["gpt-4.1-nano", "gpt-4.1"]).await;
    first_ten_minutes_with(
        "openai",
        &o.base_url(),
        &o.base_url(),
        &[("OPENAI_API_KEY", KEY)],
    )
    .await;
    let requests = o.requests();
    assert!(!requests.is_empty());
    for r in &requests {
        assert_eq!(
            r.authorization.as_deref(),
            Some(format!("Bearer {KEY}").as_str()),
            "every request carries the key from OPENAI_API_KEY"
        );
    }
}

#[tokio::test]
async fn doctor_names_the_url_with_v1_and_the_tagged_model() {
    let o = fake(Flavour::Ollama, &["qwen2.5-coder:1.5b", "qwen2.5-coder:7b"]).await;
    let home = tempfile::tempdir().expect("tempdir");
    let h = home.path();
    let init = bin(h, &[os("init"), os("--preset"), os("ollama")], None, &[]).await;
    assert_eq!(init.code, Some(0), "{}", init.stderr);
    let root = o.base_url().trim_end_matches("/v1").to_string();
    let set_s = format!("senior.base_url={}", o.base_url());
    let doctor = bin(
        h,
        &[
            os("doctor"),
            os("-c"),
            os(&format!("junior.base_url={root}")),
            os("-c"),
            os(&set_s),
        ],
        None,
        &[],
    )
    .await;
    assert_eq!(doctor.code, Some(1), "{}", doctor.stdout);
    assert!(
        doctor
            .stdout
            .contains(&format!("set base_url = \"{root}/v1\"")),
        "{}",
        doctor.stdout
    );
    let doctor = bin(
        h,
        &[
            os("doctor"),
            os("-c"),
            os(&format!("junior.base_url={}", o.base_url())),
            os("-c"),
            os(&set_s),
            os("-c"),
            os("junior.model=qwen2.5-coder"),
        ],
        None,
        &[],
    )
    .await;
    assert!(
        doctor.stdout.contains("set model = \"qwen2.5-coder:1.5b\""),
        "{}",
        doctor.stdout
    );
}

/// `init --preset real-models` writes the lane's fitted judge beside the config and points
/// `[policy]` at it (constant τ: a feature model has no token-clock plan), so the config
/// loads and its judge builds wherever the user runs from; a second init touches nothing.
#[tokio::test]
async fn the_real_models_preset_writes_its_fitted_judge_beside_the_config() {
    let home = tempfile::tempdir().expect("tempdir");
    let h = home.path();
    let init = bin(
        h,
        &[os("init"), os("--preset"), os("real-models")],
        None,
        &[],
    )
    .await;
    assert_eq!(init.code, Some(0), "{}", init.stderr);
    let dir = h.join("config/handoff");
    let calibration = dir.join(handoff::presets::REAL_MODELS_CALIBRATION_FILE);
    assert_eq!(
        std::fs::read_to_string(&calibration).expect("the calibration is written"),
        handoff::presets::REAL_MODELS_CALIBRATION
    );
    let config = handoff::config::Config::load_file(&dir.join("config.toml")).expect("loads");
    assert_eq!(
        config.policy.calibration.as_deref(),
        Some(calibration.as_path())
    );
    handoff::judge::SessionJudge::from_config(&config).expect("the judge builds");
    let again = bin(
        h,
        &[os("init"), os("--preset"), os("real-models")],
        None,
        &[],
    )
    .await;
    assert_eq!(again.code, Some(4), "{}", again.stderr);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
}
