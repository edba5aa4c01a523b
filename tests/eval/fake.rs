//! Scripted models that work on suite tasks: they find the task in the request, may ask
//! the operator about its blockers, write the reference solution when they know every
//! blocker's answer (the template's file unchanged otherwise, a wrong guess), and finish.
//! Without an answer they hesitate in their logprobs, and their triage sends missing
//! information to the operator, so the judge and router have something real to act on.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use handoff::config::{Approval, Config, RouteMode, ThresholdKind};
use handoff::demo::script::{confident, hesitant};
use handoff::demo::server::{Reply, Script, ScriptedServer};
use handoff::demo::sse::{Tok, completion};
use handoff::eval::{Suite, Task};
use serde_json::{Value, json};

/// What a fake model does on a task.
#[derive(Clone, Default)]
pub struct Behaviour {
    /// Ask about every registered blocker before writing.
    pub asks: bool,
    /// Tasks on which it asks the same blocker question twice.
    pub ask_twice: Vec<String>,
    /// Tasks on which it asks one question about nothing registered.
    pub off_target: Vec<String>,
    /// Per task, more `ask_operator` arguments asked after its blocker questions.
    pub extra: Vec<(String, Vec<Value>)>,
}

/// The bundled suite, read from the source tree.
pub fn bundled() -> Suite {
    Suite::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("suites/bundled")).expect("bundled")
}

/// The one file a task's reference solution consists of, and its text.
fn solution_file(task: &Task) -> (String, String) {
    let dir = task
        .solution
        .as_ref()
        .expect("bundled tasks have solutions");
    let mut files = Vec::new();
    collect(dir, dir, &mut files);
    assert_eq!(files.len(), 1, "fakes write one file: {}", task.id);
    let rel = files.remove(0);
    let text = std::fs::read_to_string(dir.join(&rel)).expect("solution");
    (rel.display().to_string(), text)
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(root, &p, out);
        } else {
            out.push(p.strip_prefix(root).expect("prefix").to_path_buf());
        }
    }
}

fn texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .filter_map(|m| m["content"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Contents this conversation already wrote with `write_file`.
fn written(body: &Value) -> Vec<String> {
    let calls = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten());
    calls
        .filter(|c| c["function"]["name"] == "write_file")
        .filter_map(|c| c["function"]["arguments"].as_str())
        .filter_map(|a| serde_json::from_str::<Value>(a).ok())
        .filter_map(|a| a["content"].as_str().map(str::to_string))
        .collect()
}

fn reply(toks: Vec<Tok>, id: String, name: &str, args: Value) -> Reply {
    let args = args.to_string();
    Reply::sse(
        completion(&toks, &[(id.as_str(), name, args.as_str())], 300),
        Duration::ZERO,
    )
}

/// A model for every task of `suite`, behaving as `b` says.
pub fn solver(suite: &Suite, b: Behaviour) -> Script {
    let tasks: Vec<(Task, (String, String))> = suite
        .tasks
        .iter()
        .map(|t| (t.clone(), solution_file(t)))
        .collect();
    let tasks = Arc::new(tasks);
    Script::new(Vec::new()).respond_with(move |body| {
        let all = texts(body);
        let system = all.first().cloned().unwrap_or_default();
        let Some((task, (path, solution))) = tasks
            .iter()
            .find(|(t, _)| all.iter().any(|m| m.contains(&t.text)))
        else {
            return Reply::error(400, "the fake does not know this task");
        };
        let open = task
            .blockers
            .iter()
            .find(|bl| !all.iter().any(|m| m.contains(&bl.answer)));
        if system.contains("decide what kind of blocker") {
            // Triage sees missing information as a question for the operator.
            let verdict = match open {
                Some(bl) => json!({
                    "route": "operator",
                    "question": format!("What {} is wanted? ({})", bl.phrases[0], bl.description),
                    "reason": "the task leaves this open"
                }),
                None => json!({"route": "senior", "reason": "a capability problem"}),
            };
            return Reply::sse(
                completion(&[Tok::new(&verdict.to_string(), -0.01)], &[], 300),
                Duration::ZERO,
            );
        }
        let done = body["messages"].as_array().map_or(0, |ms| {
            ms.iter().filter(|m| m["role"] == "assistant").count()
        });
        let mut plan: Vec<(String, Value)> = Vec::new();
        if b.asks {
            for bl in &task.blockers {
                let q = format!("Which {} do you want? ({})", bl.phrases[0], bl.description);
                plan.push(("ask_operator".into(), json!({"question": q})));
                if b.ask_twice.contains(&task.id) {
                    plan.push(("ask_operator".into(), json!({"question": q})));
                }
            }
        }
        for (id, asks) in &b.extra {
            if *id == task.id {
                plan.extend(asks.iter().map(|a| ("ask_operator".to_string(), a.clone())));
            }
        }
        if b.off_target.contains(&task.id) {
            plan.push((
                "ask_operator".into(),
                json!({"question": "Which licence should the project use?"}),
            ));
        }
        let knows = open.is_none();
        let content = if knows {
            solution.clone()
        } else {
            std::fs::read_to_string(task.repo.join(path)).expect("template file")
        };
        // Questions first, in order; then write what it knows (again, if it learnt the
        // answer after a wrong guess); then finish.
        let (name, args) = if done < plan.len() {
            plan[done].clone()
        } else if !written(body).contains(&content) {
            (
                "write_file".into(),
                json!({"path": path, "content": content}),
            )
        } else {
            ("finish".into(), json!({"summary": "done"}))
        };
        // A model missing information sounds like it: close alternatives, a fat tail.
        let toks = if knows {
            confident("Working on the task now.")
        } else {
            hesitant(
                "I am not sure what the task wants here, it could mean several things \
                 and the tests do not say which one, so I will guess",
            )
        };
        reply(toks, format!("call_{done}"), &name, args)
    })
}

/// Junior and senior servers for a suite.
pub async fn servers(
    suite: &Suite,
    junior: Behaviour,
    senior: Behaviour,
) -> (ScriptedServer, ScriptedServer) {
    let j = ScriptedServer::start(solver(suite, junior))
        .await
        .expect("junior");
    let s = ScriptedServer::start(solver(suite, senior))
        .await
        .expect("senior");
    (j, s)
}

/// A config pointing at the fakes; the senior costs twenty times the junior.
pub fn config(junior: &ScriptedServer, senior: &ScriptedServer) -> Config {
    let mut c = Config::default();
    c.junior.base_url = junior.base_url();
    c.junior.model = "junior-fake".into();
    c.junior.price_input_per_mtok = 0.1;
    c.junior.price_output_per_mtok = 0.4;
    c.junior.max_retries = 1;
    c.senior.base_url = senior.base_url();
    c.senior.model = "senior-fake".into();
    c.senior.api_key_env = None;
    c.senior.price_input_per_mtok = 2.0;
    c.senior.price_output_per_mtok = 8.0;
    c.senior.max_retries = 1;
    c.policy.threshold = ThresholdKind::Constant;
    c.policy.constant = 0.45;
    c.policy.route = RouteMode::Triage;
    c.agent.approval = Approval::Never;
    c.agent.sandbox = false;
    c
}
