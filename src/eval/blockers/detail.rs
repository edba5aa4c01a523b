//! Which detail of a HumanEval docstring can be taken out, and the stub without it.
//!
//! HiL-Bench (Scale AI, 2026) makes a task need a human by removing a detail the solution
//! depends on. A HumanEval docstring carries two kinds: its **examples** (doctest lines,
//! `f(x) == y` lines, `Input:`/`Output:` blocks) and its **rules** (the prose sentences
//! after the first, which states the task itself and is never removed: without it there
//! is no task, only a guess). The candidates of one problem are its example lines taken
//! together, then each rule sentence of three words or more; [`pick`] chooses one with a
//! seed, so a suite is rebuilt identically from the same file and seed. Whether the
//! chosen detail is *needed* is not decided here: the real lane decides it
//! ([`super::select`]).

use super::super::humaneval::Problem;

/// What kind of detail a candidate removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Every example line of the docstring.
    Examples,
    /// One sentence of the docstring's prose, not its first.
    Rule,
}

/// One removable detail: the pieces of the prompt it occupies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub kind: Kind,
    /// Byte ranges of the prompt, in order, that the detail occupies.
    pieces: Vec<(usize, usize)>,
}

/// A problem with one detail taken out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removed {
    pub kind: Kind,
    /// The prompt without the detail (what the junior's stub shows).
    pub prompt: String,
    /// The detail as the operator says it: the removed text, dedented, one line per line.
    pub text: String,
}

/// The docstring of the entry function: byte range of its contents within the prompt.
fn docstring(p: &Problem) -> Option<(usize, usize)> {
    let def = p.prompt.find(&format!("def {}(", p.entry_point))?;
    let rest = &p.prompt[def..];
    let (open, quote) = ["\"\"\"", "'''"]
        .iter()
        .filter_map(|q| rest.find(q).map(|i| (i, *q)))
        .min_by_key(|(i, _)| *i)?;
    let start = def + open + quote.len();
    let close = p.prompt[start..].find(quote)?;
    Some((start, start + close))
}

/// The lines of `text[range]` as byte ranges of `text` (without their line ends).
fn lines(text: &str, (start, end): (usize, usize)) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = start;
    for line in text[start..end].split('\n') {
        out.push((at, at + line.len()));
        at += line.len() + 1;
    }
    out
}

/// Whether a docstring line shows an example rather than states a rule.
fn is_example_line(line: &str, entry: &str, in_doctest: bool) -> bool {
    let t = line.trim();
    let lower = t.to_lowercase();
    if t.starts_with(">>>") || (in_doctest && !t.is_empty()) {
        return true;
    }
    let header = lower.trim_end_matches(':').trim();
    if matches!(
        header,
        "example" | "examples" | "for example" | "for examples" | "example:" | "e.g."
    ) || (lower.starts_with("example") && t.ends_with(':') && t.len() < 20)
    {
        return true;
    }
    if ["input:", "output:", "explanation:", "input :", "output :"]
        .iter()
        .any(|h| lower.starts_with(h))
    {
        return true;
    }
    // A continuation of a worked example (`       = 2 + 3 + 3 = 8`).
    if t.starts_with('=') {
        return true;
    }
    // A call with literal arguments and a result: `f([1, 2]) == 3`, `f(7) => 34`.
    let call = format!("{entry}(");
    if let Some(i) = t.find(&call) {
        let arg = t[i + call.len()..].trim_start().chars().next();
        let literal = arg.is_some_and(|c| {
            c.is_ascii_digit() || matches!(c, '[' | '(' | '{' | '"' | '\'' | '-' | ')')
        });
        let result = [
            "==",
            "=>",
            "➞",
            "->",
            "should return",
            "should be",
            "returns",
            " = ",
        ]
        .iter()
        .any(|r| t[i..].contains(r));
        return literal && result;
    }
    false
}

/// Sentence ends within one line: `.`, `!` or `?` followed by a space or the line's end.
fn sentence_ends(line: &str) -> Vec<usize> {
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    for (i, &b) in bytes.iter().enumerate() {
        if matches!(b, b'.' | b'!' | b'?') {
            let next = bytes.get(i + 1);
            let prev_digit = i > 0 && bytes[i - 1].is_ascii_digit();
            let next_digit = next.is_some_and(|n| n.is_ascii_digit());
            if (next.is_none() || next == Some(&b' ')) && !(prev_digit && next_digit) {
                out.push(i + 1);
            }
        }
    }
    out
}

