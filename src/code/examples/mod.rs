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

use forms::read_text;

mod expr;
mod forms;

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

#[cfg(test)]
mod tests;
