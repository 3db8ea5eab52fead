//! Collecting without asking: how an invoice is collected, where one charge attempt stands as its
//! provider reports it (merged without regard to the order its events arrive in), the org's retry
//! days and its late fees.

use serde::{Deserialize, Serialize};

use crate::decimal::Thousandths;
use crate::error::FieldErrors;

/// How an invoice (and a quote's invoice, a schedule's) is collected.
#[cfg_attr(feature = "server", derive(sqlx::Type, utoipa::ToSchema))]
#[cfg_attr(
    feature = "server",
    sqlx(type_name = "text", rename_all = "snake_case")
)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CollectionMethod {
    /// The customer is sent the invoice and pays it (its page's Pay button, a transfer).
    #[default]
    SendInvoice,
    /// Charged off-session to the customer's default saved method when it is finalized.
    ChargeAutomatically,
}

impl CollectionMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            CollectionMethod::SendInvoice => "send_invoice",
            CollectionMethod::ChargeAutomatically => "charge_automatically",
        }
    }

    /// Whether this is the default (left out of what is sent back).
    pub fn is_default(&self) -> bool {
        *self == CollectionMethod::SendInvoice
    }

    /// The stored or sent word; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim() {
            "send_invoice" => Some(CollectionMethod::SendInvoice),
            "charge_automatically" => Some(CollectionMethod::ChargeAutomatically),
            _ => None,
        }
    }
}

/// Where one charge attempt stands. Its provider's events may come in any order and more than once:
/// the attempt's state is the highest rank any of them reported (`processing` < `requires_action` <
/// `failed` < `succeeded`), so a late `processing` never hides the outcome, and an authentication
/// completed after `requires_action` (or a debit settled after `processing`) moves it on. One
/// attempt is one PaymentIntent: a retry is a new attempt, never a new state of this one.
#[cfg_attr(feature = "server", derive(sqlx::Type, utoipa::ToSchema))]
#[cfg_attr(
    feature = "server",
    sqlx(type_name = "text", rename_all = "snake_case")
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChargeState {
    /// A debit under way (SEPA takes days).
    Processing,
    /// The customer must confirm it (3-D Secure): they are sent a link.
    RequiresAction,
    Failed,
    Succeeded,
}

impl ChargeState {
    pub fn as_str(self) -> &'static str {
        match self {
            ChargeState::Processing => "processing",
            ChargeState::RequiresAction => "requires_action",
            ChargeState::Failed => "failed",
            ChargeState::Succeeded => "succeeded",
        }
    }

    /// The state a `payment_intent.*` event reports, by its type; `None` for another type.
    pub fn of_event(kind: &str) -> Option<Self> {
        match kind {
            "payment_intent.processing" => Some(ChargeState::Processing),
            "payment_intent.requires_action" => Some(ChargeState::RequiresAction),
            "payment_intent.payment_failed" => Some(ChargeState::Failed),
            "payment_intent.succeeded" => Some(ChargeState::Succeeded),
            _ => None,
        }
    }

    /// This state merged with another report of the same attempt.
    pub fn merge(self, reported: ChargeState) -> ChargeState {
        self.max(reported)
    }

    /// Whether the attempt is over (nothing more will come of it but a dispute).
    pub fn is_final(self) -> bool {
        matches!(self, ChargeState::Failed | ChargeState::Succeeded)
    }
}

impl ChargeState {
    /// The stored word; `None` for a state no provider reports (scheduled, canceled).
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "processing" => Some(ChargeState::Processing),
            "requires_action" => Some(ChargeState::RequiresAction),
            "failed" => Some(ChargeState::Failed),
            "succeeded" => Some(ChargeState::Succeeded),
            _ => None,
        }
    }
}

/// One try to charge an invoice, as its output lists it.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChargeAttempt {
    /// 1 for the first, then each retry.
    pub n: i16,
    pub state: ChargeState,
    /// Why it failed or waits (the provider's words, e.g. "Your card was declined.").
    pub reason: Option<String>,
    /// When it was sent to the provider.
    pub at: chrono::DateTime<chrono::Utc>,
}

/// A payment method a customer saved, as the owner sees it (`GET /api/v1/customers/{id}/payment_methods`).
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedMethod {
    pub id: uuid::Uuid,
    /// `card` or `sepa_debit`.
    #[serde(rename = "type")]
    pub kind: String,
    /// A card's brand (`visa`); none for a debit.
    pub brand: Option<String>,
    pub last4: Option<String>,
    /// A SEPA mandate's reference, which the customer's bank statement shows.
    pub mandate_reference: Option<String>,
    /// A SEPA mandate's status as the provider last told it (`active`, `pending`, `inactive`).
    pub mandate_status: Option<String>,
    /// The one charged automatically.
    pub default: bool,
}

