//! The forms an example is written in, read line by line from a docstring or a task's text.

use std::collections::BTreeSet;

use super::expr::{
    find_call, find_name_call, free_names, is_expression, split_top_level, top_level,
};
use super::{BUILTINS, Example, Extracted, Form, Function, MAX_EXPR, MAX_TEXT};

/// The examples about `f` in `text`, whose first line is line `first_line` of its file.
pub(super) fn read_text(
    text: &str,
    first_line: usize,
    f: &Function,
    defined: &BTreeSet<String>,
) -> Extracted {
    let text = if text.len() > MAX_TEXT {
        let mut cut = MAX_TEXT;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        &text[..cut]
    } else {
        text
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Extracted::default();
    let mut i = 0;
    while i < lines.len() {
        let line_no = first_line + i;
        let line = lines[i].trim();
        if let Some(call) = line.strip_prefix(">>>") {
            i = doctest(&lines, i, call.trim(), line_no, f, defined, &mut out);
            continue;
        }
        if let Some(input) = labelled(line, "input") {
            i = input_output(&lines, i, input, line_no, f, defined, &mut out);
            continue;
        }
        if let Some(example) = for_output(line, f) {
            accept(example, line_no, lines[i], f, defined, &mut out);
        } else {
            inline(line, line_no, f, defined, &mut out);
        }
        i += 1;
    }
    if out.examples.is_empty() {
        misnamed(&lines, first_line, f, defined, &mut out);
    }
    out
}

/// A docstring whose examples call its function by another name (`grade_equation(…) ==>`
/// in the docstring of `numerical_letter_grade`): read them as calls of the function, but
/// only when the docstring has no example under the right name and the other name is
/// defined nowhere in the file.
fn misnamed(
    lines: &[&str],
    first_line: usize,
    f: &Function,
    defined: &BTreeSet<String>,
    out: &mut Extracted,
) {
    for (i, raw) in lines.iter().enumerate() {
        let line = raw.trim().trim_start_matches(['-', '*']).trim();
        let line = line.strip_prefix("assert ").unwrap_or(line);
        let name: String = line
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() || defined.contains(&name) || BUILTINS.contains(&name.as_str()) {
            continue;
        }
        let Some(renamed) = line.get(name.len()..).filter(|r| r.starts_with('(')) else {
            continue;
        };
        let text = format!("{}{renamed}", f.name);
        let mut found = Extracted::default();
        inline(&text, first_line + i, f, defined, &mut found);
        // Only a call the operator follows is an example; anything else stays prose.
        out.examples.extend(found.examples);
    }
}

/// `Input: …`, case-insensitive, with an optional "Example 1" style label before it.
fn labelled<'a>(line: &'a str, label: &str) -> Option<&'a str> {
    let lower = line.to_ascii_lowercase();
    let at = lower.find(label)?;
    let before = &lower[..at];
    if !before.chars().all(|c| !c.is_alphabetic()) && !before.trim_end().ends_with(':') {
        return None;
    }
    let rest = line.get(at + label.len()..)?.trim_start();
    rest.strip_prefix(':').map(str::trim)
}

fn doctest(
    lines: &[&str],
    start: usize,
    first: &str,
    line_no: usize,
    f: &Function,
    defined: &BTreeSet<String>,
    out: &mut Extracted,
) -> usize {
    let mut call = first.to_string();
    let mut k = start + 1;
    while k < lines.len() {
        match lines[k].trim().strip_prefix("...") {
            Some(more) => {
                call.push(' ');
                call.push_str(more.trim());
                k += 1;
            }
            None => break,
        }
    }
    let mut expected: Vec<&str> = Vec::new();
    while k < lines.len() {
        let l = lines[k].trim();
        if l.is_empty() || l.starts_with(">>>") {
            break;
        }
        expected.push(l);
        k += 1;
    }
    // `>>> f(x)  # why`: the comment is not part of the call.
    if free_names(&call).is_none()
        && let Some(at) = call.find(" #")
    {
        call.truncate(at);
        call = call.trim_end().to_string();
    }
    if !mentions_defined(&call, defined) {
        return k;
    }
    let (call, expected, form) = if expected.is_empty() {
        match split_top_level(&call, "==") {
            Some(_) => (call.clone(), "True".to_string(), Form::DoctestAssert),
            // A call shown for its effect; nothing to compare.
            None => return k,
        }
    } else {
        (call, expected.join("\n"), Form::Doctest)
    };
    match check_call(&call, defined) {
        Ok(()) => out.push(Example {
            function: f.name.clone(),
            call,
            expected,
            form,
            line: line_no,
        }),
        Err(why) => out.unread(&f.name, line_no, lines[start], why),
    }
    k
}

