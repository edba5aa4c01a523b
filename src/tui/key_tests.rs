//! Every key: what it does to the state and which intents it emits.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use pretty_assertions::assert_eq;

use super::fixture;
use super::intent::{Action, ExitReason, ReplayControl, UiOptions};
use super::state::AppState;
use crate::protocol::{Actor, Command, Event, Outcome, Stamped};

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ch(c: char) -> KeyEvent {
    key(KeyCode::Char(c))
}

fn feed(state: &mut AppState, events: &[Stamped]) {
    for e in events {
        state.apply(e);
    }
}

/// A live state in the middle of step 1 (no question pending).
fn running() -> AppState {
    let mut s = AppState::new(&UiOptions::default());
    let script = fixture::until_question();
    feed(&mut s, &script.events[..12]);
    assert!(s.running());
    assert!(s.question.is_none());
    s
}

fn replaying() -> AppState {
    let (tx, _rx) = tokio::sync::mpsc::channel(4);
    let mut s = AppState::new(&UiOptions {
        replay: Some(tx),
        ..UiOptions::default()
    });
    feed(&mut s, &fixture::until_question().events);
    s
}

fn agent(c: Command) -> Vec<Action> {
    vec![Action::Agent(c)]
}

#[test]
fn p_pauses_and_resumes_the_session() {
    let mut s = running();
    assert_eq!(s.handle_key(ch('p')), agent(Command::Pause));
    assert!(!s.paused, "the screen waits for the session to say so");
    ack(&mut s, true, false);
    assert!(s.paused);
    assert_eq!(s.handle_key(ch('p')), agent(Command::Resume));
    ack(&mut s, false, false);
    assert!(!s.paused);
}

/// The session's answer to a pause, resume or shadow command.
fn ack(s: &mut AppState, paused: bool, shadow: bool) {
    s.apply(&Stamped {
        t_ms: 0,
        event: Event::ControlChanged { paused, shadow },
    });
}

#[test]
fn session_keys_do_nothing_before_a_session_starts() {
    let mut s = AppState::new(&UiOptions::default());
    for c in ['p', 'e', 's'] {
        assert_eq!(s.handle_key(ch(c)), vec![], "key {c}");
    }
    assert!(!s.paused && !s.shadow);
}

#[test]
fn e_forces_an_escalation() {
    let mut s = running();
    assert_eq!(s.handle_key(ch('e')), agent(Command::ForceEscalate));
    assert_eq!(s.notice.as_deref(), Some("escalation requested"));
}

#[test]
fn s_toggles_shadow_mode() {
    let mut s = running();
    assert_eq!(
        s.handle_key(ch('s')),
        agent(Command::SetShadow { on: true })
    );
    assert!(!s.shadow, "the screen waits for the session to say so");
    ack(&mut s, false, true);
    assert!(s.shadow);
    assert_eq!(
        s.handle_key(ch('s')),
        agent(Command::SetShadow { on: false })
    );
    ack(&mut s, false, false);
    assert!(!s.shadow);
}

#[test]
fn question_mark_opens_help_which_swallows_keys_until_closed() {
    let mut s = running();
    assert_eq!(s.handle_key(ch('?')), vec![]);
    assert!(s.show_help);
    assert_eq!(s.handle_key(ch('e')), vec![], "keys do nothing under help");
    assert_eq!(s.handle_key(key(KeyCode::Esc)), vec![]);
    assert!(!s.show_help);
    s.handle_key(ch('?'));
    s.handle_key(ch('?'));
    assert!(!s.show_help);
}

#[test]
fn q_asks_before_stopping_a_running_session() {
    let mut s = running();
    assert_eq!(s.handle_key(ch('q')), vec![]);
    assert!(s.confirm_quit);
    assert_eq!(s.handle_key(ch('n')), vec![]);
    assert!(!s.confirm_quit);
    s.handle_key(ch('q'));
    assert_eq!(
        s.handle_key(ch('y')),
        vec![Action::Agent(Command::Quit), Action::Exit(ExitReason::Quit)]
    );
}

#[test]
fn q_leaves_at_once_after_the_session_ended() {
    let mut s = AppState::new(&UiOptions::default());
    feed(&mut s, &fixture::full().events);
    assert_eq!(s.ended, Some(Outcome::Success));
    assert_eq!(
        s.handle_key(ch('q')),
        vec![Action::Exit(ExitReason::SessionEnded(Outcome::Success))]
    );
}