/// The most retries an org may ask for, and the furthest a retry may be from the first attempt.
pub const MAX_RETRIES: usize = 6;
pub const MAX_RETRY_DAY: u32 = 60;

/// Days after the first attempt on which a declined charge is tried again, in order; then the
/// invoice falls back to being sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RetryDays(pub Vec<u32>);

impl Default for RetryDays {
    fn default() -> Self {
        RetryDays(vec![3, 5, 7])
    }
}

impl RetryDays {
    /// At most [`MAX_RETRIES`] days, each from 1 to [`MAX_RETRY_DAY`], strictly increasing (none:
    /// no retry).
    pub fn check(&self) -> Result<(), FieldErrors> {
        let message = if self.0.len() > MAX_RETRIES {
            Some(format!("At most {MAX_RETRIES} retries."))
        } else if self.0.iter().any(|d| !(1..=MAX_RETRY_DAY).contains(d)) {
            Some(format!(
                "Each retry from 1 to {MAX_RETRY_DAY} days after the first attempt."
            ))
        } else if self.0.windows(2).any(|w| w[0] >= w[1]) {
            Some("Retry days in increasing order, each once.".to_owned())
        } else {
            None
        };
        match message {
            Some(m) => Err([("retry_days".to_owned(), m)].into()),
            None => Ok(()),
        }
    }

    /// The day (after the first attempt) of attempt `n` (1 is the first, on day 0); `None` once the
    /// retries are spent.
    pub fn day_of_attempt(&self, n: u32) -> Option<u32> {
        match n {
            0 => None,
            1 => Some(0),
            n => self.0.get(n as usize - 2).copied(),
        }
    }
}

/// A late fee's amount: fixed, or a percent of what is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LateFeeAmount {
    None,
    Fixed { amount_cents: i64 },
    Percent { percent: Thousandths },
}

/// The most steps of late fees an org may set.
pub const MAX_LATE_FEE_STEPS: usize = 3;

/// An org's late fees: the amount, charged once per step, `after_days` days overdue each (at most
/// three steps, in increasing order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LateFees {
    #[serde(flatten)]
    pub amount: LateFeeAmount,
    #[serde(default)]
    pub after_days: Vec<u32>,
    /// The org's tax rate a fee's line takes (its VAT category in an e-invoice: often an exempt
    /// rate whose reason says late-payment interest is outside VAT); none: an untaxed line, which
    /// an e-invoicing org's fee cannot have (it is then left a draft).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tax_rate_id: Option<uuid::Uuid>,
}

impl Default for LateFees {
    fn default() -> Self {
        LateFees {
            amount: LateFeeAmount::None,
            after_days: Vec::new(),
            tax_rate_id: None,
        }
    }
}

impl LateFees {
    /// A positive fixed amount (at most 1,000,000.00) or a percent above 0 and at most 100; one to
    /// three steps from 1 to 365 days, increasing; nothing else when there is no fee.
    pub fn check(&self) -> Result<(), FieldErrors> {
        let mut errors = FieldErrors::new();
        match self.amount {
            LateFeeAmount::None => {
                if !self.after_days.is_empty() {
                    errors.insert("after_days".into(), "No steps without a fee.".into());
                }
                return crate::error::fields_ok(errors);
            }
            LateFeeAmount::Fixed { amount_cents } if !(1..=100_000_000).contains(&amount_cents) => {
                errors.insert(
                    "amount_cents".into(),
                    "A fee from 0.01 to 1,000,000.00.".into(),
                );
            }
            LateFeeAmount::Percent { percent } if !(1..=100_000).contains(&percent.0) => {
                errors.insert(
                    "percent".into(),
                    "A percent above 0 and at most 100.".into(),
                );
            }
            _ => {}
        }
        let days = &self.after_days;
        if days.is_empty() || days.len() > MAX_LATE_FEE_STEPS {
            errors.insert(
                "after_days".into(),
                format!("One to {MAX_LATE_FEE_STEPS} steps."),
            );
        } else if days.iter().any(|d| !(1..=365).contains(d))
            || days.windows(2).any(|w| w[0] >= w[1])
        {
            errors.insert(
                "after_days".into(),
                "Days overdue from 1 to 365, in increasing order.".into(),
            );
        }
        crate::error::fields_ok(errors)
    }

