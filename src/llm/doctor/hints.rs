//! The pure reasoning behind doctor's verdicts: which model id the user meant, whether a
//! proxy sits between handoff and the server, whether a host is on this machine or network.

use std::net::IpAddr;

/// The listed model id the user most likely meant by `wanted`, if one is close enough.
///
/// In order: the same id in another case; the same name with another or no tag
/// (`qwen2.5-coder` → `qwen2.5-coder:7b`, Ollama's ids carry a tag; `:latest` preferred);
/// an id that contains the wanted one or is contained in it (an `org/` prefix added or
/// missing); the id within a small edit distance (a typo).
pub fn closest_model<'a>(wanted: &str, listed: &'a [String]) -> Option<&'a str> {
    let w = wanted.to_lowercase();
    let lower: Vec<String> = listed.iter().map(|m| m.to_lowercase()).collect();
    let pick = |i: usize| Some(listed[i].as_str());
    if let Some(i) = lower.iter().position(|m| *m == w) {
        return pick(i);
    }
    let base = |s: &str| s.split(':').next().unwrap_or(s).to_string();
    let same_name: Vec<usize> = (0..listed.len())
        .filter(|&i| base(&lower[i]) == base(&w))
        .collect();
    if let Some(&i) = same_name
        .iter()
        .find(|&&i| lower[i].ends_with(":latest"))
        .or(same_name.first())
    {
        return pick(i);
    }
    if let Some(i) = (0..listed.len())
        .filter(|&i| lower[i].contains(&w) || (lower[i].len() >= 3 && w.contains(&lower[i])))
        .min_by_key(|&i| lower[i].len().abs_diff(w.len()))
    {
        return pick(i);
    }
    let limit = (w.chars().count() / 4).max(2);
    (0..listed.len())
        .map(|i| (edit_distance(&lower[i], &w), i))
        .filter(|(d, _)| *d <= limit)
        .min()
        .and_then(|(_, i)| pick(i))
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// Whether `host` is this machine or the local network, where "start the server" is
/// advice that can help (for a remote host it is a network problem).
pub fn is_local_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.eq_ignore_ascii_case("localhost")
        || host.to_ascii_lowercase().ends_with(".localhost")
        || host.to_ascii_lowercase().ends_with(".local")
    {
        return true;
    }
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        Ok(IpAddr::V6(ip)) => {
            ip.is_loopback() || (ip.segments()[0] & 0xfe00) == 0xfc00 // unique local
        }
        Err(_) => false,
    }
}

/// A proxy variable that applies to `url`: its name and value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyInUse {
    pub var: String,
    pub value: String,
}

/// The proxy the HTTP client will send a request for `url` through, reading variables
/// with `env` as the client does: `HTTP_PROXY`/`HTTPS_PROXY` by scheme (lowercase
/// spellings too), then `ALL_PROXY`, unless `NO_PROXY` covers the host.
pub fn proxy_for(url: &reqwest::Url, env: &dyn Fn(&str) -> Option<String>) -> Option<ProxyInUse> {
    let get = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    let scheme_vars: [&str; 2] = match url.scheme() {
        "https" => ["HTTPS_PROXY", "https_proxy"],
        _ => ["HTTP_PROXY", "http_proxy"],
    };
    let (var, value) = scheme_vars
        .into_iter()
        .chain(["ALL_PROXY", "all_proxy"])
        .find_map(|k| get(k).map(|v| (k.to_string(), v)))?;
    let host = url
        .host_str()?
        .trim_start_matches('[')
        .trim_end_matches(']');
    let no_proxy = get("NO_PROXY")
        .or_else(|| get("no_proxy"))
        .unwrap_or_default();
    if no_proxy_covers(&no_proxy, host) {
        return None;
    }
    Some(ProxyInUse { var, value })
}