#[test]
fn ctrl_c_stops_the_session_without_asking() {
    let mut s = running();
    assert_eq!(
        s.handle_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
        vec![Action::Agent(Command::Quit), Action::Exit(ExitReason::Quit)]
    );
}

#[test]
fn key_releases_are_ignored() {
    let mut s = running();
    let mut release = ch('p');
    release.kind = KeyEventKind::Release;
    assert_eq!(s.handle_key(release), vec![]);
    assert!(!s.paused);
}

#[test]
fn transcript_keys_tint_fold_and_scroll() {
    let mut s = running();
    assert!(s.transcript.tint);
    s.handle_key(ch('t'));
    assert!(!s.transcript.tint);
    assert!(!s.transcript.expand_tools);
    s.handle_key(ch('o'));
    assert!(s.transcript.expand_tools);
    s.handle_key(key(KeyCode::Up));
    s.handle_key(key(KeyCode::PageUp));
    assert_eq!(s.transcript.scroll_back, 11);
    s.handle_key(key(KeyCode::Down));
    assert_eq!(s.transcript.scroll_back, 10);
    s.handle_key(key(KeyCode::PageDown));
    assert_eq!(s.transcript.scroll_back, 0);
    s.handle_key(key(KeyCode::PageUp));
    s.handle_key(key(KeyCode::End));
    assert_eq!(s.transcript.scroll_back, 0);
}

#[test]
fn the_question_modal_takes_keys_and_sends_the_answer() {
    let mut s = AppState::new(&UiOptions::default());
    feed(&mut s, &fixture::until_question().events);
    assert!(s.question.is_some());
    // Global keys are the modal's while it is up.
    assert_eq!(s.handle_key(ch('e')), vec![]);
    assert_eq!(s.handle_key(ch('p')), vec![]);
    assert!(!s.paused);
    s.handle_key(ch('2'));
    assert_eq!(
        s.handle_key(key(KeyCode::Enter)),
        agent(Command::Answer {
            answer: "No, ISO only".into(),
            needed: Some(true)
        })
    );
    assert!(s.question.is_none(), "the modal closes once answered");
}

#[test]
fn esc_hides_the_question_and_a_brings_it_back() {
    let mut s = AppState::new(&UiOptions::default());
    feed(&mut s, &fixture::until_question().events);
    s.handle_key(key(KeyCode::Esc));
    assert!(s.question.as_ref().is_some_and(|q| q.hidden));
    assert!(s.hints().iter().any(|h| h.keys == "a"));
    assert_eq!(
        s.handle_key(ch('e')),
        agent(Command::ForceEscalate),
        "global keys work again"
    );
    s.handle_key(ch('a'));
    assert!(s.question.as_ref().is_some_and(|q| !q.hidden));
    assert_eq!(
        s.handle_key(KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL)),
        agent(Command::DeferToSenior)
    );
}

#[test]
fn an_answer_event_closes_the_modal_even_if_answered_elsewhere() {
    let mut s = AppState::new(&UiOptions::default());
    let script = fixture::full();
    let asked = script
        .events
        .iter()
        .position(|e| matches!(e.event, Event::OperatorAnswered { .. }))
        .expect("answer in the fixture");
    feed(&mut s, &script.events[..=asked]);
    assert!(s.question.is_none());
}

#[test]
fn the_approval_prompt_sends_yes_or_no_and_enter_does_not_approve() {
    let mut s = AppState::new(&UiOptions {
        ..UiOptions::default()
    });
    let script = fixture::until_question();
    let called = script
        .events
        .iter()
        .position(
            |e| matches!(&e.event, Event::ApprovalRequested { name, .. } if name == "apply_patch"),
        )
        .expect("patch approval request");
    let read = script
        .events
        .iter()
        .position(|e| matches!(&e.event, Event::ToolCalled { name, .. } if name == "read_file"))
        .expect("read call");
    feed(&mut s, &script.events[..=read]);
    assert!(s.approval.is_none(), "reading needs no approval on-write");
    feed(&mut s, &script.events[read + 1..=called]);
    assert!(s.approval.is_some());
    assert_eq!(s.handle_key(ch('x')), vec![], "other keys pass on");
    assert!(s.approval.is_some());
    assert_eq!(
        s.handle_key(ch('n')),
        agent(Command::Approve {
            call_id: "call_2".into(),
            approved: false
        })
    );
    assert!(s.approval.is_none());
    // Approving: re-open by feeding the call again. Enter is not a yes (review finding M2):
    // a key typed ahead or meant for something else approves nothing.
    s.apply(&script.events[called]);
    assert_eq!(s.handle_key(key(KeyCode::Enter)), vec![]);
    assert!(s.approval.is_some(), "Enter leaves the call waiting");
    assert_eq!(s.handle_key(ch('j')), vec![], "scrolling is no answer");
    assert!(s.approval.is_some());
    assert_eq!(
        s.handle_key(ch('y')),
        agent(Command::Approve {
            call_id: "call_2".into(),
            approved: true
        })
    );
}