    /// The fee on `due_cents` still due (minor units): the fixed amount, or the percent of it
    /// rounded half away from zero to the minor unit; zero when nothing is due or there is no fee.
    pub fn fee_cents(&self, due_cents: i64) -> i64 {
        if due_cents <= 0 {
            return 0;
        }
        match self.amount {
            LateFeeAmount::None => 0,
            LateFeeAmount::Fixed { amount_cents } => amount_cents,
            LateFeeAmount::Percent { percent } => {
                // due × percent / 100, percent in thousandths: ÷ 100,000, rounded half up.
                let scaled = i128::from(due_cents) * i128::from(percent.0);
                ((scaled + 50_000) / 100_000) as i64
            }
        }
    }

    /// The steps due at `days_overdue`: the indexes (0-based) of every step whose day has come.
    pub fn steps_due(&self, days_overdue: i64) -> impl Iterator<Item = usize> + '_ {
        let none = matches!(self.amount, LateFeeAmount::None);
        self.after_days
            .iter()
            .enumerate()
            .filter(move |(_, d)| !none && days_overdue >= i64::from(**d))
            .map(|(i, _)| i)
    }
}

/// The settings page's "Collecting automatically" form as typed: day lists as text (`"3, 5, 7"`),
/// the fee's kind (`none`, `fixed`, `percent`), its amount (`5.00`, in the invoice's currency, or
/// a percent such as `1.5`) and the fee line's tax rate (a rate's id, or empty).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectionForm {
    #[serde(default)]
    pub retry_days: String,
    #[serde(default)]
    pub fee_kind: String,
    #[serde(default)]
    pub fee: String,
    #[serde(default)]
    pub fee_after_days: String,
    #[serde(default)]
    pub fee_tax_rate_id: String,
}

/// The most characters a day list may be typed in (six two-digit days and their commas fit).
const DAY_LIST_CHARS: usize = 100;

/// `"3, 5 7"` → `[3, 5, 7]` (commas or spaces between whole numbers); `None` for anything else.
fn day_list(text: &str) -> Option<Vec<u32>> {
    if text.len() > DAY_LIST_CHARS {
        return None;
    }
    text.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|d| !d.is_empty())
        .map(|d| d.parse::<u32>().ok())
        .collect()
}

