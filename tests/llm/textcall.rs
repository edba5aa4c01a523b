//! The text tool-call parser on what real small models wrote (the llama.cpp recordings) and
//! on every shape it promises to read, with the errors that become repair messages.

use handoff::agent::tools::spec::specs;
use handoff::demo::llamacpp::{RECORDED_DOUBLED_BRACES_JSON, RECORDED_TEXT_CALL_SSE};
use handoff::llm::textcall::{CallWatcher, TextCallError, parse_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// (name, arguments) of the call read from `text`.
fn call(text: &str) -> (String, Value) {
    let c = parse_call(text, &specs()).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    (c.name, Value::Object(c.arguments))
}

fn error(text: &str) -> TextCallError {
    match parse_call(text, &specs()) {
        Ok(c) => panic!("{text:?} parsed as {c:?}"),
        Err(e) => e,
    }
}

const ALLOWED: &str =
    "list_files, read_file, search, apply_patch, write_file, run, ask_operator, finish";

/// The content of a recorded stream, as the client assembles it.
fn streamed_content(sse: &str) -> Vec<String> {
    sse.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| {
            let v: Value = serde_json::from_str(l).expect("recorded chunk is JSON");
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_string)
        })
        .collect()
}

#[test]
fn the_recorded_half_b_stream_holds_a_read_file_call() {
    let text: String = streamed_content(RECORDED_TEXT_CALL_SSE).concat();
    assert_eq!(
        text,
        r#"{"name": "read_file", "arguments": {"path": "src/main.rs"}}"#
    );
    assert_eq!(
        call(&text),
        ("read_file".into(), json!({"path": "src/main.rs"}))
    );
}

#[test]
fn the_recorded_one_and_a_half_b_doubled_braces_are_read() {
    let v: Value = serde_json::from_str(RECORDED_DOUBLED_BRACES_JSON).expect("recording");
    let text = v["choices"][0]["message"]["content"]
        .as_str()
        .expect("content");
    assert_eq!(
        text,
        r#"{{"name": "read_file", "arguments": {"path": "src/main.rs"}}}"#
    );
    assert_eq!(
        call(text),
        ("read_file".into(), json!({"path": "src/main.rs"}))
    );
}

#[test]
fn the_texts_quoted_from_the_failed_session_are_read() {
    // A finish call copied from the tool's description, and the senior's fenced step.
    assert_eq!(
        call(
            r#"{"name": "finish", "arguments": {"summary": "Declare the task done and summarise what was changed."}}"#
        ),
        (
            "finish".into(),
            json!({"summary": "Declare the task done and summarise what was changed."})
        )
    );
    assert_eq!(
        call("```json\n{\"name\": \"finish\", \"arguments\": {\"summary\": \"fixed add\"}}\n```"),
        ("finish".into(), json!({"summary": "fixed add"}))
    );
}

#[test]
fn every_promised_shape_is_read() {
    let want = ("read_file".to_string(), json!({"path": "calc.py"}));
    for text in [
        r#"{"name": "read_file", "arguments": {"path": "calc.py"}}"#,
        r#"{"name": "read_file", "parameters": {"path": "calc.py"}}"#,
        r#"{"name": "read_file", "arguments": "{\"path\": \"calc.py\"}"}"#,
        r#"{{"name": "read_file", "arguments": {{"path": "calc.py"}}}}"#,
        "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"calc.py\"}}\n</tool_call>",
        "I will look at the code first.\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"calc.py\"}}\n```\nThen I fix it.",
        "Sure! {\"name\": \"read_file\", \"arguments\": {\"path\": \"calc.py\"}} That reads it.",
        r#"{"type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"calc.py\"}"}}"#,
        r#"{"tool_calls": [{"function": {"name": "read_file", "arguments": {"path": "calc.py"}}}]}"#,
        r#"{"read_file": {"path": "calc.py"}}"#,
        "Code like `let m = {\"a\": 1};` is not a call.\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"calc.py\"}}",
    ] {
        assert_eq!(call(text), want, "{text}");
    }
}

#[test]
fn strings_with_braces_and_quotes_stay_whole() {
    let text = r#"{"name": "write_file", "arguments": {"path": "a.py", "content": "d = {\"k\": 1}\nprint('}')\n"}}"#;
    assert_eq!(
        call(text),
        (
            "write_file".into(),
            json!({"path": "a.py", "content": "d = {\"k\": 1}\nprint('}')\n"})
        )
    );
}

