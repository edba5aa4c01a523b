//! The examples a task states about its own functions: evidence the harness can run before
//! any grading check, because the task's author wrote them where the junior sees them.
//!
//! Read from the docstrings of a Python file's top-level functions (and from the task's
//! text): doctest blocks (`>>> f(x)` and the lines after it), the prose forms people write
//! (`f(x) ==> y`, `f(x) -> y`, `f(x) == y`, `f(x) should return y`, `f(x) = y`, `f(x) ➞ y`),
//! "For x = … the output should be …", and `Input:` / `Output:` pairs. An example is a call
//! of a function the file defines and the value it should give; a call that uses a name the
//! file does not define (`fib4(n) -> fib4(n-1) + …` is a recurrence, not an example) or a
//! result that is not a Python value is *unread*, and reported with its line and why, so a
//! reader can see what the parser missed.
//!
//! Pure: tree-sitter says whether a piece of text is one Python expression and which names
//! it uses; running the examples is the agent's ([`crate::agent::examples`]).

use std::collections::BTreeSet;

use tree_sitter::{Node, Parser};

/// How an example was written, for the log and the parser's coverage table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Form {
    /// `>>> f(x)` followed by the expected output.
    Doctest,
    /// `>>> f(x) == y` with no output line: the expression itself must hold.
    DoctestAssert,
    /// `f(x) ==> y` and the other operators on one line.
    Inline,
    /// `Input: …` then `Output: …`.
    InputOutput,
    /// "For x = …, the output should be …".
    ForOutput,
}

/// One example: `call` should evaluate to `expected`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Example {
    /// The function whose docstring (or the task) states it.
    pub function: String,
    /// A Python expression calling a function of the file.
    pub call: String,
    /// A Python expression, or (doctest) the text the value's `repr` should print.
    pub expected: String,
    pub form: Form,
    /// 1-based line in the file (or the task text) where it was read.
    pub line: usize,
}

/// A line that looked like an example but could not be read as one.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Unread {
    pub function: String,
    pub line: usize,
    pub text: String,
    pub why: &'static str,
}

/// What was read from one file or text.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Extracted {
    pub examples: Vec<Example>,
    pub unread: Vec<Unread>,
}

impl Extracted {
    fn push(&mut self, example: Example) {
        let seen = self
            .examples
            .iter()
            .any(|e| e.call == example.call && e.expected == example.expected);
        if !seen {
            self.examples.push(example);
        }
    }

    fn unread(&mut self, function: &str, line: usize, text: &str, why: &'static str) {
        self.unread.push(Unread {
            function: function.to_string(),
            line,
            text: text.trim().chars().take(200).collect(),
            why,
        });
    }

    /// Appends another extraction, keeping the first of two equal examples.
    pub fn extend(&mut self, other: Extracted) {
        for e in other.examples {
            self.push(e);
        }
        self.unread.extend(other.unread);
    }
}

/// Longest docstring or task text read; examples live in the first lines, and a file the
/// model padded to megabytes must not cost the harness.
const MAX_TEXT: usize = 64 * 1024;
/// Longest call or expected value kept; longer ones are data dumps, not examples.
const MAX_EXPR: usize = 2_000;

/// Names an example may use besides the file's own functions.
const BUILTINS: &[&str] = &[
    "abs", "all", "any", "bool", "chr", "dict", "float", "int", "len", "list", "map", "max", "min",
    "ord", "range", "reversed", "round", "set", "sorted", "str", "sum", "tuple", "zip", "inf",
    "nan", "math",
];

/// A top-level Python function: its name, parameters and docstring (text, 1-based line of
/// the docstring's first line).
struct Function {
    name: String,
    params: Vec<String>,
    doc: Option<(String, usize)>,
}

/// The examples in the docstrings of `source`'s top-level functions; `only`, when given,
/// limits the docstrings read to those functions (calls may still use any of the file's).
pub fn python_file(source: &str, only: Option<&[String]>) -> Extracted {
    let functions = functions(source);
    let defined: BTreeSet<String> = functions.iter().map(|f| f.name.clone()).collect();
    let mut out = Extracted::default();
    for f in &functions {
        if only.is_some_and(|names| !names.contains(&f.name)) {
            continue;
        }
        if let Some((doc, line)) = &f.doc {
            out.extend(read_text(doc, *line, f, &defined));
        }
    }
    out
}

