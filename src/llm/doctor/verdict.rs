//! Verdict texts that depend on where the endpoint is and what it lists.

use super::hints;
use crate::config::ModelConfig;
use crate::llm::client::Client;
use crate::llm::error::LlmError;

/// Where the endpoint is, for verdicts that depend on it.
pub(super) struct Place {
    host: String,
    local: bool,
    proxy: Option<hints::ProxyInUse>,
}

impl Place {
    pub(super) fn of(base_url: &str) -> Place {
        let url = reqwest::Url::parse(base_url).ok();
        let host = url
            .as_ref()
            .and_then(|u| u.host_str())
            .unwrap_or_default()
            .to_string();
        Place {
            local: hints::is_local_host(&host),
            proxy: url
                .as_ref()
                .and_then(|u| hints::proxy_for(u, &|k| std::env::var(k).ok())),
            host,
        }
    }

    /// The fix when a proxy is the likely reason a local server seems down.
    pub(super) fn proxy_fix(&self) -> Option<String> {
        let p = self.proxy.as_ref().filter(|_| self.local)?;
        let mut hosts = vec![self.host.as_str()];
        for h in ["localhost", "127.0.0.1"] {
            if !hosts.contains(&h) {
                hosts.push(h);
            }
        }
        Some(format!(
            "fix: {}={} routes requests for {} through a proxy; exclude it: export NO_PROXY={}",
            p.var,
            p.value,
            self.host,
            hosts.join(",")
        ))
    }

    /// The fix when the endpoint cannot be reached at all.
    pub(super) fn unreachable_fix(&self, base_url: &str, e: &LlmError) -> String {
        if let Some(fix) = self.proxy_fix() {
            return fix;
        }
        if self.local {
            return format!(
                "fix: start the server or correct base_url ({base_url}): {}",
                e.kind()
            );
        }
        let via = self
            .proxy
            .as_ref()
            .map(|p| format!(" (requests go through the proxy in {})", p.var))
            .unwrap_or_default();
        format!(
            "fix: a network problem: {} cannot be reached from here{via}; check the \
             connection, DNS, firewall or proxy settings (the server is remote, so there is \
             nothing to start): {}",
            self.host,
            e.kind()
        )
    }
}

/// `base_url` with `/v1` appended, if the server answers there: the fix for a root URL.
pub(super) async fn v1_fix(cfg: &ModelConfig, what_failed: &str) -> Option<String> {
    let base = cfg.base_url.trim_end_matches('/');
    if base.ends_with("/v1") {
        return None;
    }
    let with_v1 = ModelConfig {
        base_url: format!("{base}/v1"),
        ..cfg.clone()
    };
    let client = Client::new(&with_v1).ok()?;
    client.list_models().await.ok()?;
    Some(format!(
        "fix: set base_url = \"{}\" (the server answers under /v1; {what_failed})",
        with_v1.base_url
    ))
}

/// The verdict text for a model id the server does not list.
pub(super) fn model_fix(wanted: &str, models: &[String]) -> String {
    match hints::closest_model(wanted, models) {
        Some(m) => {
            format!("set model = \"{m}\" (the closest id the server lists; `{wanted}` is not one)")
        }
        None => format!("set model to one the server lists ({})", listed(models)),
    }
}

/// The first few model ids, for messages.
pub(super) fn listed(models: &[String]) -> String {
    models
        .iter()
        .take(8)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ")
}
