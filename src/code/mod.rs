//! Code written as code: how a small junior's replies become edits under the `code` tool
//! protocol (see `prompts/junior_code.txt` and the guide's "Tool protocols").
//!
//! Pure: the agent loop reads files and writes them; this module decides what a brief
//! shows, what a reply says and where its code goes. It depends on nothing else in the
//! crate.

pub(crate) mod agreement;
pub(crate) mod brief;
pub(crate) mod examples;
pub(crate) mod place;
pub(crate) mod reply;
pub(crate) mod stub;
pub(crate) mod syntax;
