//! OpenAI-compatible streaming chat client: token + logprob deltas, tool-call assembly,
//! cancellation, retry, cost. Knows nothing of beliefs.

pub mod types;