#[test]
fn replay_keys_steer_the_feeder_and_never_the_session() {
    let mut s = replaying();
    assert!(
        s.question.is_none(),
        "a replayed question is not asked again"
    );
    let replay = |c| vec![Action::Replay(c)];
    assert_eq!(s.handle_key(ch('p')), replay(ReplayControl::Pause));
    assert!(s.paused);
    assert_eq!(s.handle_key(ch('p')), replay(ReplayControl::Resume));
    assert_eq!(s.handle_key(ch('n')), replay(ReplayControl::StepEvent));
    assert_eq!(
        s.handle_key(key(KeyCode::Right)),
        replay(ReplayControl::StepEvent)
    );
    assert_eq!(s.handle_key(ch(']')), replay(ReplayControl::NextStep));
    assert_eq!(s.handle_key(ch('[')), replay(ReplayControl::PreviousStep));
    assert_eq!(s.handle_key(ch('e')), vec![]);
    assert_eq!(s.handle_key(ch('s')), vec![]);
    assert_eq!(s.handle_key(ch('q')), vec![Action::Exit(ExitReason::Quit)]);
}

#[test]
fn a_new_session_start_resets_the_session_but_not_the_view() {
    let mut s = replaying();
    s.handle_key(ch('t'));
    s.handle_key(ch('p'));
    assert!(!s.steps.rows.is_empty());
    let start = fixture::until_question().events[0].clone();
    s.apply(&start);
    assert!(s.steps.rows.is_empty());
    assert_eq!(s.competence.current, None);
    assert_eq!(s.ledger.escalations(), 0);
    assert_eq!(s.transcript.len(), 1, "only the session line");
    assert!(!s.transcript.tint, "view toggles survive a seek");
    assert!(s.paused, "a paused replay stays paused across a seek");
}

#[test]
fn events_fill_every_panel() {
    let mut s = AppState::new(&UiOptions::default());
    feed(&mut s, &fixture::full().events);
    assert_eq!(s.steps.rows.len(), 3);
    assert_eq!(s.steps.rows[2].actor, Actor::Senior);
    assert!(s.steps.rows[1].escalated && s.steps.rows[2].escalated);
    assert_eq!(s.ledger.escalations_operator, 1);
    assert_eq!(s.ledger.escalations_senior, 1);
    assert_eq!(s.ledger.route_now, None, "the senior returned");
    assert!((s.ledger.senior.usd - 0.0061).abs() < 1e-12);
    assert!((s.ledger.operator.usd - 0.0033).abs() < 1e-12);
    assert_eq!(s.ledger.models.len(), 2);
    let (b, t) = s.competence.current.expect("belief");
    let last_b = fixture::full().belief;
    assert!((b - last_b).abs() < 1e-12, "{b} vs {last_b}");
    assert!(t > 0.4);
    assert_eq!(s.ledger.elapsed_ms, fixture::full().t_ms);
}

#[test]
fn the_clock_moves_only_while_a_live_session_runs() {
    let mut s = running();
    let before = s.ledger.elapsed_ms;
    s.set_clock(before + 5000);
    assert_eq!(s.ledger.elapsed_ms, before + 5000);
    s.set_clock(10);
    assert_eq!(s.ledger.elapsed_ms, before + 5000, "never backwards");
    let mut r = replaying();
    let at = r.ledger.elapsed_ms;
    r.set_clock(at + 99_000);
    assert_eq!(r.ledger.elapsed_ms, at);
}
