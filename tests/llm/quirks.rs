//! One test per server quirk: exact SSE in, exact deltas out.

use std::time::Duration;

use handoff::demo::server::{Reply, Script, ScriptedServer};
use handoff::demo::sse::{self, Tok};
use handoff::llm::{Client, Delta, LlmError};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::*;

const GAP: Duration = Duration::from_millis(2);

#[tokio::test]
async fn openai_k0_null_final_logprobs_and_usage_chunk() {
    let chunks = vec![
        ev(
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","service_tier":"default","system_fingerprint":"fp_1",
              "choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":{"content":[],"refusal":null},"finish_reason":null}],"usage":null}"#,
        ),
        ev(
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","service_tier":"default","system_fingerprint":"fp_1",
              "choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":{"content":[{"token":"Hi","logprob":-0.01,"bytes":[72,105],"top_logprobs":[]}],"refusal":null},"finish_reason":null}],"usage":null}"#,
        ),
        ev(
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","service_tier":"default","system_fingerprint":"fp_1",
              "choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}"#,
        ),
        ev(
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","service_tier":"default","system_fingerprint":"fp_1",
              "choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}"#,
        ),
        sse::done(),
    ];
    let (deltas, err, _server) = run(vec![Reply::sse(chunks, GAP)], 0).await;
    assert_eq!(err, None);
    assert_eq!(
        deltas,
        vec![
            tok("Hi", -0.01, &[]),
            Delta::Finish("stop".into()),
            usage(9, 1)
        ]
    );
}

#[tokio::test]
async fn vllm_logprobs_everywhere_unsorted_floor_and_extra_fields() {
    let chunks = vec![
        ev(
            r#"{"id":"chatcmpl-v","object":"chat.completion.chunk","created":1,"model":"qwen",
              "choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#,
        ),
        ev(
            r#"{"id":"chatcmpl-v","object":"chat.completion.chunk","created":1,"model":"qwen",
              "choices":[{"index":0,"delta":{"reasoning":"Hmm"},"logprobs":{"content":[{"token":"Hmm","logprob":-1.25,"top_logprobs":[{"token":"Hmm","logprob":-1.25}]}]},
                "finish_reason":null,"token_ids":[80022]}]}"#,
        ),
        ev(
            r#"{"id":"chatcmpl-v","object":"chat.completion.chunk","created":1,"model":"qwen",
              "choices":[{"index":0,"delta":{"content":"Let","reasoning":null},"logprobs":{"content":[{"token":"Let","logprob":-0.5,"bytes":[76,101,116],
                "top_logprobs":[{"token":" I","logprob":-1.5,"bytes":[32,73]},{"token":"Let","logprob":-0.5,"bytes":[76,101,116]},{"token":"OK","logprob":-2.0,"bytes":[79,75]}]}]},
                "finish_reason":null,"stop_reason":null,"token_ids":[10061]}]}"#,
        ),
        ev(
            r#"{"id":"chatcmpl-v","object":"chat.completion.chunk","created":1,"model":"qwen",
              "choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"chatcmpl-tool-abc","type":"function","function":{"name":"read_file","arguments":""}}]},
                "logprobs":{"content":[{"token":"<tool_call>","logprob":-0.02,"top_logprobs":[{"token":"I","logprob":-4.1},{"token":"<tool_call>","logprob":-0.02},{"token":"<|im_end|>","logprob":-9999.0}]}]},
                "finish_reason":null,"token_ids":[151657]}]}"#,
        ),
        ev(
            r#"{"id":"chatcmpl-v","object":"chat.completion.chunk","created":1,"model":"qwen",
              "choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\": \"a.rs\"}"}}]},
                "logprobs":{"content":[{"token":"{\"","logprob":-0.001,"top_logprobs":[{"token":"{\"","logprob":-0.001},{"token":"{","logprob":-7.0}]}]},"finish_reason":null}]}"#,
        ),
        ev(
            r#"{"id":"chatcmpl-v","object":"chat.completion.chunk","created":1,"model":"qwen",
              "choices":[{"index":0,"delta":{"content":""},"logprobs":{"content":[{"token":"</tool_call>","logprob":-0.003,"top_logprobs":[{"token":"</tool_call>","logprob":-0.003}]}]},"finish_reason":null}]}"#,
        ),
        ev(
            r#"{"id":"chatcmpl-v","object":"chat.completion.chunk","created":1,"model":"qwen",
              "choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"tool_calls","stop_reason":151645}]}"#,
        ),
        ev(
            r#"{"id":"chatcmpl-v","object":"chat.completion.chunk","created":1,"model":"qwen",
              "choices":[],"usage":{"prompt_tokens":20,"total_tokens":25,"completion_tokens":5}}"#,
        ),
        sse::done(),
    ];
    let (deltas, err, _server) = run(vec![Reply::sse(chunks, GAP)], 2).await;
    assert_eq!(err, None);
    assert_eq!(
        deltas,
        vec![
            // Reasoning tokens are junior output too: they arrive through their logprobs.
            tok("Hmm", -1.25, &[("Hmm", -1.25)]),
            tok("Let", -0.5, &[("Let", -0.5), (" I", -1.5)]),
            tok("<tool_call>", -0.02, &[("<tool_call>", -0.02), ("I", -4.1)]),
            tok("{\"", -0.001, &[("{\"", -0.001), ("{", -7.0)]),
            tok("</tool_call>", -0.003, &[("</tool_call>", -0.003)]),
            call("chatcmpl-tool-abc", "read_file", r#"{"path": "a.rs"}"#),
            Delta::Finish("tool_calls".into()),
            usage(20, 5),
        ]
    );
}

