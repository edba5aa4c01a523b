//! The small contract every component follows for keys: consume or pass on, and say
//! which keys you take so the status bar and help overlay are generated, never stale.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::intent::Action;

/// One key (or key group) and what it does, as shown in hints and help.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyHint {
    pub keys: &'static str,
    pub what: &'static str,
}

/// Shorthand for building hint lists.
pub const fn hint(keys: &'static str, what: &'static str) -> KeyHint {
    KeyHint { keys, what }
}

/// What a component did with a key.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyOutcome {
    /// The component handled the key (possibly asking for actions); nobody else sees it.
    Consumed(Vec<Action>),
    /// Not this component's key; the next one in line gets it.
    Ignored,
}

impl KeyOutcome {
    /// Consumed with no action.
    pub fn done() -> Self {
        KeyOutcome::Consumed(Vec::new())
    }
}

/// True for a plain press (or repeat) of a character key with at most Shift held.
pub fn is_char(key: &KeyEvent, c: char) -> bool {
    key.code == KeyCode::Char(c)
        && !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
}

/// True for Ctrl+`c`.
pub fn is_ctrl(key: &KeyEvent, c: char) -> bool {
    key.code == KeyCode::Char(c) && key.modifiers.contains(KeyModifiers::CONTROL)
}

/// Terminals with the kitty protocol also report releases; only presses and repeats act.
pub fn is_press(key: &KeyEvent) -> bool {
    key.kind != KeyEventKind::Release
}