fn print_days(days: &[u32]) -> String {
    days.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl CollectionForm {
    /// The form filled with what is saved.
    pub fn of(days: &RetryDays, fees: &LateFees) -> CollectionForm {
        let (fee_kind, fee) = match fees.amount {
            LateFeeAmount::None => ("none", String::new()),
            LateFeeAmount::Fixed { amount_cents } => {
                ("fixed", crate::money::plain_amount(amount_cents, "EUR"))
            }
            LateFeeAmount::Percent { percent } => ("percent", percent.to_string()),
        };
        CollectionForm {
            retry_days: print_days(&days.0),
            fee_kind: fee_kind.to_owned(),
            fee,
            fee_after_days: print_days(&fees.after_days),
            fee_tax_rate_id: fees
                .tax_rate_id
                .map(|id| id.to_string())
                .unwrap_or_default(),
        }
    }

    /// The retry days and late fees typed, checked as the API checks them; errors by this form's
    /// field names. Whether the tax rate is one of the org's is for the caller to ask.
    pub fn parse(&self) -> Result<(RetryDays, LateFees), FieldErrors> {
        let mut errors = FieldErrors::new();
        let days = match day_list(&self.retry_days) {
            Some(d) => RetryDays(d),
            None => {
                let why = "Days as whole numbers separated by commas, e.g. 3, 5, 7.";
                errors.insert("retry_days".into(), why.into());
                RetryDays(Vec::new())
            }
        };
        if let Err(bad) = days.check() {
            errors.extend(bad);
        }
        let after_days = day_list(&self.fee_after_days).unwrap_or_else(|| {
            let why = "Days as whole numbers separated by commas, e.g. 15, 30.";
            errors.insert("fee_after_days".into(), why.into());
            Vec::new()
        });
        let amount = match self.fee_kind.trim() {
            "" | "none" => LateFeeAmount::None,
            "fixed" => match crate::money::parse_amount(&self.fee, "EUR") {
                Ok(amount_cents) => LateFeeAmount::Fixed { amount_cents },
                Err(why) => {
                    errors.insert("fee".into(), why);
                    LateFeeAmount::Fixed { amount_cents: 1 }
                }
            },
            "percent" => match Thousandths::parse(self.fee.trim_end_matches('%')) {
                Some(percent) => LateFeeAmount::Percent { percent },
                None => {
                    errors.insert("fee".into(), "A percent such as 1.5.".into());
                    LateFeeAmount::Percent {
                        percent: Thousandths(1),
                    }
                }
            },
            _ => {
                errors.insert(
                    "fee_kind".into(),
                    "No fee, a fixed fee or a percent.".into(),
                );
                LateFeeAmount::None
            }
        };
        let none = matches!(amount, LateFeeAmount::None);
        let tax_rate_id = match self.fee_tax_rate_id.trim() {
            "" => None,
            _ if none => None,
            id => match uuid::Uuid::try_parse(id) {
                Ok(id) => Some(id),
                Err(_) => {
                    errors.insert(
                        "fee_tax_rate_id".into(),
                        "Choose one of your tax rates.".into(),
                    );
                    None
                }
            },
        };
        let fees = LateFees {
            amount,
            // With no fee the steps typed are kept out: nothing to charge them with.
            after_days: if none { Vec::new() } else { after_days },
            tax_rate_id,
        };
        if let Err(bad) = fees.check() {
            for (field, why) in bad {
                let field = match field.as_str() {
                    "after_days" => "fee_after_days",
                    _ => "fee",
                };
                errors.entry(field.to_owned()).or_insert(why);
            }
        }
        if errors.is_empty() {
            Ok((days, fees))
        } else {
            Err(errors)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_settings_form_reads_what_the_api_stores_and_names_its_fields() {
        let form = |days: &str, kind: &str, fee: &str, after: &str| CollectionForm {
            retry_days: days.into(),
            fee_kind: kind.into(),
            fee: fee.into(),
            fee_after_days: after.into(),
            fee_tax_rate_id: String::new(),
        };
        let (days, fees) = form("2, 4 9", "fixed", "5.50", "7,14").parse().unwrap();
        assert_eq!(days, RetryDays(vec![2, 4, 9]));
        assert_eq!(fees.amount, LateFeeAmount::Fixed { amount_cents: 550 });
        assert_eq!(fees.after_days, vec![7, 14]);
        assert_eq!(CollectionForm::of(&days, &fees).parse(), Ok((days, fees)));
        let (_, fees) = form("", "percent", "1.5%", "30").parse().unwrap();
        assert_eq!(
            fees.amount,
            LateFeeAmount::Percent {
                percent: Thousandths(1500)
            }
        );
        let (none_days, none) = form("", "none", "", "7").parse().unwrap();
        assert_eq!((none_days.0, none), (Vec::new(), LateFees::default()));
        for (bad, field) in [
            (form("3, x", "none", "", ""), "retry_days"),
            (form("5, 3", "none", "", ""), "retry_days"),
            (form("", "fixed", "-1", "7"), "fee"),
            (form("", "fixed", "0", "7"), "fee"),
            (form("", "percent", "101", "7"), "fee"),
            (form("", "fixed", "5", ""), "fee_after_days"),
            (form("", "fixed", "5", "30, 7"), "fee_after_days"),
            (form("", "daily", "5", "7"), "fee_kind"),
            (form(&"1,".repeat(60), "none", "", ""), "retry_days"),
        ] {
            let errors = bad.parse().unwrap_err();
            assert!(errors.contains_key(field), "{bad:?}: {errors:?}");
        }
        let mut bad_rate = form("", "fixed", "5", "7");
        bad_rate.fee_tax_rate_id = "not-an-id".into();
        assert!(bad_rate
            .parse()
            .unwrap_err()
            .contains_key("fee_tax_rate_id"));
    }

    use super::*;

    #[test]
    fn collection_methods_read_and_write_their_words() {
        for m in [
            CollectionMethod::SendInvoice,
            CollectionMethod::ChargeAutomatically,
        ] {
            assert_eq!(CollectionMethod::parse(m.as_str()), Some(m));
            assert_eq!(serde_json::to_value(m).unwrap(), m.as_str());
        }
        assert_eq!(CollectionMethod::default(), CollectionMethod::SendInvoice);
        assert_eq!(CollectionMethod::parse("charge"), None);
    }

    /// Every order of every multiset of reports (each up to twice) ends in the same state: the
    /// highest reported.
    #[test]
    fn a_charge_attempt_ends_where_its_reports_say_in_any_order() {
        let all = [
            ChargeState::Processing,
            ChargeState::RequiresAction,
            ChargeState::Failed,
            ChargeState::Succeeded,
        ];
        fn permutations(items: &[ChargeState]) -> Vec<Vec<ChargeState>> {
            if items.len() <= 1 {
                return vec![items.to_vec()];
            }
            let mut out = Vec::new();
            for i in 0..items.len() {
                let mut rest = items.to_vec();
                let first = rest.remove(i);
                for mut p in permutations(&rest) {
                    p.insert(0, first);
                    out.push(p);
                }
            }
            out
        }
        // Each state absent, once or twice: 3^4 multisets.
        for mask in 0..81u32 {
            let mut reports = Vec::new();
            let mut m = mask;
            for state in all {
                for _ in 0..(m % 3) {
                    reports.push(state);
                }
                m /= 3;
            }
            let Some(&highest) = reports.iter().max() else {
                continue;
            };
            for order in permutations(&reports) {
                let merged = order[1..].iter().fold(order[0], |s, r| s.merge(*r));
                assert_eq!(merged, highest, "{order:?}");
            }
        }
        assert_eq!(
            ChargeState::of_event("payment_intent.requires_action"),
            Some(ChargeState::RequiresAction)
        );
        assert_eq!(ChargeState::of_event("payment_intent.created"), None);
        assert!(ChargeState::Failed.is_final() && !ChargeState::Processing.is_final());
    }

    #[test]
    fn retry_days_are_few_increasing_and_within_two_months() {
        assert!(RetryDays::default().check().is_ok());
        assert_eq!(RetryDays::default().day_of_attempt(1), Some(0));
        assert_eq!(RetryDays::default().day_of_attempt(2), Some(3));
        assert_eq!(RetryDays::default().day_of_attempt(4), Some(7));
        assert_eq!(RetryDays::default().day_of_attempt(5), None);
        assert!(RetryDays(vec![]).check().is_ok());
        for bad in [
            vec![3, 3],
            vec![5, 3],
            vec![0],
            vec![61],
            vec![1, 2, 3, 4, 5, 6, 7],
        ] {
            let errors = RetryDays(bad.clone()).check().unwrap_err();
            assert!(errors.contains_key("retry_days"), "{bad:?}");
        }
    }

    #[test]
    fn late_fees_are_checked_and_computed_in_minor_units() {
        let percent = |p: &str, days: Vec<u32>| LateFees {
            amount: LateFeeAmount::Percent {
                percent: Thousandths::parse(p).unwrap(),
            },
            after_days: days,
            tax_rate_id: None,
        };
        let fixed = LateFees {
            amount: LateFeeAmount::Fixed { amount_cents: 1500 },
            after_days: vec![7, 30],
            tax_rate_id: None,
        };
        assert!(fixed.check().is_ok());
        assert_eq!(fixed.fee_cents(10_000), 1500);
        assert_eq!(fixed.fee_cents(0), 0);
        // 1.5 % of 333.33 is 4.99995: rounded half up to 5.00.
        assert_eq!(percent("1.5", vec![10]).fee_cents(33_333), 500);
        // 2 % of 0.01 rounds to nothing.
        assert_eq!(percent("2", vec![10]).fee_cents(1), 0);
        assert_eq!(percent("12.345", vec![10]).fee_cents(1_000_000), 123_450);
        assert_eq!(LateFees::default().fee_cents(10_000), 0);
        assert_eq!(fixed.steps_due(6).count(), 0);
        assert_eq!(fixed.steps_due(7).collect::<Vec<_>>(), [0]);
        assert_eq!(fixed.steps_due(45).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(LateFees::default().steps_due(400).count(), 0);
        for (bad, field) in [
            (percent("0", vec![10]), "percent"),
            (percent("100.001", vec![10]), "percent"),
            (percent("2", vec![]), "after_days"),
            (percent("2", vec![10, 10]), "after_days"),
            (percent("2", vec![1, 2, 3, 4]), "after_days"),
            (percent("2", vec![366]), "after_days"),
            (
                LateFees {
                    amount: LateFeeAmount::Fixed { amount_cents: 0 },
                    after_days: vec![3],
                    tax_rate_id: None,
                },
                "amount_cents",
            ),
            (
                LateFees {
                    amount: LateFeeAmount::None,
                    after_days: vec![3],
                    tax_rate_id: None,
                },
                "after_days",
            ),
        ] {
            let errors = bad.check().unwrap_err();
            assert!(errors.contains_key(field), "{bad:?}: {errors:?}");
        }
        // As the contract writes it: {"kind": "percent", "percent": 1.5, "after_days": [14]}.
        let read: LateFees =
            serde_json::from_str(r#"{"kind": "percent", "percent": 1.5, "after_days": [14]}"#)
                .unwrap();
        assert_eq!(read, percent("1.5", vec![14]));
        let none: LateFees = serde_json::from_str(r#"{"kind": "none"}"#).unwrap();
        assert_eq!(none, LateFees::default());
    }
}
