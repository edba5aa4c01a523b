//! The tool contract: names, argument names and JSON schemas the models are offered.
//!
//! Prompts, logs and outside tools rely on these exact names; changing one is a breaking
//! change of the log schema.

use serde_json::json;

use crate::llm::types::ToolSpec;

pub const LIST_FILES: &str = "list_files";
pub const READ_FILE: &str = "read_file";
pub const SEARCH: &str = "search";
pub const APPLY_PATCH: &str = "apply_patch";
pub const WRITE_FILE: &str = "write_file";
pub const RUN: &str = "run";
pub const ASK_OPERATOR: &str = "ask_operator";
pub const FINISH: &str = "finish";
/// The edit a `code`-protocol reply comes to once placed: `{files: [{path, content}]}`.
/// Never offered to a model (a junior under `code` writes code, not calls); the loop makes
/// it, so approval, logging, replay and checkpoints treat it like `write_file`.
pub const EDIT: &str = "edit";

/// Every tool name, in the order [`specs`] lists them.
pub const TOOL_NAMES: [&str; 8] = [
    LIST_FILES,
    READ_FILE,
    SEARCH,
    APPLY_PATCH,
    WRITE_FILE,
    RUN,
    ASK_OPERATOR,
    FINISH,
];

fn tool(name: &str, description: &str, parameters: serde_json::Value) -> ToolSpec {
    ToolSpec {
        name: name.to_string(),
        description: description.to_string(),
        parameters,
    }
}

/// All eight tools offered to a model.
pub fn specs() -> Vec<ToolSpec> {
    vec![
        tool(
            LIST_FILES,
            "List files and directories of the repository (respects .gitignore). Paths are \
             relative to the repository root; directories end with '/'.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Directory to list, relative to the repository root. Default: the root."},
                    "depth": {"type": "integer", "minimum": 1, "description": "How many levels deep to list. Default: 2."}
                },
                "required": []
            }),
        ),
        tool(
            READ_FILE,
            "Read a text file with numbered lines. Long files are cut; read on with start_line.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the repository root."},
                    "start_line": {"type": "integer", "minimum": 1, "description": "First line to show (1-based). Default: 1."},
                    "end_line": {"type": "integer", "minimum": 1, "description": "Last line to show (inclusive). Default: the end."}
                },
                "required": ["path"]
            }),
        ),
        tool(
            SEARCH,
            "Search file contents with a regular expression (Rust regex syntax; start the \
             pattern with (?i) to ignore case), skipping files ignored by .gitignore. Returns \
             path:line: text for each match.",
            json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regular expression matched against each line."},
                    "path": {"type": "string", "description": "File or directory to search in. Default: the whole repository."}
                },
                "required": ["pattern"]
            }),
        ),
        tool(
            APPLY_PATCH,
            "Apply a unified diff (as produced by `diff -u` or `git diff`) to the work tree. \
             All hunks apply or nothing changes; a rejected hunk is reported with the reason. \
             Use /dev/null as the old path to create a file and as the new path to delete one.",
            json!({
                "type": "object",
                "properties": {
                    "patch": {"type": "string", "description": "The unified diff text, with ---/+++ headers and @@ hunks."}
                },
                "required": ["patch"]
            }),
        ),
        tool(
            WRITE_FILE,
            "Create or overwrite a file with the given content (parent directories are created).",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the repository root."},
                    "content": {"type": "string", "description": "The complete new content of the file."}
                },
                "required": ["path", "content"]
            }),
        ),
        tool(
            RUN,
            "Run a shell command (sh -c) in the repository root. Returns the exit code and the \
             tail of stdout and stderr combined. The command is killed at the timeout.",
            json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The shell command line."},
                    "timeout_s": {"type": "integer", "minimum": 1, "description": "Timeout in seconds; cannot exceed the configured limit."}
                },
                "required": ["command"]
            }),
        ),
        tool(
            ASK_OPERATOR,
            "Ask the operator one specific question when the task depends on information only \
             they have. Offer options when you can.",
            json!({
                "type": "object",
                "properties": {
                    "question": {"type": "string", "description": "One specific, single-topic question."},
                    "options": {"type": "array", "items": {"type": "string"}, "description": "Possible answers to choose from."}
                },
                "required": ["question"]
            }),
        ),
        tool(
            FINISH,
            "Declare the task done and summarise what was changed.",
            json!({
                "type": "object",
                "properties": {
                    "summary": {"type": "string", "description": "What was changed and why."}
                },
                "required": ["summary"]
            }),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schema's property names are the argument contract; check each against the
    /// names the issue fixes, so a typo in a schema cannot slip through.
    #[test]
    fn names_and_argument_names_are_the_contract() {
        let expected: [(&str, &[&str], &[&str]); 8] = [
            ("list_files", &["depth", "path"], &[]),
            ("read_file", &["end_line", "path", "start_line"], &["path"]),
            ("search", &["path", "pattern"], &["pattern"]),
            ("apply_patch", &["patch"], &["patch"]),
            ("write_file", &["content", "path"], &["path", "content"]),
            ("run", &["command", "timeout_s"], &["command"]),
            ("ask_operator", &["options", "question"], &["question"]),
            ("finish", &["summary"], &["summary"]),
        ];
        let specs = specs();
        assert_eq!(specs.len(), expected.len());
        for (spec, (name, props, required)) in specs.iter().zip(expected) {
            assert_eq!(spec.name, name);
            let mut got: Vec<&str> = spec.parameters["properties"]
                .as_object()
                .expect("properties")
                .keys()
                .map(String::as_str)
                .collect();
            got.sort_unstable();
            assert_eq!(got, props, "properties of {name}");
            let req: Vec<&str> = spec.parameters["required"]
                .as_array()
                .expect("required")
                .iter()
                .filter_map(|v| v.as_str())
                .collect();
            assert_eq!(req, required, "required of {name}");
            assert!(!spec.description.is_empty());
        }
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, TOOL_NAMES);
    }
}