/// The examples in free text (a task statement) about the functions `source` defines.
pub fn python_task_text(text: &str, source: &str) -> Extracted {
    // Prose puts several examples in one sentence: one clause a line.
    let text = text
        .replace("; ", "\n")
        .replace(" and ", "\n")
        .replace(". ", "\n");
    let text = text.as_str();
    let functions = functions(source);
    let defined: BTreeSet<String> = functions.iter().map(|f| f.name.clone()).collect();
    let mut out = Extracted::default();
    for f in &functions {
        let mut found = read_text(text, 1, f, &defined);
        // Text about another function is read under that function.
        found
            .examples
            .retain(|e| calls_first(&e.call).as_deref() == Some(f.name.as_str()));
        found.unread.clear();
        out.extend(found);
    }
    out
}

/// Every example the harness runs for one file: the docstrings of `source` (the file as
/// the task gave it) and the task's text about its functions. The session and `eval
/// examples` both read examples through this one function.
pub fn for_file(task: &str, source: &str) -> Extracted {
    let mut found = python_file(source, None);
    found.extend(python_task_text(task, source));
    found
}

/// The name called at the start of `call`.
fn calls_first(call: &str) -> Option<String> {
    let name: String = call
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

fn functions(source: &str) -> Vec<Function> {
    let mut parser = Parser::new();
    if parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .is_err()
    {
        return Vec::new();
    }
    let Some(tree) = parser.parse(source, None) else {
        return Vec::new();
    };
    let root = tree.root_node();
    let mut cursor = root.walk();
    let mut out = Vec::new();
    for node in root.named_children(&mut cursor) {
        let node = if node.kind() == "decorated_definition" {
            match node.child_by_field_name("definition") {
                Some(d) => d,
                None => continue,
            }
        } else {
            node
        };
        if node.kind() != "function_definition" {
            continue;
        }
        let Some(name) = node
            .child_by_field_name("name")
            .and_then(|n| source.get(n.byte_range()))
        else {
            continue;
        };
        out.push(Function {
            name: name.to_string(),
            params: params(node, source),
            doc: docstring(node, source),
        });
    }
    out
}

fn params(def: Node, source: &str) -> Vec<String> {
    let Some(list) = def.child_by_field_name("parameters") else {
        return Vec::new();
    };
    let mut cursor = list.walk();
    list.named_children(&mut cursor)
        .filter_map(|p| {
            let name = match p.kind() {
                "identifier" => Some(p),
                "typed_parameter" => p.named_child(0),
                "default_parameter" | "typed_default_parameter" => p.child_by_field_name("name"),
                _ => None,
            }?;
            source.get(name.byte_range()).map(str::to_string)
        })
        .filter(|n| n != "self")
        .collect()
}

fn docstring(def: Node, source: &str) -> Option<(String, usize)> {
    let body = def.child_by_field_name("body")?;
    let first = body.named_child(0)?;
    if first.kind() != "expression_statement" {
        return None;
    }
    let string = first.named_child(0).filter(|s| s.kind() == "string")?;
    let raw = source.get(string.byte_range())?;
    let text = strip_quotes(raw)?;
    let mut text = text.to_string();
    if text.len() > MAX_TEXT {
        let mut cut = MAX_TEXT;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    Some((text, string.start_position().row + 1))
}

/// The body of a Python string literal: prefixes (`r`, `u`, `b`, `f`) and quotes removed.
fn strip_quotes(raw: &str) -> Option<&str> {
    let body = raw.trim_start_matches(|c: char| "rRuUbBfF".contains(c));
    for q in ["\"\"\"", "'''", "\"", "'"] {
        if body.len() >= 2 * q.len() && body.starts_with(q) && body.ends_with(q) {
            return body.get(q.len()..body.len() - q.len());
        }
    }
    None
}

/// The examples about `f` in `text`, whose first line is line `first_line` of its file.
fn read_text(text: &str, first_line: usize, f: &Function, defined: &BTreeSet<String>) -> Extracted {
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

/// The byte offsets of `text`'s characters outside quotes and brackets (a bracket itself
/// is inside).
fn top_level(text: &str) -> Vec<usize> {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut out = Vec::new();
    for (at, c) in text.char_indices() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            _ if depth == 0 => out.push(at),
            _ => {}
        }
    }
    out
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

/// The first `name(…)` in `line` with `name` a defined function, and the text after it.
fn find_call<'a>(line: &'a str, defined: &BTreeSet<String>) -> Option<(&'a str, &'a str)> {
    let start = defined
        .iter()
        .filter_map(|d| find_name_call(line, d))
        .min()?;
    let open = start + line[start..].find('(')?;
    let end = matching_paren(line, open)?;
    Some((&line[start..=end], &line[end + 1..]))
}

/// Where `name(` (or `name (`) starts in `text` as a whole word.
fn find_name_call(text: &str, name: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = text[from..].find(name).map(|i| i + from) {
        let before_ok = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '.'));
        let after = text[at + name.len()..].trim_start_matches(' ');
        if before_ok && after.starts_with('(') {
            return Some(at);
        }
        from = at + name.len();
    }
    None
}