#[tokio::test]
async fn vllm_floor_on_the_chosen_token_is_no_measurement() {
    let chunks = vec![
        ev(
            r#"{"choices":[{"index":0,"delta":{"content":"x"},"logprobs":{"content":[{"token":"x","logprob":-9999.0,"top_logprobs":[{"token":"y","logprob":-0.1}]}]},"finish_reason":"length"}]}"#,
        ),
        sse::done(),
    ];
    let (deltas, err, _server) = run(vec![Reply::sse(chunks, GAP)], 1).await;
    assert_eq!(err, None);
    assert_eq!(
        deltas,
        vec![
            Delta::Token {
                text: "x".into(),
                logprob: None,
                top: vec![handoff::protocol::Alternative {
                    token: "y".into(),
                    logprob: -0.1
                }],
            },
            Delta::Finish("length".into()),
        ]
    );
}

fn llama_chunk(content: &str, entries: &str, finish: &str) -> bytes::Bytes {
    ev(&format!(
        r#"{{"choices":[{{"finish_reason":{finish},"index":0,"delta":{{"content":{content}}},"logprobs":{{"content":{entries}}}}}],
            "created":1,"id":"chatcmpl-ll","model":"gpt-3.5-turbo","system_fingerprint":"b5000-1","object":"chat.completion.chunk"}}"#
    ))
}

#[tokio::test]
async fn llama_cpp_rejects_logprobs_with_tools_then_n_probs_is_used() {
    let rejection = Reply::Http {
        status: 400,
        headers: vec![("content-type".into(), "application/json".into())],
        body: r#"{"error":{"code":400,"message":"logprobs is not supported with tools + stream","type":"invalid_request_error"}}"#.into(),
    };
    let stream = || {
        Reply::sse(
            vec![
                llama_chunk(
                    r#""Hi""#,
                    r#"[{"id":13347,"token":"Hi","bytes":[72,105],"logprob":-0.2,"top_logprobs":[{"id":13347,"token":"Hi","bytes":[72,105],"logprob":-0.2},{"id":9906,"token":"Hello","bytes":[72,101,108,108,111],"logprob":-1.8}]}]"#,
                    "null",
                ),
                ev(
                    r#"{"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"created":1,"id":"chatcmpl-ll","model":"gpt-3.5-turbo","object":"chat.completion.chunk",
                       "usage":{"completion_tokens":1,"prompt_tokens":30,"total_tokens":31},"timings":{"predicted_ms":3.1}}"#,
                ),
                sse::done(),
            ],
            GAP,
        )
    };
    let server = ScriptedServer::start(Script::new(vec![rejection, stream(), stream()]))
        .await
        .expect("server");
    let client = Client::new(&config(&server, 2)).expect("client");
    let (first, err) = collect(&client, &request_with_tools()).await;
    assert_eq!(err, None);
    let expected_tail = vec![
        tok("Hi", -0.2, &[("Hi", -0.2), ("Hello", -1.8)]),
        Delta::Finish("stop".into()),
        usage(30, 1),
    ];
    let mut expected = vec![Delta::Warning {
        kind: "logprobs_with_tools_rejected".into(),
        message: "the server rejected logprobs together with tools (request rejected (HTTP 400): \
                  logprobs is not supported with tools + stream); retried with llama.cpp's \
                  n_probs instead"
            .into(),
    }];
    expected.extend(expected_tail.clone());
    assert_eq!(first, expected);
    // The client remembers: the next request with tools asks for n_probs straight away.
    let (second, err) = collect(&client, &request_with_tools()).await;
    assert_eq!(err, None);
    assert_eq!(second, expected_tail);

    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3);
    assert_eq!(bodies[0]["logprobs"], json!(true));
    assert_eq!(bodies[0]["top_logprobs"], json!(2));
    for retried in &bodies[1..] {
        assert_eq!(retried.get("logprobs"), None);
        assert_eq!(retried.get("top_logprobs"), None);
        assert_eq!(retried["n_probs"], json!(2));
        assert_eq!(retried["tools"], bodies[0]["tools"]);
        assert_eq!(retried["stream"], json!(true));
    }
}

