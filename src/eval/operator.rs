//! The simulated operator: answers a question only when it targets a registered blocker.
//!
//! It is an event consumer like the TUI's question modal or `exec`'s answer file: it
//! sees `OperatorAsked` and replies with a `Command`. A question about a blocker gets the
//! hidden answer and is marked needed; any other question gets a polite non-answer and is
//! marked not needed, so asking costs a round trip but never leaks what the task left out.
//!
//! The judge is strict, after HiL-Bench's (`ask_human_server.py`), but deterministic and
//! offline ([`screen`], then [`match_phrases`]):
//! - only the question text is read: its options and anything in quotes are left out, so
//!   a list of choices or a quoted literal cannot name a blocker for the asker;
//! - it must be a question: a question word (what, why, how, where, when, which) or a
//!   request verb (define, explain, describe, differentiate, specify, clarify), no stated
//!   assumption to confirm ("I assume …", "is that correct"), and one question mark at most;
//! - it counts for a blocker when it contains one of the blocker's phrases as whole words,
//!   and for none when phrases of two blockers occur (two topics in one message);
//! - at most [`MAX_ANSWERED`] questions of a task get a real answer; every later one is
//!   refused ([`REFUSED`], logged as the operator's answer) and targets no blocker.
//!
//! With `--llm-judge` an LLM names the blocker instead of the phrases; the screen and the
//! cap apply all the same.

use futures::StreamExt;
use tokio::sync::mpsc;

use super::suite::Blocker;
use crate::llm::Client;
use crate::llm::types::{ChatRequest, Delta, Message};
use crate::protocol::{Command, Event, Stamped};

/// What the operator says to a question that targets no blocker.
pub const NO_INFORMATION: &str = "I have no further information on that; decide as you think best.";

/// Questions of one task that get a real answer, as HiL-Bench allows
/// (`MAX_ANSWERED_QUESTIONS_PER_INSTANCE`).
pub const MAX_ANSWERED: usize = 3;

/// What the operator says to every question after [`MAX_ANSWERED`] answers.
pub const REFUSED: &str = "I will not answer more questions on this task (at most 3 are answered); decide as you think best.";

/// Decides which blocker, if any, a question is about.
pub enum Judge {
    /// Whole-word match against each blocker's phrases, after [`screen`]. Offline and
    /// deterministic, so CI and regression runs score the same every time.
    Phrases,
    /// An OpenAI-compatible model names the blocker; falls back to the phrases when the
    /// endpoint fails, so a flaky judge does not change the junior's run.
    Llm(Box<Client>),
}

/// Why a message was not judged against the blockers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// No question word or request verb: a statement, or a bare phrase.
    NotAQuestion,
    /// It states an assumption and asks for confirmation.
    Assumption,
    /// More than one question in one message.
    SeveralQuestions,
}

const QUESTION_WORDS: [&str; 12] = [
    "what",
    "why",
    "how",
    "where",
    "when",
    "which",
    "define",
    "explain",
    "describe",
    "differentiate",
    "specify",
    "clarify",
];

const ASSUMPTIONS: [&str; 6] = [
    "i assume",
    "i'm assuming",
    "i am assuming",
    "is that correct",
    "is that right",
    "am i right",
];

/// `text` without quoted spans ("…", “…”, ‘…’, `…`, and '…' where the quote is not an
/// apostrophe), lowercased.
fn unquoted(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let close = match c {
            '"' => Some('"'),
            '“' => Some('”'),
            '‘' => Some('’'),
            '`' => Some('`'),
            '\'' if i == 0 || !chars[i - 1].is_alphanumeric() => Some('\''),
            _ => None,
        };
        if let Some(close) = close {
            let end = (i + 1..chars.len()).find(|&j| {
                chars[j] == close
                    && (close != '\'' || chars.get(j + 1).is_none_or(|n| !n.is_alphanumeric()))
            });
            if let Some(end) = end {
                out.push(' ');
                i = end + 1;
                continue;
            }
        }
        out.extend(c.to_lowercase());
        i += 1;
    }
    out
}