/// Every removable detail of `p`, examples first, then the rule sentences in order.
pub fn candidates(p: &Problem) -> Vec<Candidate> {
    let Some(doc) = docstring(p) else {
        return Vec::new();
    };
    let text = &p.prompt;
    let mut examples = Vec::new();
    let mut sentences: Vec<Vec<(usize, usize)>> = Vec::new();
    let mut current: Vec<(usize, usize)> = Vec::new();
    let mut in_doctest = false;
    for (s, e) in lines(text, doc) {
        let line = &text[s..e];
        let t = line.trim();
        if t.is_empty() {
            in_doctest = false;
            if !current.is_empty() {
                sentences.push(std::mem::take(&mut current));
            }
            continue;
        }
        if is_example_line(line, &p.entry_point, in_doctest) {
            in_doctest = t.starts_with(">>>") || (in_doctest && !t.is_empty());
            examples.push((s, e));
            if !current.is_empty() {
                sentences.push(std::mem::take(&mut current));
            }
            continue;
        }
        // Prose: cut the line at its sentence ends.
        let lead = line.len() - line.trim_start().len();
        let body_end = line.trim_end().len();
        let mut from = lead;
        for end in sentence_ends(&line[..body_end]) {
            if end > from {
                current.push((s + from, s + end));
                sentences.push(std::mem::take(&mut current));
            }
            from = end;
            while line.as_bytes().get(from) == Some(&b' ') {
                from += 1;
            }
        }
        if from < body_end {
            current.push((s + from, s + body_end));
        }
    }
    if !current.is_empty() {
        sentences.push(current);
    }
    let mut out = Vec::new();
    if !examples.is_empty() {
        out.push(Candidate {
            kind: Kind::Examples,
            pieces: examples,
        });
    }
    let words = |pieces: &[(usize, usize)]| -> usize {
        pieces
            .iter()
            .map(|&(s, e)| text[s..e].split_whitespace().count())
            .sum()
    };
    out.extend(
        sentences
            .into_iter()
            .skip(1)
            .filter(|s| words(s) >= 3)
            .map(|pieces| Candidate {
                kind: Kind::Rule,
                pieces,
            }),
    );
    out
}

/// The prompt without `c`, and the removed text.
///
/// A line that held only removed text (and spaces) goes entirely; a line that kept other
/// text keeps it. Example lines are dedented by their common indent in the answer.
pub fn remove(p: &Problem, c: &Candidate) -> Removed {
    let text = &p.prompt;
    let mut prompt = String::with_capacity(text.len());
    let mut removed_parts: Vec<&str> = Vec::new();
    let mut at = 0;
    for &(s, e) in &c.pieces {
        prompt.push_str(&text[at..s]);
        removed_parts.push(&text[s..e]);
        at = e;
    }
    prompt.push_str(&text[at..]);
    // Drop lines that the removal left blank but that held text before.
    let before: Vec<&str> = text.split('\n').collect();
    let after: Vec<&str> = prompt.split('\n').collect();
    let cleaned = blank_removed_lines(&before, &after, c);
    let answer = match c.kind {
        Kind::Examples => dedent(&removed_parts),
        Kind::Rule => removed_parts
            .iter()
            .map(|p| p.trim())
            .collect::<Vec<_>>()
            .join(" "),
    };
    Removed {
        kind: c.kind,
        prompt: cleaned,
        text: answer,
    }
}

/// `after` without the lines whose every non-space byte was removed. Removal never
/// deletes a line end, so line i of `after` is line i of `before`.
fn blank_removed_lines(before: &[&str], after: &[&str], c: &Candidate) -> String {
    let mut starts = Vec::with_capacity(before.len());
    let mut at = 0;
    for l in before {
        starts.push(at);
        at += l.len() + 1;
    }
    let touched = |i: usize| {
        let (s, e) = (starts[i], starts[i] + before[i].len());
        c.pieces.iter().any(|&(ps, pe)| ps < e && pe > s)
    };
    let mut out = Vec::with_capacity(after.len());
    for (i, line) in after.iter().enumerate() {
        let dropped = i < before.len()
            && touched(i)
            && !before[i].trim().is_empty()
            && line.trim().is_empty();
        if !dropped {
            out.push(line.trim_end());
        }
    }
    out.join("\n")
}

fn dedent(parts: &[&str]) -> String {
    let indent = parts
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    parts
        .iter()
        .map(|l| l.get(indent..).unwrap_or(l.trim_start()).trim_end())
        .collect::<Vec<_>>()
        .join("\n")
}

/// SplitMix64 (Steele, Lea and Flood 2014): a fixed, portable generator, so a seed means
/// the same suite on every machine and every version of every crate.
pub fn splitmix64(state: u64) -> u64 {
    let mut z = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// FNV-1a of a task id: mixes the id into the seed so tasks draw independently.
pub fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The candidate a seed chooses for a task, the same on every run.
pub fn pick(seed: u64, task_id: &str, candidates: &[Candidate]) -> Option<usize> {
    if candidates.is_empty() {
        return None;
    }
    Some((splitmix64(seed ^ fnv1a(task_id)) % candidates.len() as u64) as usize)
}

#[cfg(test)]
#[path = "detail_tests.rs"]
mod tests;
