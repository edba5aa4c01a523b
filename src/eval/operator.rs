//! The simulated operator: answers a question only when it targets a registered blocker.
//!
//! It is an event consumer like the TUI's question modal or `exec`'s answer file: it
//! sees `OperatorAsked` and replies with a `Command`. A question about a blocker gets the
//! hidden answer and is marked needed; any other question gets a polite non-answer and is
//! marked not needed, so asking costs a round trip but never leaks what the task left out.
//! Which blocker a question targets is decided by a [`Judge`]: the offline phrase matcher,
//! or an LLM reading the blockers' descriptions.

use futures::StreamExt;
use tokio::sync::mpsc;

use super::suite::Blocker;
use crate::llm::Client;
use crate::llm::types::{ChatRequest, Delta, Message};
use crate::protocol::{Command, Event, Stamped};

/// What the operator says to a question that targets no blocker.
pub const NO_INFORMATION: &str = "I have no further information on that; decide as you think best.";

/// Decides which blocker, if any, a question is about.
pub enum Judge {
    /// Case-insensitive substring match against each blocker's phrases. Offline and
    /// deterministic, so CI and regression runs score the same every time.
    Phrases,
    /// An OpenAI-compatible model names the blocker; falls back to the phrases when the
    /// endpoint fails, so a flaky judge does not change the junior's run.
    Llm(Box<Client>),
}

/// The blocker `question` targets by phrase; blockers not yet matched are preferred, so a
/// question naming two blockers counts towards the one still open.
pub fn match_phrases<'a>(
    blockers: &'a [Blocker],
    question: &str,
    already: &[String],
) -> Option<&'a Blocker> {
    let q = question.to_lowercase();
    let hits: Vec<&Blocker> = blockers
        .iter()
        .filter(|b| {
            b.phrases
                .iter()
                .map(|p| p.trim().to_lowercase())
                .any(|p| !p.is_empty() && q.contains(&p))
        })
        .collect();
    hits.iter()
        .find(|b| !already.contains(&b.id))
        .or(hits.first())
        .copied()
}

impl Judge {
    async fn judge<'a>(
        &self,
        blockers: &'a [Blocker],
        question: &str,
        already: &[String],
    ) -> Option<&'a Blocker> {
        if blockers.is_empty() {
            return None;
        }
        match self {
            Judge::Phrases => match_phrases(blockers, question, already),
            Judge::Llm(client) => match ask_llm(client, blockers, question).await {
                Some(id) => blockers.iter().find(|b| b.id == id),
                None => match_phrases(blockers, question, already),
            },
        }
    }
}

/// The id the model named; `Some("")` when it named none (a verdict, not a failure);
/// `None` when the endpoint failed, so the caller can fall back to the phrases.
async fn ask_llm(client: &Client, blockers: &[Blocker], question: &str) -> Option<String> {
    let list: String = blockers
        .iter()
        .map(|b| format!("- {}: {}\n", b.id, b.description))
        .collect();
    let req = ChatRequest {
        messages: vec![
            Message::system(
                "You judge questions a coding agent asks its operator. Given the details the \
                 task left out (id: description) and one question, reply with the id of the \
                 detail the question asks about, or NONE if it asks about none of them. \
                 Reply with the id or NONE only.",
            ),
            Message::user(format!("Details left out:\n{list}\nQuestion: {question}")),
        ],
        tools: Vec::new(),
    };
    let mut stream = client.stream_once(&req).await.ok()?;
    let mut text = String::new();
    while let Some(delta) = stream.next().await {
        match delta.ok()? {
            Delta::Token { text: t, .. } => text.push_str(&t),
            Delta::Finish(_) => break,
            _ => {}
        }
    }
    let reply = text
        .trim()
        .trim_matches(|c: char| !c.is_alphanumeric() && c != '-' && c != '_');
    if reply.eq_ignore_ascii_case("none") {
        return Some(String::new());
    }
    blockers
        .iter()
        .find(|b| reply == b.id)
        .or_else(|| blockers.iter().find(|b| text.contains(&b.id)))
        .map(|b| b.id.clone())
        .or(Some(String::new()))
}

/// Serves one session: answers every `OperatorAsked` and returns, per question, the
/// blocker it was judged to target.
pub async fn serve(
    judge: std::sync::Arc<Judge>,
    blockers: Vec<Blocker>,
    mut events: mpsc::Receiver<Stamped>,
    commands: mpsc::Sender<Command>,
) -> Vec<Option<String>> {
    let mut matched: Vec<Option<String>> = Vec::new();
    while let Some(stamped) = events.recv().await {
        let Event::OperatorAsked {
            question, options, ..
        } = &stamped.event
        else {
            continue;
        };
        let already: Vec<String> = matched.iter().flatten().cloned().collect();
        // Options are part of what was asked: "seconds or an error?" names the blocker.
        let asked = format!("{question} {}", options.join(" "));
        let hit = judge.judge(&blockers, &asked, &already).await;
        matched.push(hit.map(|b| b.id.clone()));
        let reply = match hit {
            Some(b) => Command::Answer {
                answer: b.answer.clone(),
                needed: Some(true),
            },
            None => Command::Answer {
                answer: NO_INFORMATION.into(),
                needed: Some(false),
            },
        };
        if commands.send(reply).await.is_err() {
            // The session is gone; keep draining so the emitter never blocks on us.
            continue;
        }
    }
    matched
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocker(id: &str, phrases: &[&str]) -> Blocker {
        Blocker {
            id: id.into(),
            description: format!("about {id}"),
            answer: format!("answer {id}"),
            phrases: phrases.iter().map(|p| p.to_string()).collect(),
        }
    }

    #[test]
    fn phrases_match_case_insensitively_and_prefer_open_blockers() {
        let bs = [
            blocker("sep", &["Separator", "hyphen"]),
            blocker("case", &["lowercase", "separator"]),
        ];
        assert_eq!(
            match_phrases(&bs, "Which SEPARATOR should I use?", &[]).map(|b| b.id.as_str()),
            Some("sep")
        );
        assert_eq!(
            match_phrases(&bs, "Which separator should I use?", &["sep".into()])
                .map(|b| b.id.as_str()),
            Some("case")
        );
        assert!(match_phrases(&bs, "What is the license?", &[]).is_none());
    }

    #[tokio::test]
    async fn answers_blocker_questions_and_declines_others() {
        let (etx, erx) = mpsc::channel(8);
        let (ctx, mut crx) = mpsc::channel(8);
        let task = tokio::spawn(serve(
            std::sync::Arc::new(Judge::Phrases),
            vec![blocker("sep", &["separator"])],
            erx,
            ctx,
        ));
        for q in ["Which separator?", "Which license?"] {
            etx.send(Stamped {
                t_ms: 0,
                event: Event::OperatorAsked {
                    step: 1,
                    question: q.into(),
                    options: vec![],
                    default_assumption: None,
                    self_initiated: true,
                },
            })
            .await
            .expect("send");
        }
        drop(etx);
        assert_eq!(
            crx.recv().await,
            Some(Command::Answer {
                answer: "answer sep".into(),
                needed: Some(true)
            })
        );
        assert_eq!(
            crx.recv().await,
            Some(Command::Answer {
                answer: NO_INFORMATION.into(),
                needed: Some(false)
            })
        );
        assert_eq!(task.await.expect("join"), vec![Some("sep".into()), None]);
    }
}
