//! Token signals: what one output token's top-k logprobs say about the junior's state.
//!
//! Servers send logprobs in many shapes: no alternatives at all (k = 0), alternatives that
//! omit the chosen token, unsorted lists, `-inf` or `-9999` floors for "too small to say",
//! even NaN. None of these may panic the judge, and each degenerate case has one documented
//! meaning, so a log re-scored later gives the same numbers.
//!
//! Cleaning of one logprob `x` (the same for the chosen token and the alternatives):
//! - NaN or `+inf`: unusable, the value is ignored as if it had not been sent;
//! - `-inf` or `x <= -9999` (the floors some servers use): probability 0;
//! - `x >= 0` (rounding noise above zero): probability 1;
//! - otherwise probability `exp(x)`.
//!
//! The *listed* probabilities are the alternatives plus the chosen token when it has a
//! usable logprob and is not among the alternatives (matched by text). If they sum to more
//! than 1 (inconsistent data, e.g. duplicated entries) they are rescaled to sum to 1 and the
//! tail is empty; otherwise the unlisted tail mass `1 − Σp` is one extra bucket.

use crate::protocol::Alternative;
use crate::protocol::Observation;
use crate::protocol::SignalKind;

/// Logprobs at or below this are a server's way of saying "negligible" (OpenAI uses −9999).
pub const LOGPROB_FLOOR: f64 = -9999.0;

/// Surprise is capped here (nats, p ≈ 9·10⁻¹⁴) so that floored or `-inf` logprobs of the
/// chosen token give a large but finite value that histograms can bin.
pub const MAX_SURPRISE: f64 = 30.0;

/// The three per-token signals. Each is `None` when the input cannot define it.
///
/// - `entropy` (nats) over the listed probabilities plus the tail bucket; `None` when
///   nothing usable is listed (no alternatives and no usable chosen logprob).
///   With k = 0 and a chosen logprob `x` it is the two-bucket entropy of `{e^x, 1 − e^x}`.
/// - `margin` = p₁ − p₂ of the two largest listed probabilities (the tail bucket is many
///   tokens, never a rival); `None` with fewer than two listed values. Floored entries count
///   as listed with p = 0, so `[-0.1, -9999]` gives a margin of e^−0.1.
/// - `surprise` = −log p of the chosen token, from its own logprob, else from the
///   alternative with the same text; `None` when neither is usable. Floors and `-inf` give
///   [`MAX_SURPRISE`]; positive logprobs give 0.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TokenSignals {
    pub entropy: Option<f64>,
    pub margin: Option<f64>,
    pub surprise: Option<f64>,
}

impl TokenSignals {
    /// Signals from the shared event types (what the client streams and logs record).
    pub fn from_alternatives(
        chosen: &str,
        logprob: Option<f64>,
        alternatives: &[Alternative],
    ) -> Self {
        token_signals(
            chosen,
            logprob,
            alternatives.iter().map(|a| (a.token.as_str(), a.logprob)),
        )
    }

    /// True when the token carried no usable logprob information at all.
    pub fn is_empty(&self) -> bool {
        self.entropy.is_none() && self.margin.is_none() && self.surprise.is_none()
    }

    /// The present signals as raw observations, in the order entropy, margin, surprise.
    pub fn observations(&self) -> impl Iterator<Item = Observation> + '_ {
        [
            (SignalKind::Entropy, self.entropy),
            (SignalKind::Margin, self.margin),
            (SignalKind::Surprise, self.surprise),
        ]
        .into_iter()
        .filter_map(|(signal, v)| v.map(|value| Observation { signal, value }))
    }
}

/// Probability of a logprob after the cleaning rules of the module docs; `None` = unusable.
fn clean_probability(logprob: f64) -> Option<f64> {
    if logprob.is_nan() || logprob == f64::INFINITY {
        None
    } else if logprob <= LOGPROB_FLOOR {
        Some(0.0)
    } else if logprob >= 0.0 {
        Some(1.0)
    } else {
        Some(logprob.exp())
    }
}