fn input_output(
    lines: &[&str],
    start: usize,
    input: &str,
    line_no: usize,
    f: &Function,
    defined: &BTreeSet<String>,
    out: &mut Extracted,
) -> usize {
    let mut k = start + 1;
    while k < lines.len() && lines[k].trim().is_empty() {
        k += 1;
    }
    let Some(output) = lines.get(k).and_then(|l| labelled(l.trim(), "output")) else {
        out.unread(
            &f.name,
            line_no,
            lines[start],
            "an input with no output line after it",
        );
        return start + 1;
    };
    let Some(args) = arguments(input, f) else {
        out.unread(
            &f.name,
            line_no,
            lines[start],
            "the input is not Python values",
        );
        return k + 1;
    };
    let example = Example {
        function: f.name.clone(),
        call: format!("{}({args})", f.name),
        expected: output.trim_end_matches(['.', ',']).trim().to_string(),
        form: Form::InputOutput,
        line: line_no,
    };
    accept(example, line_no, lines[start], f, defined, out);
    k + 1
}

/// `x = 1, y = [2]` → `x=1, y=[2]` when the names are the function's parameters, else the
/// values in order; a bare value list is kept as it is.
fn arguments(input: &str, f: &Function) -> Option<String> {
    let input = input.trim().trim_end_matches(['.', ',']).trim();
    let parts = split_assignments(input);
    if parts.is_empty() {
        return is_expression(input).then(|| input.to_string());
    }
    let all_params = parts.iter().all(|(n, _)| f.params.contains(n));
    let args: Vec<String> = parts
        .iter()
        .map(|(n, v)| {
            if all_params {
                format!("{n}={v}")
            } else {
                v.clone()
            }
        })
        .collect();
    Some(args.join(", "))
}

/// `a = 1, b = "x"` as (name, value) pairs; empty when the text is not such a list.
fn split_assignments(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() || name.chars().next().is_some_and(|c| c.is_ascii_digit()) {
            return Vec::new();
        }
        let after = rest[name.len()..].trim_start();
        let Some(value_on) = after.strip_prefix('=').filter(|v| !v.starts_with('=')) else {
            return Vec::new();
        };
        let value_on = value_on.trim_start();
        // The value runs to the next top-level ", name =".
        let end = next_assignment(value_on).unwrap_or(value_on.len());
        let value = value_on[..end]
            .trim()
            .trim_end_matches(',')
            .trim()
            .to_string();
        if !is_expression(&value) {
            return Vec::new();
        }
        out.push((name, value));
        if end >= value_on.len() {
            return out;
        }
        rest = value_on[end..].trim_start_matches([',', ' ']);
    }
}

/// Where ", name =" starts at nesting depth 0 in `text`.
fn next_assignment(text: &str) -> Option<usize> {
    top_level(text).into_iter().find_map(|at| {
        let rest = text[at..].strip_prefix(',')?.trim_start();
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let after = rest[name.len()..].trim_start();
        (!name.is_empty() && after.starts_with('=') && !after.starts_with("==")).then_some(at)
    })
}

/// "For x = 3, y = 4 the output should be 7." (HumanEval's prose form).
fn for_output(line: &str, f: &Function) -> Option<Example> {
    let lower = line.to_ascii_lowercase();
    let rest = lower.strip_prefix("for ")?;
    let marker = [
        "the output should be",
        "the result should be",
        "the answer should be",
    ]
    .iter()
    .find_map(|m| rest.find(m).map(|at| (at, m.len())))?;
    let offset = line.len() - rest.len();
    let args_text = line[offset..offset + marker.0]
        .trim()
        .trim_end_matches([',', ' ']);
    // "N = 150, the sum of digits will be 6 the output should be": the assignments before
    // the prose.
    let mut args_text = args_text;
    while split_assignments(args_text).is_empty() && !is_expression(args_text) {
        match args_text.rfind(',') {
            Some(at) => args_text = args_text[..at].trim_end(),
            None => break,
        }
    }
    let expected = line[offset + marker.0 + marker.1..]
        .trim()
        .trim_end_matches(['.', ','])
        .trim();
    let args = arguments(args_text, f)?;
    Some(Example {
        function: f.name.clone(),
        call: format!("{}({args})", f.name),
        expected: expected.to_string(),
        form: Form::ForOutput,
        line: 0,
    })
}

