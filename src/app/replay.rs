//! The task that feeds a replay to the TUI: the log's events paced by their `t_ms`,
//! steered by the [`ReplayControl`]s the UI sends (pause, one event, next step, previous
//! step). It owns the position in the log; the UI owns whether it is paused.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc::{self, Receiver, Sender};

use crate::analysis::replay::Rescoring;
use crate::protocol::{Event, Stamped};
use crate::tui::{Counterfactual, CounterfactualPoint, ReplayControl};

/// The longest pause between two replayed events: an operator who thought for ten minutes
/// should not make the replay wait ten minutes.
const MAX_GAP: Duration = Duration::from_secs(2);

/// Feeds `events` to the UI, paced by `t_ms` divided by `speed` (0 or less: as fast as the
/// UI takes them), steered by `controls`. Returns when the UI is gone.
pub async fn feed(
    events: Vec<Stamped>,
    tx: Sender<Stamped>,
    mut controls: Receiver<ReplayControl>,
    speed: f64,
) {
    let mut pos = 0usize;
    let mut paused = false;
    loop {
        if paused || pos >= events.len() {
            let Some(control) = controls.recv().await else {
                return;
            };
            match apply(control, &events, &mut pos, &mut paused, &tx).await {
                Ok(()) => continue,
                Err(()) => return,
            }
        }
        let gap = match pos.checked_sub(1).and_then(|p| events.get(p)) {
            Some(prev) if speed > 0.0 && speed.is_finite() => {
                let ms = events[pos].t_ms.saturating_sub(prev.t_ms) as f64 / speed;
                Duration::from_secs_f64(ms / 1000.0).min(MAX_GAP)
            }
            _ => Duration::ZERO,
        };
        tokio::select! {
            _ = tokio::time::sleep(gap) => {
                if tx.send(events[pos].clone()).await.is_err() {
                    return;
                }
                pos += 1;
            }
            control = controls.recv() => {
                let Some(control) = control else { return };
                if apply(control, &events, &mut pos, &mut paused, &tx).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Carries out one control; `Err` when the UI is gone.
async fn apply(
    control: ReplayControl,
    events: &[Stamped],
    pos: &mut usize,
    paused: &mut bool,
    tx: &Sender<Stamped>,
) -> Result<(), ()> {
    let is_step_end = |i: usize| matches!(events[i].event, Event::StepEnded { .. });
    match control {
        ReplayControl::Pause => *paused = true,
        ReplayControl::Resume => *paused = false,
        ReplayControl::StepEvent => {
            if let Some(e) = events.get(*pos) {
                tx.send(e.clone()).await.map_err(|_| ())?;
                *pos += 1;
            }
        }
        ReplayControl::NextStep => {
            while let Some(e) = events.get(*pos) {
                tx.send(e.clone()).await.map_err(|_| ())?;
                *pos += 1;
                if is_step_end(*pos - 1) {
                    break;
                }
            }
        }
        ReplayControl::PreviousStep => {
            // The step end shown last, then the one before it: that is where to go.
            let shown = (0..*pos).rev().find(|&i| is_step_end(i));
            let target = shown.and_then(|s| (0..s).rev().find(|&i| is_step_end(i)));
            let start = events[..target.map_or(0, |t| t + 1)]
                .iter()
                .rposition(|e| matches!(e.event, Event::SessionStarted { .. }))
                .unwrap_or(0);
            let end = target.map_or(start + 1, |t| t + 1).min(events.len());
            for e in &events[start..end] {
                tx.send(e.clone()).await.map_err(|_| ())?;
            }
            // Paused or playing stays as it was: the UI owns that state (its `p` key).
            *pos = end;
        }
    }
    Ok(())
}

/// Runs the TUI over a log: the feeder on its own task, the UI until the operator leaves
/// (or a signal: the same [`super::stop::Stop`] as a session's, a second one exits at once).
pub async fn run_tui(
    log: PathBuf,
    events: Vec<Stamped>,
    counterfactual: Option<Counterfactual>,
    speed: f64,
) -> Result<crate::tui::ExitReason, super::interactive::InteractiveError> {
    let stop = super::stop::Stop::on_signals_then(crate::tui::terminal::restore)
        .map_err(super::interactive::InteractiveError::Signals)?;
    let (event_tx, event_rx) = mpsc::channel(1024);
    let (control_tx, control_rx) = mpsc::channel(64);
    // Nothing in a replay acts on a session; the UI's commands are drained and dropped.
    let (command_tx, mut command_rx) = mpsc::channel(64);
    let feeder = tokio::spawn(feed(events, event_tx, control_rx, speed));
    let drain = tokio::spawn(async move { while command_rx.recv().await.is_some() {} });
    let opts = crate::tui::UiOptions {
        banner: Some(format!("replay: {}", log.display())),
        log_path: Some(log.display().to_string()),
        replay: Some(control_tx),
        counterfactual,
    };
    let result = crate::tui::run(event_rx, command_tx, opts, stop.shutdown()).await;
    feeder.abort();
    drain.abort();
    Ok(result?)
}

/// The re-scored trace as the TUI's second belief line.
pub fn counterfactual(label: impl Into<String>, rescoring: &Rescoring) -> Counterfactual {
    Counterfactual {
        label: label.into(),
        points: rescoring
            .points
            .iter()
            .map(|r| CounterfactualPoint {
                tick: r.tick,
                belief: r.belief,
                threshold: r.threshold,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Actor;

    fn log() -> Vec<Stamped> {
        let started = Event::SessionStarted {
            session_id: "s".into(),
            task: "t".into(),
            repo: "r".into(),
            head: None,
            config_digest: "d".into(),
            junior_model: "j".into(),
            senior_model: "s".into(),
            policy: "constant".into(),
            shadow: false,
            token_budget: 100,
            prior: 0.7,
        };
        let end = |step| Event::StepEnded {
            step,
            actor: Actor::Junior,
            tick: u64::from(step),
            tool: None,
            ok: true,
            belief: 0.7,
            terms: vec![],
            checkpoint: None,
        };
        let warn = || Event::Warning {
            kind: "k".into(),
            message: "m".into(),
        };
        [started, warn(), end(1), warn(), end(2), warn(), end(3)]
            .into_iter()
            .enumerate()
            .map(|(i, event)| Stamped {
                t_ms: 1000 * i as u64,
                event,
            })
            .collect()
    }

    async fn next_kinds(rx: &mut Receiver<Stamped>, n: usize) -> Vec<&'static str> {
        let mut out = Vec::new();
        for _ in 0..n {
            match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
                Ok(Some(s)) => out.push(s.event.kind()),
                _ => break,
            }
        }
        out
    }

    #[tokio::test]
    async fn the_feeder_paces_pauses_steps_and_seeks_back() {
        let (tx, mut rx) = mpsc::channel(64);
        let (ctl, controls) = mpsc::channel(8);
        // 1000 ms between logged events at speed 2: 500 ms apart, ample time to pause.
        let task = tokio::spawn(feed(log(), tx, controls, 2.0));
        // Paced: the first event at once, the next after 1000 ms / speed 2.
        assert_eq!(next_kinds(&mut rx, 1).await, vec!["session_started"]);
        let t0 = tokio::time::Instant::now();
        assert_eq!(next_kinds(&mut rx, 1).await, vec!["warning"]);
        assert!(
            t0.elapsed() >= Duration::from_millis(450),
            "{:?}",
            t0.elapsed()
        );
        ctl.send(ReplayControl::Pause).await.expect("send");
        ctl.send(ReplayControl::NextStep).await.expect("send");
        assert_eq!(next_kinds(&mut rx, 1).await, vec!["step_ended"]);
        ctl.send(ReplayControl::StepEvent).await.expect("send");
        ctl.send(ReplayControl::NextStep).await.expect("send");
        assert_eq!(next_kinds(&mut rx, 2).await, vec!["warning", "step_ended"]);
        // Paused: nothing more comes on its own.
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert!(rx.try_recv().is_err());
        // Back to the end of step 1: the log is re-sent from its start up to there.
        ctl.send(ReplayControl::PreviousStep).await.expect("send");
        assert_eq!(
            next_kinds(&mut rx, 3).await,
            vec!["session_started", "warning", "step_ended"]
        );
        ctl.send(ReplayControl::Resume).await.expect("send");
        assert_eq!(
            next_kinds(&mut rx, 4).await,
            vec!["warning", "step_ended", "warning", "step_ended"]
        );
        drop(rx);
        drop(ctl);
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("the feeder ends when the UI is gone")
            .expect("no panic");
    }
}