#[test]
fn arguments_beside_the_name_are_read_as_arguments() {
    // Both written in a real session: the 1.5B's finish, the 0.5B's ask_operator.
    assert_eq!(
        call(
            "```json\n{\n  \"name\": \"finish\",\n  \"summary\": \"fizzbuzz returns FizzBuzz for 15\"\n}\n```"
        ),
        (
            "finish".into(),
            json!({"summary": "fizzbuzz returns FizzBuzz for 15"})
        )
    );
    assert_eq!(
        call(
            r#"{"name": "ask_operator", "question": "What did the senior do?", "options?": ["a", "b"]}"#
        ),
        (
            "ask_operator".into(),
            json!({"question": "What did the senior do?", "options?": ["a", "b"]})
        )
    );
    // Nothing beside the name: still a missing argument, named.
    assert!(matches!(
        error(r#"{"name": "finish"}"#),
        TextCallError::MissingArgument { argument, .. } if argument == "summary"
    ));
}

#[test]
fn raw_newlines_inside_a_string_are_repaired() {
    // The 1.5B writing a file's content with real line breaks (measured on py-wordcount).
    let text = "```json\n{\n  \"name\": \"write_file\",\n  \"arguments\": {\n    \"content\": \"def word_counts(text):\\n    words = text.split(' ')\n    return len(words)\",\n    \"path\": \"words.py\"\n  }\n}\n```";
    assert_eq!(
        call(text),
        (
            "write_file".into(),
            json!({"path": "words.py", "content": "def word_counts(text):\n    words = text.split(' ')\n    return len(words)"})
        )
    );
}

#[test]
fn several_calls_give_the_first_and_count_the_rest() {
    let text = "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n{\"name\": \"run\", \"arguments\": {\"command\": \"ls\"}}\n{\"name\": \"finish\", \"arguments\": {\"summary\": \"x\"}}";
    let c = parse_call(text, &specs()).expect("call");
    assert_eq!((c.name.as_str(), c.ignored), ("read_file", 2));
    assert_eq!(
        &text[c.span.clone()],
        r#"{"name": "read_file", "arguments": {"path": "a"}}"#
    );
}

#[test]
fn an_integer_written_as_a_string_is_coerced_and_the_call_becomes_native_shape() {
    let c = parse_call(
        r#"{"name": "read_file", "arguments": {"path": "a.rs", "start_line": "3"}}"#,
        &specs(),
    )
    .expect("call");
    let native = c.into_tool_call("text_call_1");
    assert_eq!(native.function.name, "read_file");
    assert_eq!(
        native.function.arguments,
        r#"{"path":"a.rs","start_line":3}"#
    );
    assert_eq!(native.id, "text_call_1");
}

#[test]
fn errors_name_what_was_wrong_and_the_allowed_tools() {
    let unknown = error(r#"{"name": "open_file", "arguments": {"path": "calc.py"}}"#);
    assert_eq!(
        unknown.to_string(),
        format!("there is no tool named `open_file`; allowed tools: {ALLOWED}")
    );
    assert_eq!(unknown.fact(), "malformed_call");

    let missing = error(r#"{"name": "read_file", "arguments": {}}"#);
    assert_eq!(
        missing.to_string(),
        format!("`read_file` needs the argument `path` (a string); allowed tools: {ALLOWED}")
    );
    let missing = error(r#"{"name": "finish"}"#);
    assert!(
        matches!(&missing, TextCallError::MissingArgument { argument, .. } if argument == "summary"),
        "{missing:?}"
    );

    let mistyped = error(r#"{"name": "read_file", "arguments": {"path": 3}}"#);
    assert_eq!(
        mistyped.to_string(),
        format!(
            "`read_file`: the argument `path` must be a string, not the number 3; allowed tools: {ALLOWED}"
        )
    );
    let list = error(
        r#"{"name": "ask_operator", "arguments": {"question": "which?", "options": "a or b"}}"#,
    );
    assert!(
        list.to_string()
            .contains("`options` must be a list of strings, not the string \"a or b\""),
        "{list}"
    );
    let arguments = error(r#"{"name": "run", "arguments": "ls -la"}"#);
    assert!(
        arguments
            .to_string()
            .contains("`arguments` must be a JSON object"),
        "{arguments}"
    );
}

#[test]
fn broken_json_and_no_call_are_told_apart() {
    let cut = error(r#"Here: {"name": "read_file", "arguments": {"path": "a.rs"}"#);
    assert!(
        matches!(&cut, TextCallError::Unparseable { reason, .. } if reason == "the object is not closed"),
        "{cut:?}"
    );
    let bare_keys = error(r#"{"name": "read_file", "arguments": {path: "a.rs"}}"#);
    assert!(
        matches!(bare_keys, TextCallError::Unparseable { .. }),
        "{bare_keys:?}"
    );
    assert!(bare_keys.to_string().contains(ALLOWED), "{bare_keys}");
    assert_eq!(bare_keys.fact(), "malformed_call");

    let nameless = error(r#"{"arguments": {"path": "a.rs"}}"#);
    assert!(
        matches!(nameless, TextCallError::NoName { .. }),
        "{nameless:?}"
    );

    for prose in [
        "To fix add(), change the minus to a plus.",
        "def f():\n    return {'a': 1}",
        "{ this is not json",
        "",
    ] {
        let none = error(prose);
        assert!(
            matches!(none, TextCallError::NoCall { .. }),
            "{prose:?}: {none:?}"
        );
        assert_eq!(none.fact(), "no_tool_call");
        assert_eq!(
            none.to_string(),
            format!(
                "your reply contains no tool call; reply with exactly one tool call as a JSON object {{\"name\": ..., \"arguments\": {{...}}}}; allowed tools: {ALLOWED}"
            )
        );
    }
}

#[test]
fn the_watcher_sees_the_call_complete_at_its_last_recorded_token() {
    let pieces = streamed_content(RECORDED_TEXT_CALL_SSE);
    let tools = specs();
    let mut w = CallWatcher::new();
    let complete: Vec<bool> = pieces.iter().map(|p| w.push(p, &tools)).collect();
    let last = complete.len() - 1;
    assert_eq!(complete.iter().position(|c| *c), Some(last), "{pieces:?}");
    assert_eq!(w.finish(&tools).expect("call").name, "read_file");

    // Prose with apostrophes and a non-call object before the call does not confuse it.
    let mut w = CallWatcher::new();
    assert!(!w.push("It's {\"a\": 1} then ", &tools));
    assert!(!w.push(
        "{\"name\": \"finish\", \"arguments\": {\"summary\": \"it's done\"",
        &tools
    ));
    assert!(w.push("}}", &tools));
}