/// The operators that put a value after a call, longest first.
const OPERATORS: &[&str] = &[
    "==>",
    "=>",
    "➞",
    "→",
    "->",
    "==",
    "should return",
    "returns",
    "should be",
    "=",
    "is",
];

fn inline(
    line: &str,
    line_no: usize,
    f: &Function,
    defined: &BTreeSet<String>,
    out: &mut Extracted,
) {
    let line = line.trim_start_matches(['-', '*', '#']).trim();
    let line = line.strip_prefix("assert ").unwrap_or(line);
    let Some((call, rest)) = find_call(line, defined) else {
        return;
    };
    // "f(x)   # returns 3", "f(x) # => 'Yes'": the value in a comment.
    let rest = rest.trim();
    let rest = rest.strip_prefix('#').map_or(rest, str::trim_start);
    let Some(op) = OPERATORS.iter().find(|op| {
        rest.strip_prefix(**op)
            .is_some_and(|after| !op.chars().all(char::is_alphabetic) || after.starts_with(' '))
    }) else {
        return;
    };
    let mut expected = rest[op.len()..]
        .trim()
        .trim_end_matches(['.', ',', ';'])
        .trim()
        .to_string();
    // "add(2, 3) -> 2 + 3 = 5": the value after the last "=".
    if !is_expression(&expected)
        && let Some(at) = expected.rfind('=')
    {
        expected = expected[at + 1..].trim().to_string();
    }
    // "f(x) == 3 # three", "f(x) => 'No' (why)": a comment after the value.
    for mark in [" #", " ("] {
        if !is_expression(&expected)
            && let Some(at) = expected.find(mark)
        {
            expected = expected[..at].trim().to_string();
        }
    }
    let example = Example {
        function: f.name.clone(),
        call: call.to_string(),
        expected,
        form: Form::Inline,
        line: line_no,
    };
    accept(example, line_no, line, f, defined, out);
}

/// Keeps an example whose call and value both read as Python and use only known names.
fn accept(
    mut example: Example,
    line_no: usize,
    text: &str,
    f: &Function,
    defined: &BTreeSet<String>,
    out: &mut Extracted,
) {
    example.line = line_no;
    if let Err(why) = check_call(&example.call, defined) {
        out.unread(&f.name, line_no, text, why);
        return;
    }
    // "f(x) => true": the lowercase spelling of other languages, and a trailing comment.
    example.expected = match example.expected.as_str() {
        "true" => "True".to_string(),
        "false" => "False".to_string(),
        _ => example.expected,
    };
    if free_names(&example.expected).is_none()
        && let Some(at) = example.expected.find(" #")
    {
        example.expected = example.expected[..at].trim_end().to_string();
    }
    if example.expected.is_empty() || example.expected.len() > MAX_EXPR {
        out.unread(&f.name, line_no, text, "no value after the call");
        return;
    }
    match free_names(&example.expected) {
        None => out.unread(&f.name, line_no, text, "the result is not a Python value"),
        Some(names) if names.iter().any(|n| !known(n, defined)) => {
            out.unread(
                &f.name,
                line_no,
                text,
                "the result uses a name it does not define",
            );
        }
        Some(_) => out.push(example),
    }
}

fn check_call(call: &str, defined: &BTreeSet<String>) -> Result<(), &'static str> {
    if call.len() > MAX_EXPR {
        return Err("the call is too long to be an example");
    }
    match free_names(call) {
        None => Err("the call is not a Python expression"),
        Some(names) if names.iter().any(|n| !known(n, defined)) => {
            Err("the call uses a name the file does not define")
        }
        Some(names) if !names.iter().any(|n| defined.contains(n)) => {
            Err("the call calls none of the file's functions")
        }
        Some(_) => Ok(()),
    }
}

fn known(name: &str, defined: &BTreeSet<String>) -> bool {
    defined.contains(name) || BUILTINS.contains(&name)
}

fn mentions_defined(text: &str, defined: &BTreeSet<String>) -> bool {
    defined.iter().any(|d| find_name_call(text, d).is_some())
}
