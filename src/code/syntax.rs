//! What a source file is made of, at the top level: imports, named definitions and the rest,
//! from tree-sitter's Python and Rust grammars.
//!
//! Placing a junior's code by definition name, refusing code that does not parse, and the
//! repository map all need the same answer, and a regular expression gives the wrong one on
//! decorators, nested definitions, strings that look like code and multi-line signatures.

use std::ops::Range;
use std::path::Path;

/// A language handoff can place code in by definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Python,
    Rust,
}

impl Lang {
    /// The language of a path, from its extension.
    pub fn of(path: &Path) -> Option<Lang> {
        match path.extension()?.to_str()? {
            "py" | "pyi" => Some(Lang::Python),
            "rs" => Some(Lang::Rust),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Lang::Python => "Python",
            Lang::Rust => "Rust",
        }
    }

    /// The fence tag a model is shown for this language.
    pub fn fence(self) -> &'static str {
        match self {
            Lang::Python => "python",
            Lang::Rust => "rust",
        }
    }

    fn grammar(self) -> tree_sitter::Language {
        match self {
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
        }
    }
}

/// What a top-level item is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemKind {
    /// `import`, `from … import`, `use …`.
    Import,
    /// A function, class, struct, assignment to one name, `impl` block…: replaced by name.
    Definition(String),
    /// Anything else: a call, a bare expression, a top-level `if`.
    Other,
}

/// One top-level item: its kind, its bytes (with its decorators, attributes and the
/// comments right above it) and the first line of its text, for maps and messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub kind: ItemKind,
    pub range: Range<usize>,
    /// 1-based line where the item starts.
    pub line: usize,
}

impl Item {
    pub fn name(&self) -> Option<&str> {
        match &self.kind {
            ItemKind::Definition(n) => Some(n),
            _ => None,
        }
    }
}

/// A source text read by tree-sitter.
pub struct Parsed {
    pub items: Vec<Item>,
    /// The first place the grammar could not read: (1-based line, that line's text).
    pub error: Option<(usize, String)>,
    /// Methods of top-level classes (Python) and `impl` blocks (Rust): the owner's item
    /// index, the method's name, its bytes and its indentation.
    pub methods: Vec<Method>,
}

/// A function defined inside a class or an `impl` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Method {
    pub owner: usize,
    pub name: String,
    pub range: Range<usize>,
    pub indent: String,
}

/// Parses `text` as `lang`. `None` only if tree-sitter itself refuses (a grammar built for
/// another ABI), which the tests rule out for the two grammars compiled in.
pub fn parse(lang: Lang, text: &str) -> Option<Parsed> {
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&lang.grammar()).ok()?;
    let tree = parser.parse(text, None)?;
    let root = tree.root_node();
    let error_row = if root.has_error() {
        first_error(root)
    } else if lang == Lang::Python {
        first_empty_block(root)
    } else {
        None
    };
    let error = error_row.map(|row| {
        let line = text.lines().nth(row).unwrap_or("").to_string();
        (row + 1, line)
    });
    let mut items = Vec::new();
    let mut methods = Vec::new();
    let mut cursor = root.walk();
    // Attributes and comments gathered above the next item, which owns them.
    let mut leading: Option<(usize, usize)> = None;
    for node in root.children(&mut cursor) {
        let kind = node.kind();
        let is_leading = match lang {
            Lang::Rust => matches!(kind, "attribute_item" | "line_comment" | "block_comment"),
            Lang::Python => kind == "comment",
        };
        if is_leading {
            // A blank line between a comment and the next item detaches the comment.
            let start = leading.map_or(node.start_byte(), |(s, _)| s);
            let contiguous =
                leading.is_none_or(|(_, end_row)| node.start_position().row <= end_row + 1);
            leading = if contiguous {
                Some((start, node.end_position().row))
            } else {
                Some((node.start_byte(), node.end_position().row))
            };
            continue;
        }
        let start = match leading.take() {
            Some((s, end_row)) if node.start_position().row <= end_row + 1 => s,
            _ => node.start_byte(),
        };
        let item_kind = classify(lang, node, text);
        let index = items.len();
        if let ItemKind::Definition(_) = item_kind {
            collect_methods(lang, node, text, index, &mut methods);
        }
        items.push(Item {
            kind: item_kind,
            range: start..node.end_byte(),
            line: line_of(text, start),
        });
    }
    Some(Parsed {
        items,
        error,
        methods,
    })
}

