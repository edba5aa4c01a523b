//! Where control goes when the judge escalates, and the one targeted question.
//!
//! With `policy.route = "triage"` the senior model reads the distilled handoff note and says
//! whether the blocker is information only the operator has (then one targeted question
//! goes to the operator) or capability (then the senior takes over). The answer is parsed
//! leniently: models wrap JSON in prose or code fences, and a triage reply that cannot be
//! read must still lead somewhere sensible (the senior), never to an error.

use serde::Deserialize;

use crate::config::RouteMode;
use crate::protocol::Route;

/// What the router decided for one escalation.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub route: Route,
    /// Present when `route` is `Operator`.
    pub question: Option<Question>,
    /// One sentence from the triage, or why the default was used.
    pub reason: String,
}

/// One targeted question to the operator.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub text: String,
    pub options: Vec<String>,
    pub default_assumption: Option<String>,
    /// The detail asked about, in a few words (the operator's modal names it).
    pub topic: Option<String>,
}

#[derive(Debug, Deserialize)]
struct TriageReply {
    route: String,
    #[serde(default)]
    question: String,
    #[serde(default)]
    options: Vec<String>,
    #[serde(default)]
    default_assumption: String,
    #[serde(default)]
    topic: String,
    #[serde(default)]
    reason: String,
}

/// Whether the route mode needs a triage call to the senior model at all.
///
/// `operator` mode still asks the senior to phrase the question (it reads the whole
/// handoff note); only `senior` mode skips the call.
pub fn needs_triage_call(mode: RouteMode) -> bool {
    !matches!(mode, RouteMode::Senior)
}

/// Turns the triage model's reply (or its absence) into a decision under the configured mode.
pub fn decide(mode: RouteMode, reply: Option<&str>, task: &str) -> Decision {
    let parsed = reply.and_then(parse_reply);
    match mode {
        RouteMode::Senior => Decision {
            route: Route::Senior,
            question: None,
            reason: "policy.route = senior".into(),
        },
        RouteMode::Operator => {
            let question = parsed
                .as_ref()
                .and_then(question_of)
                .unwrap_or_else(|| fallback_question(task));
            Decision {
                route: Route::Operator,
                question: Some(question),
                reason: "policy.route = operator".into(),
            }
        }
        RouteMode::Triage => match parsed {
            Some(r) if r.route.eq_ignore_ascii_case("operator") => match question_of(&r) {
                Some(q) => Decision {
                    route: Route::Operator,
                    question: Some(q),
                    reason: non_empty(r.reason, "triage: missing information"),
                },
                None => Decision {
                    route: Route::Senior,
                    question: None,
                    reason: "triage chose the operator but wrote no question".into(),
                },
            },
            Some(r) => Decision {
                route: Route::Senior,
                question: None,
                reason: non_empty(r.reason, "triage: capability"),
            },
            None => Decision {
                route: Route::Senior,
                question: None,
                reason: "triage reply unreadable; the senior takes over".into(),
            },
        },
    }
}

fn non_empty(s: String, default: &str) -> String {
    if s.trim().is_empty() {
        default.to_string()
    } else {
        s
    }
}

fn question_of(r: &TriageReply) -> Option<Question> {
    let text = r.question.trim();
    if text.is_empty() {
        return None;
    }
    let options: Vec<String> = r
        .options
        .iter()
        .map(|o| o.trim().to_string())
        .filter(|o| !o.is_empty())
        .take(6)
        .collect();
    let default = r.default_assumption.trim();
    let topic = r.topic.trim();
    Some(Question {
        text: text.to_string(),
        options,
        default_assumption: (!default.is_empty()).then(|| default.to_string()),
        topic: (!topic.is_empty()).then(|| topic.chars().take(80).collect()),
    })
}

/// A question that is still specific to the task when no model could phrase one.
fn fallback_question(task: &str) -> Question {
    let short: String = task.chars().take(160).collect();
    Question {
        text: format!(
            "The junior is unsure how to proceed on \"{short}\". What detail is it missing?"
        ),
        options: Vec::new(),
        default_assumption: None,
        topic: None,
    }
}

/// Whether a writer's reply holds a decision [`decide`] can read; the session logs the
/// ones that do not, so an unreadable reply is evidence in the log, not a silent fallback.
pub fn readable(reply: &str) -> bool {
    parse_reply(reply).is_some()
}

/// Finds the first JSON object in a model reply that reads as a decision (bare, fenced,
/// or inside prose; a brace of code or prose before it is skipped). When none parses, the
/// decision's fields are read one by one (a small writer's object often breaks after its
/// question, e.g. an options list left unclosed).
fn parse_reply(text: &str) -> Option<TriageReply> {
    text.match_indices('{')
        .find_map(|(start, _)| {
            let end = crate::llm::textcall::object_end(text, start)?;
            serde_json::from_str(&text[start..end]).ok()
        })
        .or_else(|| salvage(text))
}