/// `(p, p ln p)` of a logprob after the cleaning rules; `None` = unusable. The logprob
/// itself is ln p, so no `ln(exp(x))` round trip: this runs for every alternative of every
/// streamed token.
fn clean_with_p_ln_p(logprob: f64) -> Option<(f64, f64)> {
    let p = clean_probability(logprob)?;
    let p_ln_p = if p > 0.0 { p * logprob.min(0.0) } else { 0.0 };
    Some((p, p_ln_p))
}

fn surprise_of(logprob: f64) -> Option<f64> {
    if logprob.is_nan() || logprob == f64::INFINITY {
        None
    } else if logprob <= LOGPROB_FLOOR {
        Some(MAX_SURPRISE)
    } else {
        Some((-logprob).clamp(0.0, MAX_SURPRISE))
    }
}

/// `p ln p` with the convention 0 ln 0 = 0.
fn p_ln_p(p: f64) -> f64 {
    if p > 0.0 { p * p.ln() } else { 0.0 }
}

/// Signals of one token from its chosen text, its logprob and `(text, logprob)`
/// alternatives in any order. One pass, no allocation: this runs for every token.
pub fn token_signals<'a>(
    chosen: &str,
    logprob: Option<f64>,
    alternatives: impl IntoIterator<Item = (&'a str, f64)>,
) -> TokenSignals {
    let mut count = 0usize;
    let mut sum = 0.0;
    let mut sum_p_ln_p = 0.0;
    let (mut first, mut second) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    let mut chosen_listed = false;
    let mut chosen_alt_logprob = None;

    let mut push = |(p, p_ln_p): (f64, f64)| {
        count += 1;
        sum += p;
        sum_p_ln_p += p_ln_p;
        if p > first {
            second = first;
            first = p;
        } else if p > second {
            second = p;
        }
    };

    for (text, lp) in alternatives {
        let Some(p) = clean_with_p_ln_p(lp) else {
            continue;
        };
        if text == chosen && !chosen_listed {
            chosen_listed = true;
            chosen_alt_logprob = Some(lp);
        }
        push(p);
    }
    let own = logprob.filter(|lp| clean_probability(*lp).is_some());
    if !chosen_listed && let Some(p) = own.and_then(clean_with_p_ln_p) {
        push(p);
    }

    let surprise = own.or(chosen_alt_logprob).and_then(surprise_of);
    if count == 0 {
        return TokenSignals {
            entropy: None,
            margin: None,
            surprise,
        };
    }
    // Rescale inconsistent lists (Σp > 1); otherwise the tail is one extra bucket.
    let (scale, tail) = if sum > 1.0 {
        (sum, 0.0)
    } else {
        (1.0, 1.0 - sum)
    };
    // −Σ (p/S) ln(p/S) = −(Σ p ln p)/S + ln S.
    let listed_entropy = -sum_p_ln_p / scale + scale.ln();
    let entropy = (listed_entropy - p_ln_p(tail)).max(0.0);
    let margin = (count >= 2).then(|| (first - second) / scale);
    TokenSignals {
        entropy: Some(entropy),
        margin,
        surprise,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EPS: f64 = 1e-12;

    fn close(a: Option<f64>, b: f64) {
        let a = a.expect("signal present");
        assert!((a - b).abs() < EPS, "{a} != {b}");
    }

    #[test]
    fn a_full_sorted_list_with_the_chosen_token() {
        // p = 0.5, 0.3, 0.1; tail 0.1.
        let alts = [("a", 0.5f64.ln()), ("b", 0.3f64.ln()), ("c", 0.1f64.ln())];
        let s = token_signals("a", Some(0.5f64.ln()), alts);
        let h = -(0.5 * 0.5f64.ln() + 0.3 * 0.3f64.ln() + 0.1 * 0.1f64.ln() + 0.1 * 0.1f64.ln());
        close(s.entropy, h);
        close(s.margin, 0.2);
        close(s.surprise, 2f64.ln());
    }

    #[test]
    fn unsorted_alternatives_give_the_same_signals() {
        let sorted = [("a", 0.5f64.ln()), ("b", 0.3f64.ln()), ("c", 0.1f64.ln())];
        let unsorted = [sorted[2], sorted[0], sorted[1]];
        assert_eq!(
            token_signals("b", Some(0.3f64.ln()), sorted),
            token_signals("b", Some(0.3f64.ln()), unsorted)
        );
    }

    #[test]
    fn k_zero_with_a_logprob_is_a_two_bucket_entropy_and_no_margin() {
        let s = token_signals("x", Some(0.8f64.ln()), []);
        close(s.entropy, -(0.8 * 0.8f64.ln() + 0.2 * 0.2f64.ln()));
        assert_eq!(s.margin, None);
        close(s.surprise, -(0.8f64.ln()));
    }

    #[test]
    fn no_logprob_and_no_alternatives_is_no_evidence() {
        let s = token_signals("x", None, []);
        assert!(s.is_empty());
        assert_eq!(s.observations().count(), 0);
    }

    #[test]
    fn a_chosen_token_missing_from_the_alternatives_is_added_as_listed() {
        // Alternatives 0.6, 0.2; chosen 0.1 not among them; tail 0.1.
        let alts = [("a", 0.6f64.ln()), ("b", 0.2f64.ln())];
        let s = token_signals("z", Some(0.1f64.ln()), alts);
        let h = -(0.6 * 0.6f64.ln() + 0.2 * 0.2f64.ln() + 2.0 * 0.1 * 0.1f64.ln());
        close(s.entropy, h);
        close(s.margin, 0.4);
        close(s.surprise, 10f64.ln());
    }

    #[test]
    fn surprise_falls_back_to_the_alternative_with_the_same_text() {
        let alts = [("a", 0.25f64.ln()), ("b", 0.5f64.ln())];
        let s = token_signals("a", None, alts);
        close(s.surprise, 4f64.ln());
        close(s.margin, 0.25);
    }

    #[test]
    fn floors_and_minus_infinity_count_as_zero_probability() {
        let alts = [("a", 0.9f64.ln()), ("b", -9999.0), ("c", f64::NEG_INFINITY)];
        let s = token_signals("b", Some(-9999.0), alts);
        close(s.entropy, -(0.9 * 0.9f64.ln() + 0.1 * 0.1f64.ln()));
        close(s.margin, 0.9);
        close(s.surprise, MAX_SURPRISE);
        let s = token_signals("q", Some(f64::NEG_INFINITY), []);
        close(s.surprise, MAX_SURPRISE);
        close(s.entropy, 0.0);
    }

    #[test]
    fn nan_entries_are_ignored_and_a_nan_logprob_gives_no_surprise() {
        let alts = [("a", f64::NAN), ("b", 0.5f64.ln())];
        let s = token_signals("a", Some(f64::NAN), alts);
        close(s.entropy, 2f64.ln());
        assert_eq!(s.margin, None);
        assert_eq!(s.surprise, None);
    }

    #[test]
    fn positive_logprobs_are_certainty() {
        let s = token_signals("a", Some(1e-7), [("a", 1e-7)]);
        close(s.entropy, 0.0);
        close(s.surprise, 0.0);
    }

    #[test]
    fn lists_summing_above_one_are_rescaled_with_an_empty_tail() {
        // 0.8 + 0.8 → rescaled to 0.5, 0.5.
        let alts = [("a", 0.8f64.ln()), ("a2", 0.8f64.ln())];
        let s = token_signals("a", Some(0.8f64.ln()), alts);
        close(s.entropy, 2f64.ln());
        close(s.margin, 0.0);
    }

    #[test]
    fn from_alternatives_matches_the_slice_form() {
        let alts = vec![
            Alternative {
                token: "fn".into(),
                logprob: -0.2,
            },
            Alternative {
                token: "let".into(),
                logprob: -2.0,
            },
        ];
        assert_eq!(
            TokenSignals::from_alternatives("fn", Some(-0.2), &alts),
            token_signals("fn", Some(-0.2), [("fn", -0.2), ("let", -2.0)])
        );
    }
}