/// Whether a `NO_PROXY` list covers `host`: `*`, the host itself, a parent domain
/// (`example.com` or `.example.com`), the same IP, or an IPv4 CIDR block.
pub fn no_proxy_covers(list: &str, host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    let ip: Option<IpAddr> = host.parse().ok();
    list.split(',')
        .map(|e| e.trim().to_ascii_lowercase())
        .filter(|e| !e.is_empty())
        .any(|entry| {
            if entry == "*" {
                return true;
            }
            if let Some((net, bits)) = entry.split_once('/') {
                return match (ip, net.parse::<IpAddr>(), bits.parse::<u32>()) {
                    (Some(IpAddr::V4(h)), Ok(IpAddr::V4(n)), Ok(bits)) if bits <= 32 => {
                        let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
                        u32::from(h) & mask == u32::from(n) & mask
                    }
                    _ => false,
                };
            }
            let domain = entry.trim_start_matches('.');
            host == domain || host.ends_with(&format!(".{domain}"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_closest_model_fills_in_a_missing_tag_or_prefix_or_typo() {
        let ollama = ids(&["llama3:8b", "qwen2.5-coder:7b", "qwen2.5-coder:latest"]);
        assert_eq!(
            closest_model("qwen2.5-coder", &ollama),
            Some("qwen2.5-coder:latest")
        );
        let one = ids(&["qwen2.5-coder:7b"]);
        assert_eq!(
            closest_model("qwen2.5-coder", &one),
            Some("qwen2.5-coder:7b")
        );
        assert_eq!(
            closest_model("qwen2.5-coder:3b", &one),
            Some("qwen2.5-coder:7b")
        );
        let vllm = ids(&["Qwen/Qwen2.5-Coder-1.5B-Instruct"]);
        assert_eq!(
            closest_model("qwen2.5-coder-1.5b-instruct", &vllm),
            Some("Qwen/Qwen2.5-Coder-1.5B-Instruct")
        );
        assert_eq!(
            closest_model("gpt-4.1-nan", &ids(&["gpt-4.1-nano", "o3"])),
            Some("gpt-4.1-nano")
        );
        assert_eq!(
            closest_model("gpt-9", &ids(&["scripted", "other-model"])),
            None
        );
    }

    #[test]
    fn local_hosts_are_this_machine_and_private_networks() {
        for yes in [
            "127.0.0.1",
            "localhost",
            "192.168.1.20",
            "10.0.0.5",
            "[::1]",
            "box.local",
        ] {
            assert!(is_local_host(yes), "{yes}");
        }
        for no in ["api.openai.com", "8.8.8.8", "example.invalid"] {
            assert!(!is_local_host(no), "{no}");
        }
    }

    #[test]
    fn a_proxy_applies_unless_no_proxy_covers_the_host() {
        let url = reqwest::Url::parse("http://127.0.0.1:11434/v1").expect("url");
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(name, _)| *name == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let set = env(&[("HTTP_PROXY", "http://proxy:3128")]);
        assert_eq!(
            proxy_for(&url, &set),
            Some(ProxyInUse {
                var: "HTTP_PROXY".into(),
                value: "http://proxy:3128".into()
            })
        );
        let covered = env(&[
            ("http_proxy", "http://p:1"),
            ("NO_PROXY", "localhost, 127.0.0.1"),
        ]);
        assert_eq!(proxy_for(&url, &covered), None);
        let cidr = env(&[("ALL_PROXY", "socks5://p:1"), ("no_proxy", "127.0.0.0/8")]);
        assert_eq!(proxy_for(&url, &cidr), None);
        let wrong = env(&[("ALL_PROXY", "socks5://p:1"), ("NO_PROXY", "localhost")]);
        assert_eq!(
            proxy_for(&url, &wrong).map(|p| p.var),
            Some("ALL_PROXY".into())
        );
        let https_only = env(&[("HTTPS_PROXY", "http://p:1")]);
        assert_eq!(
            proxy_for(&url, &https_only),
            None,
            "an https proxy is not used for http"
        );
        assert!(no_proxy_covers(".example.com", "api.example.com"));
        assert!(no_proxy_covers("*", "anything"));
        assert!(!no_proxy_covers("example.com", "badexample.com"));
    }
}
