//! Python expressions, as far as examples need them: where a call ends, which names an
//! expression uses, what lies outside its quotes and brackets.

use std::collections::BTreeSet;

use tree_sitter::Parser;

use super::MAX_EXPR;

/// The byte offsets of `text`'s characters outside quotes and brackets (a bracket itself
/// is inside).
pub(super) fn top_level(text: &str) -> Vec<usize> {
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

/// The first `name(…)` in `line` with `name` a defined function, and the text after it.
pub(super) fn find_call<'a>(
    line: &'a str,
    defined: &BTreeSet<String>,
) -> Option<(&'a str, &'a str)> {
    let start = defined
        .iter()
        .filter_map(|d| find_name_call(line, d))
        .min()?;
    let open = start + line[start..].find('(')?;
    let end = matching_paren(line, open)?;
    Some((&line[start..=end], &line[end + 1..]))
}

/// Where `name(` (or `name (`) starts in `text` as a whole word.
pub(super) fn find_name_call(text: &str, name: &str) -> Option<usize> {
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

pub(super) fn matching_paren(text: &str, open: usize) -> Option<usize> {
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
pub(super) fn split_top_level<'a>(text: &'a str, op: &str) -> Option<(&'a str, &'a str)> {
    let at = top_level(text)
        .into_iter()
        .find(|&at| text[at..].starts_with(op))?;
    Some((&text[..at], &text[at + op.len()..]))
}

pub(super) fn is_expression(text: &str) -> bool {
    free_names(text).is_some()
}

/// The free names of `text` read as one Python expression; `None` when it is not one.
/// Names bound inside it (comprehension variables, lambda parameters), attribute names
/// and keyword-argument names are not free. Walked with an explicit stack: an example is
/// text from the tree, and a deeply nested one must not exhaust the stack.
pub(super) fn free_names(text: &str) -> Option<BTreeSet<String>> {
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
