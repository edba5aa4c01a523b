//! The arguments of each tool, parsed from the model's raw JSON text.
//!
//! Unknown extra fields are ignored (small models add them; refusing would cost a step for
//! nothing), but a missing required field or a wrong type is a [`ToolFailure::BadArguments`]
//! whose message names the field, so the model can correct itself.

use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::ToolFailure;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ListFilesArgs {
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub depth: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ReadFileArgs {
    pub path: String,
    #[serde(default)]
    pub start_line: Option<u64>,
    #[serde(default)]
    pub end_line: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SearchArgs {
    pub pattern: String,
    #[serde(default)]
    pub path: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ApplyPatchArgs {
    pub patch: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WriteFileArgs {
    pub path: String,
    pub content: String,
}

/// The files of a placed `code` reply ([`super::spec::EDIT`]).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct EditArgs {
    pub files: Vec<WriteFileArgs>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RunArgs {
    pub command: String,
    #[serde(default)]
    pub timeout_s: Option<u64>,
}

/// Parses `arguments` for `tool`. An empty string or `null` is read as `{}` (some servers
/// send that for calls without arguments).
pub fn parse_args<T: DeserializeOwned>(tool: &str, arguments: &str) -> Result<T, ToolFailure> {
    let text = arguments.trim();
    let text = if text.is_empty() || text == "null" {
        "{}"
    } else {
        text
    };
    let bad = |message: String| ToolFailure::BadArguments {
        tool: tool.to_string(),
        message,
    };
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| bad(format!("arguments are not valid JSON ({e})")))?;
    if !value.is_object() {
        return Err(bad("arguments must be a JSON object".into()));
    }
    serde_json::from_value(value).map_err(|e| bad(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message<T: DeserializeOwned + std::fmt::Debug>(args: &str) -> String {
        match parse_args::<T>("t", args) {
            Ok(v) => panic!("expected an error, got {v:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_missing_field_is_named() {
        let m = message::<WriteFileArgs>(r#"{"path":"a"}"#);
        assert!(m.contains("content"), "{m}");
    }

    #[test]
    fn a_wrong_type_is_named() {
        let m = message::<ReadFileArgs>(r#"{"path":"a","start_line":"3"}"#);
        assert!(m.contains("invalid type"), "{m}");
    }

    #[test]
    fn invalid_json_and_non_objects_are_bad_arguments() {
        assert!(message::<ListFilesArgs>("{\"path\":").contains("not valid JSON"));
        assert!(message::<ListFilesArgs>("[1]").contains("JSON object"));
        assert!(message::<ListFilesArgs>("-1").contains("JSON object"));
    }

    #[test]
    fn empty_arguments_mean_no_arguments_and_extras_are_ignored() {
        let a: ListFilesArgs = parse_args("list_files", "").expect("empty");
        assert_eq!(
            a,
            ListFilesArgs {
                path: None,
                depth: None
            }
        );
        let a: ListFilesArgs =
            parse_args("list_files", r#"{"depth":1,"why":"looking"}"#).expect("extra");
        assert_eq!(a.depth, Some(1));
    }
}