fn line_of(text: &str, byte: usize) -> usize {
    text.as_bytes()[..byte.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// The row of the first Python suite with no statement in it (`if n == 49:` at the end of
/// a reply cut at its token limit). tree-sitter's grammar reads a bare newline after a
/// colon as an empty block, to tolerate code being typed; Python refuses it, so it is an
/// error here (a truncated reply was once written this way and failed to import).
fn first_empty_block(node: tree_sitter::Node) -> Option<usize> {
    first_in_preorder(
        node,
        |_| true,
        |n| n.kind() == "block" && n.named_child_count() == 0,
    )
    .map(|n| n.start_position().row)
}

fn first_error(node: tree_sitter::Node) -> Option<usize> {
    first_in_preorder(node, |n| n.has_error(), |n| n.is_error() || n.is_missing())
        .map(|n| n.start_position().row)
}

/// The first node under `root` (itself included), in source order, that `hit` accepts,
/// descending only into nodes `enter` accepts. Walked with one cursor, not by recursion:
/// the model writes the text, and a block nested 50,000 parentheses deep overflowed the
/// stack and aborted handoff when each level was a call frame.
fn first_in_preorder<'t>(
    root: tree_sitter::Node<'t>,
    enter: impl Fn(tree_sitter::Node<'t>) -> bool,
    hit: impl Fn(tree_sitter::Node<'t>) -> bool,
) -> Option<tree_sitter::Node<'t>> {
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if hit(node) {
            return Some(node);
        }
        if enter(node) && cursor.goto_first_child() {
            continue;
        }
        // Next sibling, else the nearest ancestor's; the cursor cannot leave `root`.
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return None;
            }
        }
    }
}

fn field_text(node: tree_sitter::Node, field: &str, text: &str) -> Option<String> {
    node.child_by_field_name(field)
        .and_then(|n| text.get(n.byte_range()))
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
}

fn classify(lang: Lang, node: tree_sitter::Node, text: &str) -> ItemKind {
    let kind = node.kind();
    match lang {
        Lang::Python => match kind {
            "import_statement" | "import_from_statement" | "future_import_statement" => {
                ItemKind::Import
            }
            "function_definition" | "class_definition" => {
                field_text(node, "name", text).map_or(ItemKind::Other, ItemKind::Definition)
            }
            "decorated_definition" => node
                .child_by_field_name("definition")
                .and_then(|d| field_text(d, "name", text))
                .map_or(ItemKind::Other, ItemKind::Definition),
            "expression_statement" => {
                // `NAME = …` (or annotated): a module constant, replaced by name.
                let Some(first) = node.named_child(0) else {
                    return ItemKind::Other;
                };
                if first.kind() == "assignment"
                    && let Some(left) = first.child_by_field_name("left")
                    && left.kind() == "identifier"
                    && let Some(name) = text.get(left.byte_range())
                {
                    return ItemKind::Definition(name.to_string());
                }
                ItemKind::Other
            }
            "if_statement" => {
                let cond = field_text(node, "condition", text).unwrap_or_default();
                if cond.contains("__name__") && cond.contains("__main__") {
                    ItemKind::Definition("if __name__ == \"__main__\"".into())
                } else {
                    ItemKind::Other
                }
            }
            _ => ItemKind::Other,
        },
        Lang::Rust => match kind {
            "use_declaration" | "extern_crate_declaration" => ItemKind::Import,
            "function_item"
            | "struct_item"
            | "enum_item"
            | "union_item"
            | "trait_item"
            | "type_item"
            | "const_item"
            | "static_item"
            | "mod_item"
            | "macro_definition"
            | "function_signature_item" => {
                field_text(node, "name", text).map_or(ItemKind::Other, ItemKind::Definition)
            }
            "impl_item" => {
                let ty = field_text(node, "type", text).unwrap_or_default();
                let name = match field_text(node, "trait", text) {
                    Some(tr) => format!("impl {tr} for {ty}"),
                    None => format!("impl {ty}"),
                };
                ItemKind::Definition(name)
            }
            _ => ItemKind::Other,
        },
    }
}