fn matching_paren(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (at, c) in text[open..].char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + at);
                }
            }
            _ => {}
        }
    }
    None
}

/// `left == right` split at a top-level `==`.
fn split_top_level<'a>(text: &'a str, op: &str) -> Option<(&'a str, &'a str)> {
    let at = top_level(text)
        .into_iter()
        .find(|&at| text[at..].starts_with(op))?;
    Some((&text[..at], &text[at + op.len()..]))
}

fn is_expression(text: &str) -> bool {
    free_names(text).is_some()
}

/// The free names of `text` read as one Python expression; `None` when it is not one.
/// Names bound inside it (comprehension variables, lambda parameters), attribute names
/// and keyword-argument names are not free. Walked with an explicit stack: an example is
/// text from the tree, and a deeply nested one must not exhaust the stack.
fn free_names(text: &str) -> Option<BTreeSet<String>> {
    let text = text.trim();
    if text.is_empty() || text.len() > MAX_EXPR || text.contains('\n') {
        return None;
    }
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .ok()?;
    let tree = parser.parse(text, None)?;
    let root = tree.root_node();
    if root.has_error() || root.named_child_count() != 1 {
        return None;
    }
    let statement = root.named_child(0)?;
    if statement.kind() != "expression_statement" || statement.named_child_count() != 1 {
        return None;
    }
    if statement
        .named_child(0)
        .is_some_and(|e| matches!(e.kind(), "assignment" | "augmented_assignment"))
    {
        return None;
    }
    let mut used = BTreeSet::new();
    let mut bound = BTreeSet::new();
    let mut stack = vec![(statement, false)];
    while let Some((node, binding)) = stack.pop() {
        match node.kind() {
            "identifier" => {
                let name = text.get(node.byte_range())?.to_string();
                if binding {
                    bound.insert(name);
                } else {
                    used.insert(name);
                }
                continue;
            }
            "keyword_argument" => {
                if let Some(v) = node.child_by_field_name("value") {
                    stack.push((v, binding));
                }
                continue;
            }
            "attribute" => {
                if let Some(o) = node.child_by_field_name("object") {
                    stack.push((o, binding));
                }
                continue;
            }
            "for_in_clause" => {
                if let Some(l) = node.child_by_field_name("left") {
                    stack.push((l, true));
                }
                if let Some(r) = node.child_by_field_name("right") {
                    stack.push((r, binding));
                }
                continue;
            }
            "lambda_parameters" => {
                let mut c = node.walk();
                for child in node.named_children(&mut c) {
                    stack.push((child, true));
                }
                continue;
            }
            _ => {}
        }
        let mut c = node.walk();
        for child in node.named_children(&mut c) {
            stack.push((child, binding));
        }
    }
    Some(used.difference(&bound).cloned().collect())
}

#[cfg(test)]
#[path = "examples_tests.rs"]
mod tests;