/// Whether `phrase` (lowercase) occurs in `text` (lowercase) with no letter or digit
/// directly before or after it.
fn has_phrase(text: &str, phrase: &str) -> bool {
    if phrase.is_empty() {
        return false;
    }
    text.match_indices(phrase).any(|(i, m)| {
        let before = text[..i].chars().next_back();
        let after = text[i + m.len()..].chars().next();
        before.is_none_or(|c| !c.is_alphanumeric()) && after.is_none_or(|c| !c.is_alphanumeric())
    })
}

/// The question text a blocker may be matched against (unquoted, lowercased), or why the
/// message is not a question that can target one.
pub fn screen(question: &str) -> Result<String, Rejection> {
    let text = unquoted(question);
    if text.matches('?').count() > 1 {
        return Err(Rejection::SeveralQuestions);
    }
    if ASSUMPTIONS.iter().any(|a| text.contains(a)) {
        return Err(Rejection::Assumption);
    }
    if !QUESTION_WORDS.iter().any(|w| has_phrase(&text, w)) {
        return Err(Rejection::NotAQuestion);
    }
    Ok(text)
}

/// The one blocker whose phrases occur in `text` (as [`screen`] returns it) as whole
/// words; `None` when no blocker's do, or when two blockers' do (two topics at once).
pub fn match_phrases<'a>(blockers: &'a [Blocker], text: &str) -> Option<&'a Blocker> {
    let mut hits = blockers.iter().filter(|b| {
        b.phrases
            .iter()
            .map(|p| p.trim().to_lowercase())
            .any(|p| has_phrase(text, &p))
    });
    let first = hits.next()?;
    hits.next().is_none().then_some(first)
}

impl Judge {
    async fn judge<'a>(&self, blockers: &'a [Blocker], question: &str) -> Option<&'a Blocker> {
        if blockers.is_empty() {
            return None;
        }
        let text = screen(question).ok()?;
        match self {
            Judge::Phrases => match_phrases(blockers, &text),
            Judge::Llm(client) => match ask_llm(client, blockers, question).await {
                Some(id) => blockers.iter().find(|b| b.id == id),
                None => match_phrases(blockers, &text),
            },
        }
    }
}

/// The id the model named; `Some("")` when it named none (a verdict, not a failure);
/// `None` when the endpoint failed, so the caller can fall back to the phrases.
pub(crate) async fn ask_llm(
    client: &Client,
    blockers: &[Blocker],
    question: &str,
) -> Option<String> {
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

/// What the operator did with one session's questions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Served {
    /// Per question asked, the blocker it was judged to target.
    pub matched: Vec<Option<String>>,
    /// Questions refused after [`MAX_ANSWERED`] answers (among `matched`, as `None`).
    pub refused: usize,
}