fn collect_methods(
    lang: Lang,
    node: tree_sitter::Node,
    text: &str,
    owner: usize,
    out: &mut Vec<Method>,
) {
    let (class, body_field, method_kinds): (tree_sitter::Node, &str, &[&str]) = match lang {
        Lang::Python => {
            let class = if node.kind() == "decorated_definition" {
                match node.child_by_field_name("definition") {
                    Some(d) => d,
                    None => return,
                }
            } else {
                node
            };
            if class.kind() != "class_definition" {
                return;
            }
            (
                class,
                "body",
                &["function_definition", "decorated_definition"],
            )
        }
        Lang::Rust => {
            if node.kind() != "impl_item" && node.kind() != "trait_item" {
                return;
            }
            (node, "body", &["function_item"])
        }
    };
    let Some(body) = class.child_by_field_name(body_field) else {
        return;
    };
    let mut cursor = body.walk();
    for child in body.named_children(&mut cursor) {
        if !method_kinds.contains(&child.kind()) {
            continue;
        }
        let def = if child.kind() == "decorated_definition" {
            match child.child_by_field_name("definition") {
                Some(d) => d,
                None => continue,
            }
        } else {
            child
        };
        let Some(name) = field_text(def, "name", text) else {
            continue;
        };
        let start = child.start_byte();
        let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
        let indent: String = text[line_start..start]
            .chars()
            .take_while(|c| c.is_whitespace())
            .collect();
        out.push(Method {
            owner,
            name,
            range: line_start..child.end_byte(),
            indent,
        });
    }
}

/// A Python definition's body, for keeping its docstring: the byte where the line of the
/// body's first statement starts, and that statement's whole lines when it is a docstring.
/// `None` when `def_text` is not one definition or its body shares the header's line.
pub fn python_body(def_text: &str) -> Option<(usize, Option<Range<usize>>)> {
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&Lang::Python.grammar()).ok()?;
    let tree = parser.parse(def_text, None)?;
    let root = tree.root_node();
    let mut node = root.named_child(0)?;
    if node.kind() == "decorated_definition" {
        node = node.child_by_field_name("definition")?;
    }
    if !matches!(node.kind(), "function_definition" | "class_definition") {
        return None;
    }
    let body = node.child_by_field_name("body")?;
    let first = body.named_child(0)?;
    if first.start_position().row == node.start_position().row {
        return None;
    }
    let line_start = def_text[..first.start_byte()]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let is_doc = first.kind() == "expression_statement"
        && first.named_child(0).is_some_and(|c| c.kind() == "string");
    let doc = is_doc.then(|| {
        let end = first.end_byte();
        let end = def_text[end..]
            .find('\n')
            .map_or(def_text.len(), |i| end + i + 1);
        line_start..end
    });
    Some((line_start, doc))
}