/// The decision's string fields, each the first `"key": "value"` in `text` whose value is
/// a whole JSON string; `None` without a route. Options are not salvaged.
fn salvage(text: &str) -> Option<TriageReply> {
    let field = |key: &str| -> Option<String> {
        let pattern = format!("\"{key}\"");
        text.match_indices(&pattern).find_map(|(at, _)| {
            let rest = text[at + pattern.len()..].trim_start().strip_prefix(':')?;
            serde_json::Deserializer::from_str(rest.trim_start())
                .into_iter::<String>()
                .next()?
                .ok()
        })
    };
    Some(TriageReply {
        route: field("route")?,
        question: field("question").unwrap_or_default(),
        options: Vec::new(),
        default_assumption: field("default_assumption").unwrap_or_default(),
        topic: field("topic").unwrap_or_default(),
        reason: field("reason").unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn triage_reply_in_a_code_fence_becomes_a_question() {
        let reply = "Sure.\n```json\n{\"route\": \"operator\", \"question\": \"ISO or US dates?\", \
                     \"options\": [\"ISO\", \" US \", \"\"], \"default_assumption\": \"ISO\", \"topic\": \" date format \", \
                     \"reason\": \"format unstated {x}\"}\n```";
        let d = decide(RouteMode::Triage, Some(reply), "t");
        assert_eq!(
            d,
            Decision {
                route: Route::Operator,
                question: Some(Question {
                    text: "ISO or US dates?".into(),
                    options: vec!["ISO".into(), "US".into()],
                    default_assumption: Some("ISO".into()),
                    topic: Some("date format".into()),
                }),
                reason: "format unstated {x}".into(),
            }
        );
    }

    #[test]
    fn a_brace_before_the_decision_is_skipped() {
        let reply = "Code like `d = {1: 2}` aside, my answer:\n{\"route\": \"operator\", \
                     \"question\": \"Should f count from 1?\"}";
        let d = decide(RouteMode::Triage, Some(reply), "t");
        assert_eq!(d.route, Route::Operator);
        assert_eq!(
            d.question.map(|q| q.text),
            Some("Should f count from 1?".to_string())
        );
        assert!(readable(reply));
        assert!(!readable("```python\ndef f(n):\n    return {}\n```"));
    }

    #[test]
    fn a_broken_object_still_gives_its_question() {
        // A 0.5B writer's reply, cut short: the options list is never closed.
        let reply = r#"{"route": "operator", "topic": "factorial", "question": "Does i start from 1?", "options": ["yes", "default_assumption": "yes"#;
        assert!(readable(reply));
        let d = decide(RouteMode::Operator, Some(reply), "t");
        let q = d.question.expect("a question");
        assert_eq!(q.text, "Does i start from 1?");
        assert_eq!(q.topic.as_deref(), Some("factorial"));
        assert!(q.options.is_empty());
        // Without a route there is no decision to salvage.
        assert!(!readable(r#"{"question": "Does i start from 1?", "#));
    }

    #[test]
    fn triage_capability_goes_to_the_senior() {
        let d = decide(
            RouteMode::Triage,
            Some(r#"{"route":"senior","reason":"subtle borrow bug"}"#),
            "t",
        );
        assert_eq!(d.route, Route::Senior);
        assert_eq!(d.reason, "subtle borrow bug");
    }

    #[test]
    fn unreadable_triage_falls_back_to_the_senior() {
        for reply in [
            None,
            Some("no json here"),
            Some("{\"route\": 3}"),
            Some("{unclosed"),
        ] {
            let d = decide(RouteMode::Triage, reply, "t");
            assert_eq!(d.route, Route::Senior, "{reply:?}");
        }
    }

    #[test]
    fn operator_chosen_without_a_question_goes_to_the_senior() {
        let d = decide(RouteMode::Triage, Some(r#"{"route":"operator"}"#), "t");
        assert_eq!(d.route, Route::Senior);
    }

    #[test]
    fn operator_mode_always_asks_even_without_a_reply() {
        let d = decide(RouteMode::Operator, None, "make the date parser strict");
        assert_eq!(d.route, Route::Operator);
        let q = d.question.expect("a question");
        assert!(q.text.contains("make the date parser strict"));
    }

    #[test]
    fn senior_mode_ignores_the_reply() {
        let d = decide(
            RouteMode::Senior,
            Some(r#"{"route":"operator","question":"q"}"#),
            "t",
        );
        assert_eq!(d.route, Route::Senior);
        assert!(!needs_triage_call(RouteMode::Senior));
    }
}