#[tokio::test]
async fn llama_cpp_post_sampling_probs_with_extra_id() {
    let chunks = vec![
        llama_chunk(
            r#""ab""#,
            r#"[{"id":64,"token":"a","bytes":[97],"prob":0.5,"top_probs":[{"id":65,"token":"b","bytes":[98],"prob":0.25},{"id":64,"token":"a","bytes":[97],"prob":0.5}]},
                {"id":65,"token":"b","bytes":[98],"prob":1.0,"top_probs":[{"id":65,"token":"b","bytes":[98],"prob":1.0},{"id":66,"token":"c","bytes":[99],"prob":0.0}]}]"#,
            "null",
        ),
        llama_chunk("null", "[]", r#""stop""#),
        sse::done(),
    ];
    let (deltas, err, server) = run(vec![Reply::sse(chunks, GAP)], 2).await;
    assert_eq!(err, None);
    assert_eq!(
        deltas,
        vec![
            tok("a", 0.5f64.ln(), &[("a", 0.5f64.ln()), ("b", 0.25f64.ln())]),
            tok("b", 0.0, &[("b", 0.0)]),
            Delta::Finish("stop".into()),
        ]
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn ollama_k0_omits_top_logprobs_and_sends_a_whole_tool_call() {
    let chunks = vec![
        ev(
            r#"{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1,"model":"qwen3","system_fingerprint":"fp_ollama",
              "choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null,"logprobs":{"content":[{"token":"Hi","logprob":-0.05,"bytes":[72,105]}]}}]}"#,
        ),
        ev(
            r#"{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1,"model":"qwen3","system_fingerprint":"fp_ollama",
              "choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_x1","index":0,"type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.rs\"}"}}]},"finish_reason":null}]}"#,
        ),
        ev(
            r#"{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1,"model":"qwen3","system_fingerprint":"fp_ollama",
              "choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"tool_calls"}]}"#,
        ),
        ev(
            r#"{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1,"model":"qwen3","system_fingerprint":"fp_ollama",
              "choices":[],"usage":{"prompt_tokens":40,"completion_tokens":12,"total_tokens":52}}"#,
        ),
        sse::done(),
    ];
    let (deltas, err, _server) = run(vec![Reply::sse(chunks, GAP)], 0).await;
    assert_eq!(err, None);
    assert_eq!(
        deltas,
        vec![
            tok("Hi", -0.05, &[]),
            call("call_x1", "read_file", r#"{"path":"a.rs"}"#),
            Delta::Finish("tool_calls".into()),
            usage(40, 12),
        ]
    );
}

#[tokio::test]
async fn lm_studio_without_logprobs_warns_once() {
    let chunk = |content: &str| {
        ev(&format!(
            r#"{{"id":"chatcmpl-lms","object":"chat.completion.chunk","created":1,"model":"qwen2.5","system_fingerprint":"qwen2.5",
                 "choices":[{{"index":0,"delta":{{"role":"assistant","content":"{content}"}},"logprobs":null,"finish_reason":null}}]}}"#
        ))
    };
    let chunks = vec![
        chunk("Hel"),
        chunk("lo"),
        ev(
            r#"{"id":"chatcmpl-lms","object":"chat.completion.chunk","created":1,"model":"qwen2.5","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}"#,
        ),
        sse::done(),
    ];
    let (deltas, err, _server) = run(vec![Reply::sse(chunks, GAP)], 3).await;
    assert_eq!(err, None);
    assert_eq!(
        deltas,
        vec![
            Delta::Warning {
                kind: "no_logprobs".into(),
                message: "the server sent tokens without logprobs; the judge uses step evidence \
                          only for this response"
                    .into(),
            },
            plain("Hel"),
            plain("lo"),
            Delta::Finish("stop".into()),
        ]
    );
}