/// The first line of each named definition, for a repository map: `def f(a, b):`,
/// `pub fn g(x: u32) -> u32 {`, `class C:`.
pub fn signatures(parsed: &Parsed, text: &str) -> Vec<String> {
    parsed
        .items
        .iter()
        .filter(|i| matches!(i.kind, ItemKind::Definition(_)))
        .filter_map(|i| {
            let body = text.get(i.range.clone())?;
            body.lines()
                .map(str::trim)
                .find(|l| {
                    !l.is_empty()
                        && !l.starts_with('#')
                        && !l.starts_with("//")
                        && !l.starts_with('@')
                })
                .map(|l| l.chars().take(160).collect())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_python_suite_cut_off_after_its_colon_does_not_parse() {
        let cut = "def is_prime(n):\n    if n == 48:\n        return True\n    if n == 49:\n";
        let parsed = super::parse(super::Lang::Python, cut).expect("parsed");
        assert_eq!(
            parsed.error.as_ref().map(|(line, _)| *line),
            Some(4),
            "{:?}",
            parsed.error
        );
        let whole = "def is_prime(n):\n    if n == 49:\n        return True\n";
        let parsed = super::parse(super::Lang::Python, whole).expect("parsed");
        assert_eq!(parsed.error, None);
    }

    use super::*;

    fn names(p: &Parsed) -> Vec<String> {
        p.items
            .iter()
            .map(|i| match &i.kind {
                ItemKind::Import => "import".to_string(),
                ItemKind::Definition(n) => n.clone(),
                ItemKind::Other => "other".to_string(),
            })
            .collect()
    }

    #[test]
    fn python_items_carry_their_decorators_and_comments() {
        let text = "import os\nfrom typing import List\n\n# the answer\n@cache\ndef f(x):\n    return x\n\nclass C:\n    def m(self):\n        pass\n\nN = 3\nprint(N)\nif __name__ == \"__main__\":\n    f(1)\n";
        let p = parse(Lang::Python, text).expect("parse");
        assert!(p.error.is_none());
        assert_eq!(
            names(&p),
            [
                "import",
                "import",
                "f",
                "C",
                "N",
                "other",
                "if __name__ == \"__main__\""
            ]
        );
        let f = &p.items[2];
        assert!(text[f.range.clone()].starts_with("# the answer\n@cache\ndef f"));
        assert_eq!(f.line, 4);
        assert_eq!(p.methods.len(), 1);
        assert_eq!(p.methods[0].name, "m");
        assert_eq!(p.methods[0].indent, "    ");
        assert_eq!(
            signatures(&p, text),
            [
                "def f(x):",
                "class C:",
                "N = 3",
                "if __name__ == \"__main__\":"
            ]
        );
    }

    #[test]
    fn rust_items_carry_their_attributes_and_impls_are_named_by_type() {
        let text = "use std::fmt;\n\n/// doc\n#[derive(Debug)]\npub struct S;\n\nimpl fmt::Display for S {\n    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { Ok(()) }\n}\n\nfn g() {}\n";
        let p = parse(Lang::Rust, text).expect("parse");
        assert!(p.error.is_none());
        assert_eq!(names(&p), ["import", "S", "impl fmt::Display for S", "g"]);
        assert!(text[p.items[1].range.clone()].starts_with("/// doc\n#[derive(Debug)]"));
        assert_eq!(p.methods[0].name, "fmt");
    }

    /// 50,000 nested parentheses (and brackets, in Rust) used to overflow the stack in a
    /// recursive walk; now the parse ends, the balanced ones are code and a missing closer
    /// is a syntax error on its line.
    #[test]
    fn deeply_nested_code_is_walked_without_recursion() {
        let deep = 50_000;
        let balanced = format!("x = {}1{}\n", "(".repeat(deep), ")".repeat(deep));
        // On a small stack, as a runtime worker thread has: a recursive walk dies here.
        let parsed = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                let p = parse(Lang::Python, &balanced).expect("parse");
                let unclosed = format!("def f():\n    return {}1\n", "(".repeat(deep));
                let q = parse(Lang::Python, &unclosed).expect("parse");
                let rust = format!(
                    "fn g() {{ let v = {}1{}; }}\n",
                    "[".repeat(deep),
                    "]".repeat(deep - 1)
                );
                let r = parse(Lang::Rust, &rust).expect("parse");
                (
                    p.error,
                    p.items.len(),
                    q.error.map(|e| e.0),
                    r.error.is_some(),
                )
            })
            .expect("thread")
            .join()
            .expect("no stack overflow");
        assert_eq!(parsed.0, None);
        assert_eq!(parsed.1, 1);
        assert!(parsed.2.is_some(), "an unclosed parenthesis is an error");
        assert!(parsed.3, "an unclosed bracket is an error");
    }

    #[test]
    fn a_syntax_error_names_its_line() {
        let p = parse(Lang::Python, "def f(x):\n    return x +\n").expect("parse");
        let (line, text) = p.error.expect("an error");
        assert_eq!(line, 2, "{text}");
        let p = parse(Lang::Rust, "fn g() { let x = ; }\n").expect("parse");
        assert!(p.error.is_some());
    }
}