/// Serves one session: answers every `OperatorAsked` (its options are not read) and
/// returns what it judged.
pub async fn serve(
    judge: std::sync::Arc<Judge>,
    blockers: Vec<Blocker>,
    mut events: mpsc::Receiver<Stamped>,
    commands: mpsc::Sender<Command>,
) -> Served {
    let mut served = Served::default();
    let mut answered = 0usize;
    while let Some(stamped) = events.recv().await {
        let Event::OperatorAsked { question, .. } = &stamped.event else {
            continue;
        };
        if answered >= MAX_ANSWERED {
            served.matched.push(None);
            served.refused += 1;
            let refusal = Command::Answer {
                answer: REFUSED.into(),
                needed: Some(false),
            };
            let _ = commands.send(refusal).await;
            continue;
        }
        let hit = judge.judge(&blockers, question).await;
        served.matched.push(hit.map(|b| b.id.clone()));
        let reply = match hit {
            Some(b) => {
                answered += 1;
                Command::Answer {
                    answer: b.answer.clone(),
                    needed: Some(true),
                }
            }
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
    served
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

    fn judged<'a>(bs: &'a [Blocker], q: &str) -> Option<&'a str> {
        screen(q)
            .ok()
            .and_then(|t| match_phrases(bs, &t))
            .map(|b| b.id.as_str())
    }

    #[test]
    fn phrases_match_whole_words_of_one_topic_only() {
        let bs = [
            blocker("sep", &["Separator", "hyphen"]),
            blocker("case", &["lowercase", "letter case"]),
        ];
        assert_eq!(judged(&bs, "Which SEPARATOR should I use?"), Some("sep"));
        assert_eq!(judged(&bs, "What is the license?"), None);
        // A phrase inside a longer word is not a hit ("case" is not in "lowercased"'s
        // phrase list, and "hyphen" does not occur in "hyphenation" as a word).
        assert_eq!(judged(&bs, "How should hyphenation work?"), None);
        // Two blockers in one message: two topics, no match.
        assert_eq!(
            judged(&bs, "Which separator, and should words be lowercase?"),
            None
        );
    }

    #[test]
    fn the_screen_wants_a_question_of_its_own_words() {
        let bs = [blocker("sep", &["separator", "hyphen"])];
        // A statement naming the topic is not a question.
        assert_eq!(screen("I will use a hyphen."), Err(Rejection::NotAQuestion));
        assert_eq!(screen("Hyphen?"), Err(Rejection::NotAQuestion));
        // A stated assumption to confirm, and two questions at once, are rejected.
        assert_eq!(
            screen("I assume a hyphen joins words. Is that correct?"),
            Err(Rejection::Assumption)
        );
        assert_eq!(
            screen("Which separator? Which case?"),
            Err(Rejection::SeveralQuestions)
        );
        // Quoted text is not read: a quoted literal names nothing.
        assert_eq!(
            judged(&bs, "Which of \"hyphen\" or \"_\" do you want?"),
            None
        );
        assert_eq!(judged(&bs, "Which of 'hyphen' or 'dot' is it?"), None);
        // Apostrophes are not quotes.
        assert_eq!(
            judged(&bs, "What separator don't you want between words?"),
            Some("sep")
        );
    }

    #[tokio::test]
    async fn at_most_three_answers_then_refusals() {
        let (etx, erx) = mpsc::channel(16);
        let (ctx, mut crx) = mpsc::channel(16);
        let task = tokio::spawn(serve(
            std::sync::Arc::new(Judge::Phrases),
            vec![blocker("sep", &["separator"])],
            erx,
            ctx,
        ));
        let questions = [
            "Which separator?",
            "Which licence?",
            "Which separator?",
            "Which separator?",
            "Which separator?",
            "Which licence?",
        ];
        for q in questions {
            etx.send(Stamped {
                t_ms: 0,
                event: Event::OperatorAsked {
                    step: 1,
                    question: q.into(),
                    options: vec!["separator".into()],
                    default_assumption: None,
                    self_initiated: true,
                    topic: None,
                },
            })
            .await
            .expect("send");
        }
        drop(etx);
        let mut answers = Vec::new();
        while let Some(Command::Answer { answer, .. }) = crx.recv().await {
            answers.push(answer);
        }
        let served = task.await.expect("join");
        let sep = Some("sep".to_string());
        assert_eq!(
            served.matched,
            vec![sep.clone(), None, sep.clone(), sep, None, None]
        );
        assert_eq!(served.refused, 2);
        assert_eq!(answers[4], REFUSED);
        assert_eq!(answers[5], REFUSED);
        // The options ("separator") were not read: the licence question matched nothing.
        assert_eq!(answers[1], NO_INFORMATION);
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
                    topic: None,
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
        assert_eq!(
            task.await.expect("join").matched,
            vec![Some("sep".into()), None]
        );
    }
}