#[tokio::test]
async fn no_warning_when_logprobs_were_not_asked_for() {
    let server = ScriptedServer::start(Script::new(vec![Reply::sse(
        vec![
            sse::data(&sse::text("ok")),
            sse::data(&sse::finish("stop")),
            sse::done(),
        ],
        GAP,
    )]))
    .await
    .expect("server");
    let mut cfg = config(&server, 0);
    cfg.logprobs = false;
    let client = Client::new(&cfg).expect("client");
    let (deltas, err) = collect(&client, &request()).await;
    assert_eq!(err, None);
    assert_eq!(deltas, vec![plain("ok"), Delta::Finish("stop".into())]);
}

#[tokio::test]
async fn openrouter_comments_are_ignored() {
    let chunks = vec![
        sse::comment("OPENROUTER PROCESSING"),
        sse::comment("OPENROUTER PROCESSING"),
        sse::data(&sse::tokens(&[Tok::new("ok", -0.2)])),
        sse::comment("OPENROUTER PROCESSING"),
        sse::data(&sse::finish("stop")),
        sse::data(&sse::usage(5, 1)),
        sse::done(),
    ];
    let (deltas, err, _server) = run(vec![Reply::sse(chunks, GAP)], 1).await;
    assert_eq!(err, None);
    assert_eq!(
        deltas,
        vec![
            tok("ok", -0.2, &[("ok", -0.2)]),
            Delta::Finish("stop".into()),
            usage(5, 1)
        ]
    );
}

#[tokio::test]
async fn openrouter_error_inside_an_http_200_stream() {
    let chunks = vec![
        sse::comment("OPENROUTER PROCESSING"),
        sse::data(&sse::tokens(&[Tok::new("ok", -0.2)])),
        ev(
            r#"{"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"x","provider":"Together",
              "error":{"code":502,"message":"Provider returned error"},
              "choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}"#,
        ),
        sse::done(),
    ];
    let (deltas, err, _server) = run(vec![Reply::sse(chunks, GAP)], 1).await;
    assert_eq!(deltas, vec![tok("ok", -0.2, &[("ok", -0.2)])]);
    let err = err.expect("an error");
    assert_eq!(
        err,
        LlmError::Server {
            status: 502,
            message: "error inside the stream: Provider returned error".into()
        }
    );
    assert!(err.retryable());
}

#[tokio::test]
async fn unknown_enum_values_and_null_logprob() {
    let chunks = vec![
        ev(
            r#"{"id":"x","object":"chat.completion.chunk.v9","created":1,"model":"m","service_tier":"on_demand",
              "choices":[{"index":0,"delta":{"role":"model","content":"x"},"logprobs":{"content":[
                {"token":"x","logprob":null,"top_logprobs":[{"token":"x","logprob":null},{"token":"y","logprob":-1.0}]}]},"finish_reason":null}]}"#,
        ),
        ev(
            r#"{"id":"x","object":"chat.completion.chunk.v9","created":1,"model":"m","service_tier":"on_demand",
              "choices":[{"index":0,"delta":{},"finish_reason":"eos_token"}]}"#,
        ),
        sse::done(),
    ];
    let (deltas, err, _server) = run(vec![Reply::sse(chunks, GAP)], 2).await;
    assert_eq!(err, None);
    assert_eq!(
        deltas,
        vec![
            Delta::Token {
                text: "x".into(),
                logprob: None,
                top: vec![handoff::protocol::Alternative {
                    token: "y".into(),
                    logprob: -1.0
                }],
            },
            Delta::Finish("eos_token".into()),
        ]
    );
}

#[tokio::test]
async fn several_tokens_in_one_chunk() {
    let chunks = vec![
        sse::data(&sse::tokens(&[
            Tok::new("Hello", -0.1),
            Tok::new(" wor", -0.2),
            Tok::new("ld", -0.3),
        ])),
        sse::data(&sse::finish("stop")),
        sse::done(),
    ];
    let (deltas, err, _server) = run(vec![Reply::sse(chunks, GAP)], 1).await;
    assert_eq!(err, None);
    assert_eq!(
        deltas,
        vec![
            tok("Hello", -0.1, &[("Hello", -0.1)]),
            tok(" wor", -0.2, &[(" wor", -0.2)]),
            tok("ld", -0.3, &[("ld", -0.3)]),
            Delta::Finish("stop".into()),
        ]
    );
}
